"""Search latency per index from a real RediSearch's calls: the server's own LATENCY
HISTOGRAM and its slow log, as the service reads them, and the SLA events they drive
(docs/features/vector-search.md#search-latency)."""

import math
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.licensing import SigningKey
from tests.fixtures.receiver import Receiver
from tests.fixtures.search_module import emptied
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually
from tests.prometheus.test_catalogue import promtool_check
from tests.vector_search.test_indexes import add_documents, create_index, vector

FAST = {
    "NODE_ENV": "development",
    "VECTOR_INDEX_POLL_INTERVAL_MS": 200,
    "SLOWLOG_POLL_INTERVAL_MS": 200,
}
SECRET = "whsec-latency-0123456789abcdef"


@pytest.fixture(autouse=True)
def clean(search_server: RunningServer) -> None:
    emptied(search_server)
    with search_server.client() as conn:
        # Every call in the slow log, and room for all of them between two of its polls:
        # the slow-log figures can then be checked against every search made.
        conn.config_set("slowlog-log-slower-than", "0")
        conn.config_set("slowlog-max-len", "100000")
        conn.execute_command("SLOWLOG", "RESET")
        conn.execute_command("CONFIG", "RESETSTAT")  # the histogram starts from zero


@pytest.fixture
async def watching(
    memory_app_factory: AppFactory, search_server: RunningServer
) -> AsyncIterator[RunningApp]:
    create_index(search_server, "lat_idx", "l:")
    add_documents(search_server, "l:", 2_000)
    async with memory_app_factory(
        **FAST, DB_HOST=search_server.host, DB_PORT=search_server.port
    ) as app:
        await eventually(lambda: passed(app))
        yield app


async def latency(app: RunningApp) -> dict[str, Any]:
    response = await app.client.get("/api/vector-search/latency")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def passed(app: RunningApp) -> bool:
    return (await latency(app))["capturedAt"] is not None


