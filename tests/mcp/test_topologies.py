"""The read tools on a replica pair and on a 3+3 cluster: replication state from both
sides, and the cluster tools (nodes, per-node stats, slot stats, merged slow log)."""

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.fixtures.mcp_service import Served, http_session, served_service, text_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.mcp.test_http import READ_TOOLS

pytestmark = pytest.mark.slow  # starts a replica pair and a six-node cluster


@pytest.fixture(scope="module")
def replica_pair(server_factory: ServerFactory) -> Iterator[tuple[RunningServer, RunningServer]]:
    primary = server_factory.start("valkey")
    replica = server_factory.start("valkey", replica_of=primary)
    yield primary, replica
    server_factory.stop(replica)
    server_factory.stop(primary)


@pytest.fixture(scope="module")
def cluster_3_3(server_factory: ServerFactory) -> Iterator[list[RunningServer]]:
    nodes = server_factory.cluster("valkey", masters=3, replicas_per_master=1)
    yield nodes
    for node in reversed(nodes):
        server_factory.stop(node)


@pytest.fixture(scope="module")
async def pair_service(
    replica_pair: tuple[RunningServer, RunningServer],
) -> AsyncIterator[Served]:
    primary, replica = replica_pair
    async with served_service(primary) as service:
        async with http_session(service.url, service.tokens["ada"]) as session:
            added = await session.call_tool(
                "add_connection", {"name": "replica", "host": replica.host, "port": replica.port}
            )
        assert not added.is_error, text_of(added)
        yield service


@pytest.fixture(scope="module")
async def cluster_service(cluster_3_3: list[RunningServer]) -> AsyncIterator[Served]:
    async with served_service(cluster_3_3[0]) as service:
        yield service


class TestReplicaPair:
    async def test_health_shows_both_sides_of_the_link(
        self, pair_service: Served, replica_pair: tuple[RunningServer, RunningServer]
    ):
        primary, _ = replica_pair
        async with http_session(pair_service.url, pair_service.tokens["mia"]) as session:
            upstream = text_of(await session.call_tool("health", {}))
            downstream = text_of(await session.call_tool("health", {"connection": "replica"}))
        assert "role: primary with 1 replica(s)" in upstream
        assert f"of «{primary.host}:{primary.port}», link up" in downstream

    async def test_every_read_tool_answers_on_the_replica(self, pair_service: Served):
        async with http_session(pair_service.url, pair_service.tokens["mia"]) as session:
            for name, (arguments, expected) in READ_TOOLS.items():
                result = await session.call_tool(name, {**arguments, "connection": "replica"})
                assert not result.is_error, (name, text_of(result))
                assert expected.replace("role: primary", "role: replica") in text_of(result), (
                    name,
                    text_of(result),
                )


class TestCluster:
    async def test_cluster_tools_describe_all_six_nodes(
        self, cluster_service: Served, cluster_3_3: list[RunningServer]
    ):
        async with http_session(cluster_service.url, cluster_service.tokens["mia"]) as session:
            nodes = text_of(await session.call_tool("cluster_nodes", {}))
            slots = await session.call_tool(
                "cluster_slot_stats", {"order_by": "key-count", "limit": 5}
            )
            # Per-node figures and the merged slow log need the nodes discovered by a poll.
            for _ in range(60):  # bounded: 30 s
                stats = await session.call_tool("cluster_node_stats", {})
                if not stats.is_error:
                    break
                await asyncio.sleep(0.5)
            slowlog = await session.call_tool("cluster_slowlog", {})
        assert "Cluster nodes (6):" in nodes
        for node in cluster_3_3:
            assert f"{node.port}" in nodes
        assert not slots.is_error, text_of(slots)
        assert "Slots by key-count" in text_of(slots)
        assert not stats.is_error, text_of(stats)
        assert "Per-node stats" in text_of(stats)
        assert not slowlog.is_error, text_of(slowlog)
        assert "Slow log of every node" in text_of(slowlog)

    async def test_every_read_tool_answers_on_a_cluster_node(self, cluster_service: Served):
        async with http_session(cluster_service.url, cluster_service.tokens["mia"]) as session:
            for name, (arguments, expected) in READ_TOOLS.items():
                result = await session.call_tool(name, arguments)
                assert not result.is_error, (name, text_of(result))
                assert expected in text_of(result), (name, text_of(result))
