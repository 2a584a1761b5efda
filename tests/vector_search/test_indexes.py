"""Vector index health from real FT._LIST / FT.INFO polls: a Valkey 9.1 with RediSearch 2.10
loaded, and servers without a search engine."""

import math
import random
import struct
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.search_module import emptied
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually
from tests.prometheus.test_catalogue import promtool_check

FAST = {"VECTOR_INDEX_POLL_INTERVAL_MS": 200}
DIM = 8


def vector(rng: random.Random) -> bytes:
    return struct.pack(f"{DIM}f", *(rng.uniform(-1, 1) for _ in range(DIM)))


def create_index(server: RunningServer, name: str, prefix: str) -> None:
    with server.client() as conn:
        conn.execute_command(
            "FT.CREATE", name, "ON", "HASH", "PREFIX", "1", prefix, "SCHEMA",
            "title", "TEXT",
            "v", "VECTOR", "HNSW", "6", "TYPE", "FLOAT32", "DIM", str(DIM),
            "DISTANCE_METRIC", "COSINE",
        )  # fmt: skip


def add_documents(server: RunningServer, prefix: str, count: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with server.client() as conn:
        pipe = conn.pipeline(transaction=False)
        for i in range(count):
            pipe.hset(f"{prefix}{i}", mapping={"title": f"document {i}", "v": vector(rng)})
            if i % 1000 == 999:
                pipe.execute()
        pipe.execute()


def ft_info(server: RunningServer, name: str) -> dict[str, Any]:
    with server.client() as conn:
        reply = conn.execute_command("FT.INFO", name)
    return {
        k.decode() if isinstance(k, bytes) else k: v
        for k, v in zip(reply[::2], reply[1::2], strict=True)
    }


@pytest.fixture(autouse=True)
def clean(search_server: RunningServer) -> None:
    """Each test (and storage backend) starts from a server without indexes or keys."""
    emptied(search_server)


@pytest.fixture
async def polled(
    app_factory: AppFactory, search_server: RunningServer
) -> AsyncIterator[RunningApp]:
    async with app_factory(**FAST, DB_HOST=search_server.host, DB_PORT=search_server.port) as app:
        yield app


async def indexes(app: RunningApp) -> dict[str, Any]:
    response = await app.client.get("/api/vector-search/indexes")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def index_named(app: RunningApp, name: str) -> dict[str, Any] | None:
    return next((i for i in (await indexes(app))["indexes"] if i["name"] == name), None)


async def scrape(app: RunningApp) -> str:
    response = await app.client.get("/api/prometheus/metrics")
    assert response.status_code == 200
    return response.text


def sample(text: str, family: str, index: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(family + "{") and f'index="{index}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


class TestIndexHealth:
    async def test_an_hnsw_index_over_ten_thousand_documents_shows_its_health(
        self, polled: RunningApp, search_server: RunningServer
    ):
        # Documents first, then the index: the engine backfills them, as on a live server
        # that gains an index.
        add_documents(search_server, "doc:", 10_000)
        create_index(search_server, "docs_idx", "doc:")

        async def complete() -> bool:
            found = await index_named(polled, "docs_idx")
            return found is not None and found["docs"] == 10_000 and found["percentIndexed"] == 100

        await eventually(complete, within=30)
        body = await indexes(polled)
        assert body["module"]["name"] == "search"
        assert body["module"]["version"].isdigit()  # 21005 for 2.10.5
        assert body["pollIntervalMs"] == 200
        index = await index_named(polled, "docs_idx")
        assert index is not None
        server = ft_info(search_server, "docs_idx")
        assert index["docs"] == int(server["num_docs"]) == 10_000
        assert index["records"] == int(server["num_records"])
        assert index["indexing"] is False
        assert index["indexingFailures"] == 0
        # The HNSW graph of 10,000 8-dimensional vectors is most of the index's memory, and
        # the engine's own total leaves it out: both are counted.
        vector_mb = float(server["vector_index_sz_mb"])
        total_mb = float(server["total_index_memory_sz_mb"])
        assert vector_mb > total_mb > 0
        assert index["vectorMemoryBytes"] == round(vector_mb * 1024 * 1024)
        assert index["memoryBytes"] == round((vector_mb + total_mb) * 1024 * 1024)
        assert index["vectorFields"] == [
            {
                "name": "v",
                "algorithm": "HNSW",
                "dataType": "FLOAT32",
                "dimensions": DIM,
                "distanceMetric": "COSINE",
            }
        ]

        text = await scrape(polled)
        address = f'connection="{search_server.host}:{search_server.port}"'
        assert sample(text, "svc_vector_index_docs", "docs_idx") == 10_000
        assert sample(text, "svc_vector_index_percent_indexed", "docs_idx") == 100
        assert sample(text, "svc_vector_index_indexing_failures", "docs_idx") == 0
        memory = sample(text, "svc_vector_index_memory_bytes", "docs_idx")
        assert memory is not None
        assert math.isclose(memory, index["memoryBytes"])
        assert any(
            line.startswith("svc_vector_index_docs{") and address in line
            for line in text.splitlines()
        )
        promtool_check(text)

    async def test_documents_that_fail_to_index_are_counted_with_the_last_error(
        self, polled: RunningApp, search_server: RunningServer
    ):
        create_index(search_server, "failing_idx", "bad:")
        add_documents(search_server, "bad:", 20)
        with search_server.client() as conn:
            conn.hset("bad:short", mapping={"title": "too short", "v": b"\x00" * 3})
            conn.hset("bad:long", mapping={"title": "too long", "v": b"\x00" * (4 * DIM + 4)})

        async def failures_seen() -> bool:
            found = await index_named(polled, "failing_idx")
            return found is not None and found["indexingFailures"] == 2

        await eventually(failures_seen, within=15)
        index = await index_named(polled, "failing_idx")
        assert index is not None
        assert index["docs"] == 20  # the two refused documents are not in the index
        assert index["lastError"] is not None
        assert "blob size" in index["lastError"]
        assert (
            sample(await scrape(polled), "svc_vector_index_indexing_failures", "failing_idx") == 2
        )

    async def test_snapshots_are_kept_and_a_dropped_index_leaves_the_live_view(
        self, polled: RunningApp, search_server: RunningServer
    ):
        create_index(search_server, "short_lived", "tmp:")
        add_documents(search_server, "tmp:", 5)

        async def snapshots() -> list[dict[str, Any]]:
            response = await polled.client.get(
                "/api/vector-search/snapshots", params={"index": "short_lived"}
            )
            assert response.status_code == 200, response.text
            rows: list[dict[str, Any]] = response.json()
            return rows

        async def several() -> bool:
            return len([r for r in await snapshots() if r["docs"] == 5]) >= 2

        await eventually(several, within=15)
        rows = await snapshots()
        assert all(r["name"] == "short_lived" for r in rows)
        times = [r["capturedAt"] for r in rows]
        assert times == sorted(times)

        with search_server.client() as conn:
            conn.execute_command("FT.DROPINDEX", "short_lived")

        async def gone() -> bool:
            return await index_named(polled, "short_lived") is None

        await eventually(gone, within=15)
        assert sample(await scrape(polled), "svc_vector_index_docs", "short_lived") is None
        assert len(await snapshots()) >= len(rows)  # history outlives the index


class TestWithoutASearchEngine:
    async def test_a_server_without_one_answers_501_and_is_never_asked(
        self, app_factory: AppFactory, server_factory: ServerFactory
    ):
        plain = server_factory.start("valkey")
        try:
            async with app_factory(**FAST, DB_HOST=plain.host, DB_PORT=plain.port) as app:
                response = await app.client.get("/api/vector-search/indexes")
                assert response.status_code == 501, response.text
                assert "search" in response.json()["message"].lower()
                connection = (await app.client.get("/api/connections")).json()[0]
                health = await app.client.get(f"/api/connections/{connection['id']}")
                assert health.status_code == 200
                with plain.client() as conn:
                    stats = conn.info("commandstats")
                assert "cmdstat_FT.INFO" not in stats
                assert "svc_vector_index" not in await scrape(app)
        finally:
            server_factory.stop(plain)

    async def test_a_push_connection_gets_the_live_only_answer(self, app_factory: AppFactory):
        async with app_factory() as app:
            created = await app.client.post(
                "/api/connections",
                json={"source": "push", "name": "pushed", "host": "10.9.8.7", "port": 6390},
            )
            assert created.status_code == 201, created.text
            pushed = created.json()["id"]
            for route in ("indexes", "snapshots", "latency"):
                response = await app.client.get(
                    f"/api/vector-search/{route}", headers={"x-connection-id": pushed}
                )
                assert response.status_code == 409, response.text
                assert "needs a live connection" in response.json()["message"]