def search_burst(server: RunningServer, count: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    with server.client(decode_responses=False) as conn:
        for _ in range(count):
            conn.execute_command(
                "FT.SEARCH", "lat_idx", "*=>[KNN 10 @v $q]", "PARAMS", "2", "q", vector(rng),
                "NOCONTENT", "DIALECT", "2",
            )  # fmt: skip


def bucket(body: dict[str, Any], name: str, source: str) -> dict[str, Any] | None:
    return next((b for b in body["buckets"] if b["bucket"] == name and b["source"] == source), None)


def server_histogram(server: RunningServer) -> dict[str, int]:
    """p50/p95/p99 as the server's own FT.SEARCH buckets give them: the upper bound of the
    bucket holding each rank (the counts are cumulative)."""
    with server.client(decode_responses=False) as conn:
        reply = conn.execute_command("LATENCY", "HISTOGRAM", "FT.SEARCH")
    fields = dict(zip(reply[1][::2], reply[1][1::2], strict=True))
    calls = fields[b"calls"]
    pairs = fields[b"histogram_usec"]
    buckets = list(zip(pairs[::2], pairs[1::2], strict=True))

    def at(q: float) -> int:
        rank = max(math.ceil(q * calls), 1)
        return int(next(bound for bound, count in buckets if count >= rank))

    return {"count": calls, "p50Us": at(0.5), "p95Us": at(0.95), "p99Us": at(0.99)}


def server_slow_log(server: RunningServer, index: str) -> dict[str, int]:
    """Nearest-rank p50/p95/p99 of the index's FT.SEARCH entries in the server's slow log."""
    with server.client(decode_responses=False) as conn:
        entries = conn.execute_command("SLOWLOG", "GET", "100000")
    durations = sorted(int(e[2]) for e in entries if e[3][:2] == [b"FT.SEARCH", index.encode()])

    def at(q: float) -> int:
        return durations[max(math.ceil(q * len(durations)), 1) - 1]

    return {"count": len(durations), "p50Us": at(0.5), "p95Us": at(0.95), "p99Us": at(0.99)}


class TestFigures:
    async def test_a_burst_of_searches_agrees_with_the_servers_histogram_and_slow_log(
        self, watching: RunningApp, search_server: RunningServer
    ):
        search_burst(search_server, 300)

        async def counted() -> bool:
            body = await latency(watching)
            histogram = bucket(body, "FT.SEARCH", "histogram")
            slow = bucket(body, "FT.SEARCH:lat_idx", "slowlog")
            return (
                histogram is not None
                and histogram["count"] == 300
                and slow is not None
                and slow["count"] == 300
            )

        await eventually(counted, within=15)
        body = await latency(watching)
        histogram = bucket(body, "FT.SEARCH", "histogram")
        assert histogram is not None
        assert {k: histogram[k] for k in ("count", "p50Us", "p95Us", "p99Us")} == (
            server_histogram(search_server)
        )
        assert histogram["index"] == "lat_idx"  # the server's only index: its own figures

        slow = bucket(body, "FT.SEARCH:lat_idx", "slowlog")
        assert slow is not None
        expected = server_slow_log(search_server, "lat_idx")
        assert slow["count"] == expected["count"]
        for key in ("p50Us", "p95Us", "p99Us"):
            assert abs(slow[key] - expected[key]) <= 0.1 * expected[key], (key, slow, expected)

        assert body["slowLog"] == "commandlog"  # Valkey 9.1 keeps it as COMMANDLOG's slow log
        assert body["slowLogThresholdUs"] == 0
        assert "slow tail" in body["advisory"]
        assert body["slas"] is None  # the SLA is Pro
        # The reads and writes beside the searches: the documents were written by HSET.
        assert bucket(body, "write", "slowlog") is not None

        trend = await watching.client.get(
            "/api/vector-search/latency/trend", params={"bucket": "FT.SEARCH:lat_idx"}
        )
        assert trend.status_code == 200, trend.text
        points = trend.json()["points"]
        assert sum(p["count"] for p in points) == 300  # every search, in its minute
        too_many: dict[str, str | int] = {"bucket": "read", "from": 0, "bucketMs": 1000}
        no_index: dict[str, str | int] = {"bucket": "FT.SEARCH"}
        for bad, field in ((no_index, "bucket"), (too_many, "bucketMs")):
            refused = await watching.client.get("/api/vector-search/latency/trend", params=bad)
            assert refused.status_code == 422, refused.text
            assert field in refused.json()["message"]

        text = (await watching.client.get("/api/prometheus/metrics")).text
        p99 = [
            line
            for line in text.splitlines()
            if line.startswith("svc_inference_bucket_p99_seconds{")
            and 'bucket="FT.SEARCH"' in line
            and 'source="histogram"' in line
        ]
        assert len(p99) == 1
        assert float(p99[0].rsplit(" ", 1)[1]) == pytest.approx(histogram["p99Us"] / 1e6)
        assert "svc_inference_unhealthy{" in text
        promtool_check(text)

    async def test_a_server_without_the_module_answers_501(
        self, memory_app_factory: AppFactory, valkey_server: RunningServer
    ):
        async with memory_app_factory(
            **FAST, DB_HOST=valkey_server.host, DB_PORT=valkey_server.port
        ) as app:
            response = await app.client.get("/api/vector-search/latency")
        assert response.status_code == 501, response.text


def breach_deliveries(receiver: Receiver, event: str) -> list[dict[str, Any]]:
    found = []
    for request in receiver.requests:
        if request.event == event:
            assert request.verified(SECRET)
            found.append(request.json["data"])
    return found


class TestSla:
    async def test_a_breach_is_announced_once_then_its_recovery(
        self,
        memory_app_factory: AppFactory,
        search_server: RunningServer,
        receiver: Receiver,
        signing_key: SigningKey,
    ):
        create_index(search_server, "sla_idx", "s:")
        add_documents(search_server, "s:", 500)
        events = ["vector_index.sla_breached", "vector_index.sla_recovered"]
        async with memory_app_factory(
            **FAST,
            DB_HOST=search_server.host,
            DB_PORT=search_server.port,
            SVC_OFFLINE_LICENSE=signing_key.mint(tier="pro"),
            SEARCH_LATENCY_WINDOW_MS=1_500,
            SEARCH_SLA_DEBOUNCE_MS=600,
        ) as app:
            hook = {"name": "sla", "url": receiver.url(), "events": events, "secret": SECRET}
            answer = await app.client.post("/api/webhooks", json=hook)
            assert answer.status_code == 201, answer.text
            # Any search is over a 1 µs p99.
            put = await app.client.put("/api/settings", json={"searchSlaP99Us": 1})
            assert put.status_code == 200, put.text
            await eventually(lambda: passed(app))
            with search_server.client() as conn:
                for _ in range(50):
                    conn.execute_command(
                        "FT.SEARCH", "sla_idx", "@title:document", "NOCONTENT", "LIMIT", "0", "5"
                    )

            async def breached() -> bool:
                return len(breach_deliveries(receiver, events[0])) == 1

            await eventually(breached, within=15)
            [breach] = breach_deliveries(receiver, events[0])
            assert breach["indexName"] == "sla_idx"
            assert breach["thresholdUs"] == 1
            assert breach["p99Us"] > 1
            assert breach["source"] == "histogram"
            assert breach["whileBackfilling"] is False
            status = (await latency(app))["slas"]
            assert status is not None
            assert status[0]["breached"] is True

            # No more searches: once the window has passed them by and the debounce has
            # held, the recovery is announced, once.
            async def recovered() -> bool:
                return len(breach_deliveries(receiver, events[1])) == 1

            await eventually(recovered, within=20)
            [recovery] = breach_deliveries(receiver, events[1])
            assert recovery["indexName"] == "sla_idx"
            assert recovery["breachedForMs"] >= 600
            assert len(breach_deliveries(receiver, events[0])) == 1
            text = (await app.client.get("/api/prometheus/metrics")).text
            assert "svc_inference_sla_breach{" in text
            line = next(
                line for line in text.splitlines() if line.startswith("svc_inference_sla_breach{")
            )
            assert line.endswith(" 0.0")
