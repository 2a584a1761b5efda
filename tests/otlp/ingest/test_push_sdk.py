"""A push connection fed by the real OpenTelemetry Python SDK, configured as a user would:
metrics endpoint `<service>/v1/external/metrics`, a bearer header, `redis.*` gauges and
sums, `server.address`/`server.port` resource attributes. Its dashboard, history,
Prometheus series and health follow the pushes; after the stale window it goes
disconnected with one `instance.down`, and the next push brings it back with `instance.up`.
"""

import asyncio
import math
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from svc_monitor.app import create_app
from tests.fixtures.app import make_settings, serve_app
from tests.fixtures.receiver import Receiver

TOKEN = "ingest-token-for-tests-0123456789"
STALE_AFTER_S = 60


@dataclass
class MovableClock:
    """The service's wall clock, moved forward by the test (staleness is minutes long)."""

    offset_s: float = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset_s


@dataclass
class Instance:
    """What the pretend instance reports on the next collection."""

    values: dict[str, float] = field(
        default_factory=lambda: {
            "redis.memory.used": 1_048_576,
            "redis.clients.connected": 7,
            "redis.commands.processed": 1000,
        }
    )

    def gauge(self, name: str) -> Any:
        def read(_: CallbackOptions) -> Iterable[Observation]:
            return [Observation(int(self.values[name]))]

        return read


class SdkPusher:
    """An SDK MeterProvider whose reader exports only when told (force_flush)."""

    def __init__(self, endpoint: str, instance: Instance, *, port: str = "6390") -> None:
        exporter = OTLPMetricExporter(
            endpoint=endpoint, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
        )
        self._reader = PeriodicExportingMetricReader(exporter, export_interval_millis=math.inf)
        resource = Resource.create({"server.address": "10.1.2.3", "server.port": port})
        self._provider = MeterProvider(resource=resource, metric_readers=[self._reader])
        meter = self._provider.get_meter("redisreceiver-lookalike")
        meter.create_observable_gauge(
            "redis.memory.used", callbacks=[instance.gauge("redis.memory.used")], unit="By"
        )
        meter.create_observable_gauge(
            "redis.clients.connected", callbacks=[instance.gauge("redis.clients.connected")]
        )
        meter.create_observable_counter(
            "redis.commands.processed", callbacks=[instance.gauge("redis.commands.processed")]
        )

    async def push(self) -> None:
        # The SDK's exporter is synchronous (requests): off the loop the service runs on.
        assert await asyncio.to_thread(self._provider.force_flush, 10_000)

    def close(self) -> None:
        self._provider.shutdown()


@dataclass
class Served:
    base: str
    client: httpx.AsyncClient
    clock: MovableClock


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    clock = MovableClock()
    settings = make_settings(
        NODE_ENV="development",  # webhooks to http://127.0.0.1
        OTEL_INGEST_TOKEN=TOKEN,
        OTEL_METRICS_STALE_AFTER_MS=STALE_AFTER_S * 1000,
        DB_HOST="127.0.0.1",
        DB_PORT=9,  # nothing listens: only the push connection matters here
    )
    async with (
        serve_app(create_app(settings, clock=clock)) as base,
        httpx.AsyncClient(base_url=base, timeout=30) as client,
    ):
        yield Served(base, client, clock)


async def test_the_sdk_drives_a_push_connection_through_its_whole_life(
    served: Served, receiver: Receiver
) -> None:
    client = served.client
    made = await client.post(
        "/api/connections",
        json={"source": "push", "name": "edge cache", "host": "10.1.2.3", "port": 6390},
    )
    assert made.status_code == 201, made.text
    connection = made.json()
    assert connection["source"] == "push"
    scoped = {"X-Connection-Id": connection["id"]}
    hook = await client.post(
        "/api/webhooks",
        json={"name": "ops", "url": receiver.url(), "events": ["instance.down", "instance.up"]},
    )
    assert hook.status_code == 201, hook.text

    # Registered, nothing pushed since start: disconnected, no event.
    listed = (await client.get(f"/api/connections/{connection['id']}")).json()
    assert listed["engine"]["status"] == "disconnected"

    instance = Instance()
    pusher = SdkPusher(f"{served.base}/v1/external/metrics", instance)
    try:
        await pusher.push()
        listed = (await client.get(f"/api/connections/{connection['id']}")).json()
        assert listed["engine"]["status"] == "connected"
        assert listed["lastPushAt"] is not None

        # The dashboard's INFO: what was pushed, nothing else (no 0 for unpushed fields).
        info = (await client.get("/api/metrics/info", headers=scoped)).json()["sections"]
        assert info["memory"] == {"used_memory": 1_048_576}
        assert info["clients"] == {"connected_clients": 7}
        assert info["stats"] == {"total_commands_processed": 1000}

        # History: a memory snapshot with null for what was not pushed, 0 for the fallbacks.
        snapshots = (await client.get("/api/memory-analytics/snapshots", headers=scoped)).json()
        assert snapshots[-1]["usedMemory"] == 1_048_576
        assert snapshots[-1]["usedMemoryRss"] is None
        assert snapshots[-1]["memFragmentationRatio"] is None
        assert snapshots[-1]["maxmemory"] == 0
        assert snapshots[-1]["opsPerSec"] == 0
        history = (await client.get("/api/metrics/history", headers=scoped)).json()
        assert any(p["connectedClients"] == 7 for p in history["points"])

        # Prometheus: series for the pushed fields only.
        scrape = (await client.get("/api/prometheus/metrics")).text
        mine = [line for line in scrape.splitlines() if 'connection="10.1.2.3:6390"' in line]
        assert 'svc_memory_used_bytes{connection="10.1.2.3:6390"} 1048576.0' in mine
        assert 'svc_connected_clients{connection="10.1.2.3:6390"} 7.0' in mine
        assert not any(line.startswith("svc_memory_used_rss_bytes") for line in mine)
        assert not any(line.startswith("svc_poll_stale") for line in mine)

        # A live-only view says why it cannot answer.
        slowlog = await client.get("/api/metrics/slowlog", headers=scoped)
        assert slowlog.status_code == 409
        assert "needs a live connection" in slowlog.json()["message"]

        # The next push moves what the dashboard shows.
        instance.values["redis.memory.used"] = 2_097_152
        await pusher.push()
        info = (await client.get("/api/metrics/info", headers=scoped)).json()["sections"]
        assert info["memory"] == {"used_memory": 2_097_152}

        # No push for longer than the stale window: disconnected, instance.down once.
        served.clock.offset_s = STALE_AFTER_S + 5
        await receiver.wait_for(1, within=15)
        assert [r.json["event"] for r in receiver.requests] == ["instance.down"]
        listed = (await client.get(f"/api/connections/{connection['id']}")).json()
        assert listed["engine"]["status"] == "disconnected"
        assert (await client.get("/api/metrics/info", headers=scoped)).status_code == 503
        scrape = (await client.get("/api/prometheus/metrics")).text
        assert 'connection="10.1.2.3:6390"' not in scrape
        await asyncio.sleep(2.5)  # more sweeps: still one event
        assert len(receiver.requests) == 1

        # The next push brings it back, with instance.up; history was kept.
        await pusher.push()
        await receiver.wait_for(2, within=15)
        assert [r.json["event"] for r in receiver.requests] == ["instance.down", "instance.up"]
        listed = (await client.get(f"/api/connections/{connection['id']}")).json()
        assert listed["engine"]["status"] == "connected"
        snapshots = (
            await client.get(
                "/api/memory-analytics/snapshots",
                headers=scoped,
                params={"to": int(served.clock() * 1000) + 1000},
            )
        ).json()
        assert [s["usedMemory"] for s in snapshots][:1] == [1_048_576]
    finally:
        pusher.close()


