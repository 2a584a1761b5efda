"""The Vector search page: each index's row as the poll read it, why there is none on a
server without a search engine, and the needs-live message for a push connection."""

import re

from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.search_module import emptied
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually
from tests.vector_search.test_indexes import add_documents, create_index


async def page(app: RunningApp) -> str:
    response = await app.client.get("/vector-search")
    assert response.status_code == 200, response.text
    return response.text


async def test_the_page_lists_each_index_with_its_health(
    memory_app_factory: AppFactory, search_server: RunningServer
):
    emptied(search_server)
    create_index(search_server, "page_idx", "pg:")
    add_documents(search_server, "pg:", 1234)
    with search_server.client() as conn:
        conn.hset("pg:bad", mapping={"title": "bad", "v": b"\x00" * 3})
    async with memory_app_factory(
        **target_of(search_server), VECTOR_INDEX_POLL_INTERVAL_MS=200
    ) as app:

        async def listed() -> bool:
            return 'data-index="page_idx"' in await page(app)

        await eventually(listed, within=15)
        html = await page(app)
    assert 'href="/vector-search"' in html  # in the navigation
    row = re.search(r'<tr data-index="page_idx">.*?</tr>', html, re.S)
    assert row is not None
    assert re.search(r'data-field="docs">1,234<', row.group(0))
    assert re.search(r'data-field="indexed">100.0 %<', row.group(0))
    assert re.search(r'data-field="failures">1<', row.group(0))
    assert "HNSW 8d FLOAT32 COSINE" in row.group(0)
    assert "blob size" in row.group(0)


async def test_without_a_search_engine_the_page_says_why(
    memory_app_factory: AppFactory, server_factory: ServerFactory
):
    plain = server_factory.start("valkey")
    try:
        async with memory_app_factory(**target_of(plain)) as app:
            html = await page(app)
    finally:
        server_factory.stop(plain)
    assert 'data-problem="unsupported"' in html
    assert "No search engine answers on this server" in html


async def test_a_push_connection_gets_the_needs_live_message(memory_app_factory: AppFactory):
    async with memory_app_factory() as app:
        made = await app.client.post(
            "/api/connections",
            json={"source": "push", "name": "edge", "host": "10.9.8.7", "port": 6390},
        )
        assert made.status_code == 201, made.text
        app.client.cookies.set(CONNECTION_COOKIE, made.json()["id"])
        html = await page(app)
    assert 'data-problem="needs-live-connection"' in html
    assert 'data-section="vector-indexes"' not in html


async def test_the_page_shows_search_latency_with_its_sources(
    memory_app_factory: AppFactory, search_server: RunningServer
):
    emptied(search_server)
    create_index(search_server, "lat_page_idx", "lp:")
    add_documents(search_server, "lp:", 200)
    async with memory_app_factory(
        **target_of(search_server), VECTOR_INDEX_POLL_INTERVAL_MS=200
    ) as app:

        async def read() -> bool:
            return "No search counted yet" in await page(app)

        await eventually(read, within=15)  # the first reading: the baseline
        with search_server.client() as conn:
            for _ in range(25):
                conn.execute_command("FT.SEARCH", "lat_page_idx", "@title:document", "NOCONTENT")

        async def shown() -> bool:
            return 'data-bucket="FT.SEARCH" data-source="histogram"' in await page(app)

        await eventually(shown, within=15)
        html = await page(app)
    section = re.search(r'data-section="search-latency".*?</section>', html, re.S)
    assert section is not None
    row = re.search(
        r'<tr data-bucket="FT.SEARCH" data-source="histogram">.*?</tr>', section.group(0), re.S
    )
    assert row is not None
    assert re.search(r'data-field="count">25<', row.group(0))
    assert "lat_page_idx</code>, the only index" in row.group(0)
    assert "the slow tail, not the workload" in section.group(0)
    assert 'data-state="sla-locked"' in section.group(0)  # community: the SLA is Pro
