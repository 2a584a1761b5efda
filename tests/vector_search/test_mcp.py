"""The vector_indexes MCP tool over streamable HTTP, as a member's assistant calls it,
against a real RediSearch."""

from collections.abc import AsyncIterator

import pytest

from tests.fixtures.mcp_service import Served, http_session, served_service, text_of
from tests.fixtures.search_module import emptied
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually
from tests.vector_search.test_indexes import add_documents, create_index


@pytest.fixture
async def served(search_server: RunningServer) -> AsyncIterator[Served]:
    emptied(search_server)
    create_index(search_server, "mcp_idx", "m:")
    add_documents(search_server, "m:", 300)
    async with served_service(search_server, VECTOR_INDEX_POLL_INTERVAL_MS=200) as service:
        yield service


async def test_a_members_assistant_reads_the_index_health(served: Served):
    async with http_session(served.url, served.tokens["mia"]) as session:

        async def listed() -> bool:
            result = await session.call_tool("vector_indexes", {})
            return not result.is_error and "«mcp_idx»: 300 docs" in text_of(result)

        await eventually(listed, within=15)
        text = text_of(await session.call_tool("vector_indexes", {}))
    # The server's words are marked as data, never instructions.
    assert "engine «search» «" in text  # and its version, as MODULE LIST gives it
    assert "100.0 % indexed, 0 indexing failures" in text
    assert "vectors: «v» «HNSW» 8d «COSINE»" in text


async def test_a_members_assistant_reads_search_latency_with_its_sources(
    served: Served, search_server: RunningServer
):
    async with http_session(served.url, served.tokens["mia"]) as session:

        async def read() -> bool:
            result = await session.call_tool("search_latency", {})
            text = text_of(result)
            # Read once (not "read unknown"), with nothing counted: the baseline is taken.
            return not result.is_error and "read unknown" not in text and "no search" in text

        await eventually(read, within=15)  # the first reading: the baseline
        with search_server.client() as conn:
            for _ in range(40):
                conn.execute_command("FT.SEARCH", "mcp_idx", "@title:document", "NOCONTENT")

        async def counted() -> bool:
            result = await session.call_tool("search_latency", {})
            return not result.is_error and "«FT.SEARCH» (histogram, every call)" in text_of(result)

        await eventually(counted, within=15)
        text = text_of(await session.call_tool("search_latency", {}))
    assert "over 40 calls" in text
    assert "slow tail" in text  # the advisory comes with the figures