async def test_without_the_token_the_sdk_is_refused_and_nothing_is_recorded(
    served: Served,
) -> None:
    client = served.client
    made = await client.post(
        "/api/connections", json={"source": "push", "host": "10.1.2.3", "port": 6391}
    )
    assert made.status_code == 201
    exporter = OTLPMetricExporter(endpoint=f"{served.base}/v1/external/metrics", timeout=5)
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=math.inf)
    resource = Resource.create({"server.address": "10.1.2.3", "server.port": "6391"})
    provider = MeterProvider(resource=resource, metric_readers=[reader])
    provider.get_meter("x").create_observable_gauge(
        "redis.memory.used", callbacks=[lambda _: [Observation(5)]]
    )
    try:
        # force_flush reports the collection, not the 401 (which the SDK logs).
        await asyncio.to_thread(provider.force_flush, 10_000)
    finally:
        provider.shutdown()
    listed = (await client.get(f"/api/connections/{made.json()['id']}")).json()
    assert listed["engine"]["status"] == "disconnected"
    assert listed["lastPushAt"] is None


async def test_the_sdk_configured_with_only_the_standard_variables_exports_with_no_failure(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the OpenTelemetry documentation sets a service up: the base endpoint and the
    header in the environment, nothing in code. The SDK posts metrics to `<base>/v1/metrics`
    and spans to `<base>/v1/traces`, gzip-compressed here as a Collector would."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics.export import MetricExportResult
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

    client = served.client
    made = await client.post(
        "/api/connections", json={"source": "push", "host": "10.1.2.3", "port": 6392}
    )
    assert made.status_code == 201, made.text
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", served.base)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{TOKEN}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")

    results: list[MetricExportResult] = []

    class Recording(OTLPMetricExporter):
        def export(self, *args: Any, **kwargs: Any) -> MetricExportResult:
            result = super().export(*args, **kwargs)
            results.append(result)
            return result

    reader = PeriodicExportingMetricReader(Recording(), export_interval_millis=math.inf)
    resource = Resource.create({"server.address": "10.1.2.3", "server.port": "6392"})
    provider = MeterProvider(resource=resource, metric_readers=[reader])
    provider.get_meter("x").create_observable_gauge(
        "redis.memory.used", callbacks=[lambda _: [Observation(4096)]]
    )
    spans: list[SpanExportResult] = []

    class RecordingSpans(OTLPSpanExporter):
        def export(self, batch: Any) -> SpanExportResult:
            result = super().export(batch)
            spans.append(result)
            return result

    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "checkout"}))
    tracer_provider.add_span_processor(SimpleSpanProcessor(RecordingSpans()))
    try:
        assert await asyncio.to_thread(provider.force_flush, 10_000)

        def one_span() -> None:  # exported as it ends, synchronously: off the served loop
            with tracer_provider.get_tracer("@svc/checkout").start_as_current_span("GET /cart"):
                pass

        await asyncio.to_thread(one_span)
    finally:
        provider.shutdown()
        tracer_provider.shutdown()
    assert results == [MetricExportResult.SUCCESS]
    assert spans == [SpanExportResult.SUCCESS]
    listed = (await client.get(f"/api/connections/{made.json()['id']}")).json()
    assert listed["engine"]["status"] == "connected"
    page = await client.get("/", headers={"X-Connection-Id": made.json()["id"]})
    assert page.status_code == 200
