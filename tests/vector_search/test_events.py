"""The vector index events, from what a real RediSearch does to a signed webhook a real
receiver gets (docs/features/vector-search.md#events)."""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.receiver import Receiver
from tests.fixtures.search_module import emptied
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually
from tests.vector_search.test_indexes import DIM, add_documents, create_index

SECRET = "whsec-vector-0123456789abcdef"
FAST = {"NODE_ENV": "development", "VECTOR_INDEX_POLL_INTERVAL_MS": 200}


@pytest.fixture(autouse=True)
def clean(search_server: RunningServer) -> None:
    emptied(search_server)


@contextlib.asynccontextmanager
async def watching(
    factory: AppFactory, server: RunningServer, receiver: Receiver, events: list[str], **more: Any
) -> AsyncIterator[RunningApp]:
    async with factory(DB_HOST=server.host, DB_PORT=server.port, **FAST, **more) as app:
        hook = {"name": "vector", "url": receiver.url(), "events": events, "secret": SECRET}
        answer = await app.client.post("/api/webhooks", json=hook)
        assert answer.status_code == 201, answer.text

        # The connection's first poll has happened: what it found is the baseline.
        async def polled() -> bool:
            body = (await app.client.get("/api/vector-search/indexes")).json()
            return body["capturedAt"] is not None

        await eventually(polled)
        yield app


def deliveries(receiver: Receiver, event: str) -> list[dict[str, Any]]:
    found = []
    for request in receiver.requests:
        if request.event == event:
            assert request.verified(SECRET)
            found.append(request.json)
    return found


class TestIndexingFailed:
    async def test_each_rise_of_failures_is_delivered_once(
        self, memory_app_factory: AppFactory, search_server: RunningServer, receiver: Receiver
    ):
        event = "vector_index.indexing_failed"
        async with watching(memory_app_factory, search_server, receiver, [event]):
            create_index(search_server, "fail_idx", "f:")
            add_documents(search_server, "f:", 10)
            with search_server.client() as conn:
                conn.hset("f:short", mapping={"title": "x", "v": b"\x00" * 3})
                conn.hset("f:long", mapping={"title": "y", "v": b"\x00" * (4 * DIM + 8)})

            async def first() -> bool:
                return len(deliveries(receiver, event)) == 1

            await eventually(first, within=15)
            [payload] = deliveries(receiver, event)
            assert payload["data"]["indexName"] == "fail_idx"
            assert payload["data"]["newFailures"] == 2
            assert payload["data"]["totalFailures"] == 2
            assert "blob size" in payload["data"]["lastError"]

            await asyncio.sleep(1.0)  # five more polls of the same two failures
            assert len(deliveries(receiver, event)) == 1

            with search_server.client() as conn:
                conn.hset("f:again", mapping={"title": "z", "v": b"\x00" * 5})

            async def second() -> bool:
                return len(deliveries(receiver, event)) == 2

            await eventually(second, within=15)
            later = deliveries(receiver, event)[1]["data"]
            assert (later["newFailures"], later["totalFailures"]) == (1, 3)

    async def test_failures_there_before_watching_are_not_news(
        self, memory_app_factory: AppFactory, search_server: RunningServer, receiver: Receiver
    ):
        event = "vector_index.indexing_failed"
        create_index(search_server, "old_idx", "o:")
        with search_server.client() as conn:
            conn.hset("o:bad", mapping={"title": "x", "v": b"\x00" * 3})
        async with watching(memory_app_factory, search_server, receiver, [event]) as app:
            await asyncio.sleep(1.0)
            body = (await app.client.get("/api/vector-search/indexes")).json()
            assert body["indexes"][0]["indexingFailures"] == 1
            assert deliveries(receiver, event) == []


class TestBackfillStalled:
    async def test_an_index_below_100_percent_for_too_long_is_delivered_once(
        self, memory_app_factory: AppFactory, search_server: RunningServer, receiver: Receiver
    ):
        event = "vector_index.backfill_stalled"
        add_documents(search_server, "big:", 20_000)  # about 5 s of backfill here
        async with watching(
            memory_app_factory, search_server, receiver, [event], VECTOR_BACKFILL_ALERT_MS=400
        ) as app:
            create_index(search_server, "big_idx", "big:")

            async def stalled() -> bool:
                return len(deliveries(receiver, event)) >= 1

            await eventually(stalled, within=30)
            [payload] = deliveries(receiver, event)
            data = payload["data"]
            assert data["indexName"] == "big_idx"
            assert data["percentIndexed"] < 100
            assert data["belowForMs"] >= data["alertAfterMs"] == 400

            async def complete() -> bool:
                body = (await app.client.get("/api/vector-search/indexes")).json()
                return bool(body["indexes"]) and body["indexes"][0]["percentIndexed"] == 100

            await eventually(complete, within=60)
            assert len(deliveries(receiver, event)) == 1
