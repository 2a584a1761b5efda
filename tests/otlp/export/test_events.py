"""Events as OTLP log records, from what real servers do to what a real OTLP/HTTP
receiver decodes (ExportLogsServiceRequest at /v1/logs)."""

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager as AsyncContextManager
from dataclasses import dataclass
from typing import Any

import pytest
import valkey
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from svc_monitor.event_types.access import AclModified
from svc_monitor.event_types.cluster import ClusterBusCorruption
from svc_monitor.otlp.export.events import EventExporter
from svc_monitor.otlp.export.stats import ExportStats
from svc_monitor.otlp.export.transport import OtlpTransport
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.otlp_receiver import LOGS, METRICS, OtlpAnswer, OtlpReceiver
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

FAST = {
    "ANOMALY_POLL_INTERVAL_MS": 100,  # the INFO poll
    "HISTORY_SAMPLE_INTERVAL_MS": 60_000,
    "OTEL_METRICS_EXPORT_INTERVAL_MS": 1000,
}


@dataclass(frozen=True)
class Logged:
    """One record as a backend would show it: resource, scope, record, attributes."""

    resource: dict[str, Any]
    scope: str
    record: LogRecord
    attributes: dict[str, Any]

    @property
    def event(self) -> str:
        return self.record.event_name


def _values(pairs: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        kind = pair.value.WhichOneof("value")
        found[pair.key] = getattr(pair.value, kind) if kind else None
    return found


def logged(receiver: OtlpReceiver, *, since: int = 0) -> list[Logged]:
    """Every record of the /v1/logs requests from the `since`-th on."""
    return [
        Logged(_values(rl.resource.attributes), sl.scope.name, record, _values(record.attributes))
        for request in receiver.log_requests()[since:]
        for rl in request.resource_logs
        for sl in rl.scope_logs
        for record in sl.log_records
    ]


def of(receiver: OtlpReceiver, event: str) -> list[Logged]:
    return [r for r in logged(receiver) if r.event == event]


async def arrived(receiver: OtlpReceiver, event: str, count: int = 1, within: float = 15) -> None:
    async def enough() -> bool:
        return len(of(receiver, event)) >= count

    await eventually(enough, within=within)


Exporting = Callable[..., AsyncContextManager[RunningApp]]


@pytest.fixture
def exporting(memory_app_factory: AppFactory, otlp_receiver: OtlpReceiver) -> Exporting:
    """An app watching `server` with its OTLP endpoint at the test's receiver."""

    @contextlib.asynccontextmanager
    async def start(server: RunningServer, **overrides: Any) -> AsyncIterator[RunningApp]:
        settings = {
            "DB_HOST": server.host,
            "DB_PORT": server.port,
            "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.base_url,
            **FAST,
            **overrides,
        }
        async with memory_app_factory(**settings) as app:
            yield app

    return start


async def until_polled(app: RunningApp) -> str:
    """The first INFO poll has read the server; the default connection's id."""

    async def polled() -> bool:
        return (await app.client.get("/api/metrics/info")).status_code == 200

    await eventually(polled)
    connection: str = (await app.client.get("/api/connections")).json()[0]["id"]
    return connection


class TestInstanceHealth:
    async def test_a_stopped_server_is_logged_down_then_up_when_it_returns(
        self,
        server_factory: ServerFactory,
        fresh: Callable[..., RunningServer],
        exporting: Exporting,
        otlp_receiver: OtlpReceiver,
    ):
        server = fresh("valkey")
        async with exporting(server) as app:
            connection = await until_polled(app)
            server_factory.stop(server)
            await arrived(otlp_receiver, "instance.down")
            server_factory.start_again(server)
            await arrived(otlp_receiver, "instance.up", within=30)
        [down] = of(otlp_receiver, "instance.down")
        [up] = of(otlp_receiver, "instance.up")
        assert [r.event for r in logged(otlp_receiver)] == ["instance.down", "instance.up"]
        for record in (down, up):
            assert record.scope == "svc-events"
            assert record.resource["service.name"] == "svc-monitor"
            assert record.attributes["event.name"] == record.event
            assert record.attributes["svc.connection.id"] == connection
            assert record.attributes["server.address"] == server.host
            assert record.attributes["server.port"] == server.port  # an int attribute
            assert record.record.observed_time_unix_nano >= record.record.time_unix_nano > 0
        assert (down.record.severity_number, down.record.severity_text) == (17, "ERROR")
        assert down.record.body.string_value  # the webhook payload's message
        assert down.attributes["svc.event.reason"]
        assert down.attributes["svc.event.detectedAt"].endswith("Z")
        assert "svc.event.message" not in down.attributes  # it is the body
        assert (up.record.severity_number, up.record.severity_text) == (9, "INFO")
        assert up.record.body.string_value.startswith("Instance is reachable again")
        assert up.record.time_unix_nano > down.record.time_unix_nano


class TestThresholds:
    async def test_memory_critical_is_logged_once_per_crossing(
        self, fresh: Callable[..., RunningServer], exporting: Exporting, otlp_receiver: OtlpReceiver
    ):
        server = fresh("valkey", config={"maxmemory": "3mb", "maxmemory-policy": "noeviction"})
        async with exporting(server) as app:
            await until_polled(app)
            with server.client() as conn:
                fill(conn)
                await arrived(otlp_receiver, "memory.critical")
                await asyncio.sleep(1.5)  # ~15 more polls above the threshold
                assert len(of(otlp_receiver, "memory.critical")) == 1
                conn.flushall()  # below 90% x 0.9: re-armed
                await asyncio.sleep(0.5)
                fill(conn)
                await arrived(otlp_receiver, "memory.critical", count=2)
        first, second = of(otlp_receiver, "memory.critical")
        assert (first.record.severity_number, first.record.severity_text) == (13, "WARN")
        assert first.attributes["svc.event.threshold"] == 90
        assert first.attributes["svc.event.value"] > 90  # a double
        assert first.attributes["svc.event.maxmemory"] == 3 * 1024 * 1024
        assert first.attributes["svc.event.metric"] == "memory_used_percent"
        assert "above 90%" in first.record.body.string_value
        assert second.record.time_unix_nano > first.record.time_unix_nano
        # noeviction: compliance.alert (threshold 80) crossed with it, graded by its payload.
        compliance = of(otlp_receiver, "compliance.alert")
        assert len(compliance) == 2
        assert compliance[0].attributes["svc.event.maxmemoryPolicy"] == "noeviction"
        assert compliance[0].record.severity_text in ("WARN", "ERROR")


def fill(conn: valkey.Valkey) -> None:
    with contextlib.suppress(valkey.exceptions.ResponseError):  # OOM: full
        for n in range(4000):
            conn.set(f"fill:{n}", "x" * 1000)


class TestSwitches:
    async def test_events_off_never_calls_logs_while_metrics_still_go(
        self,
        server_factory: ServerFactory,
        fresh: Callable[..., RunningServer],
        exporting: Exporting,
        otlp_receiver: OtlpReceiver,
    ):
        otlp_receiver.answer(LOGS, OtlpAnswer(status=404))  # a metrics-only collector
        server = fresh("valkey")
        async with exporting(server, OTEL_EVENTS_ENABLED="false") as app:
            await until_polled(app)
            server_factory.stop(server)  # an instance.down on the bus
            await otlp_receiver.wait_for(2, path=METRICS)
            await asyncio.sleep(1.5)  # past a logs flush interval
            scrape = (await app.client.get("/api/prometheus/metrics")).text
        assert app.services.event_exporter is None
        assert otlp_receiver.calls(LOGS) == 0
        assert 'signal="logs"' not in scrape

    async def test_telemetry_off_exports_no_events(
        self,
        server_factory: ServerFactory,
        fresh: Callable[..., RunningServer],
        exporting: Exporting,
        otlp_receiver: OtlpReceiver,
    ):
        server = fresh("valkey")
        async with exporting(server, OTEL_TELEMETRY_ENABLED="off") as app:
            await until_polled(app)
            server_factory.stop(server)
            await asyncio.sleep(1.5)
        assert app.services.event_exporter is None
        assert otlp_receiver.requests == []


def acl_modified(connection: str, n: int) -> AclModified:
    return AclModified(
        connection_id=connection,
        change_type="user_added",
        affected_user=f"user-{n}",
        modified_by="admin",
    )


class TestBatches:
    async def test_a_burst_leaves_in_batches_of_at_most_100(
        self, valkey_server: RunningServer, exporting: Exporting, otlp_receiver: OtlpReceiver
    ):
        async with exporting(valkey_server) as app:
            connection = await until_polled(app)
            for n in range(250):
                app.services.bus.publish(acl_modified(connection, n))
            await arrived(otlp_receiver, "acl.modified", count=250, within=5)
            scrape = (await app.client.get("/api/prometheus/metrics")).text
        # Only the burst's own records: the polls may log an event of their own meanwhile.
        sizes = [
            sum(
                1
                for rl in r.resource_logs
                for sl in rl.scope_logs
                for record in sl.log_records
                if record.event_name == "acl.modified"
            )
            for r in otlp_receiver.log_requests()
        ]
        assert max(sizes) == 100
        assert sum(sizes) == 250
        users = [r.attributes["svc.event.affectedUser"] for r in of(otlp_receiver, "acl.modified")]
        assert users == [f"user-{n}" for n in range(250)]  # in order, none twice
        assert 'svc_otlp_export_requests_total{outcome="success",signal="logs"}' in scrape

    async def test_records_wait_out_an_unavailable_collector_and_a_full_queue_sheds_the_oldest(
        self,
        valkey_server: RunningServer,
        memory_app_factory: AppFactory,
        otlp_receiver: OtlpReceiver,
    ):
        # Our own exporter on a running app's bus and registry, with a queue of 5.
        otlp_receiver.answer(LOGS, OtlpAnswer(status=503))
        async with memory_app_factory() as app:
            connection = await until_polled(app)
            transport = OtlpTransport(otlp_receiver.base_url)
            stats = ExportStats()
            exporter = EventExporter(
                app.services.bus,
                transport,
                stats,
                app.services.connections,
                flush_interval_s=0.1,
                max_queued=5,
            )
            task = asyncio.create_task(exporter.run())
            try:
                for n in range(8):
                    app.services.bus.publish(acl_modified(connection, n))
                await otlp_receiver.wait_for(2, path=LOGS)
                assert stats.failing("logs")
                assert (exporter.queued, exporter.dropped) == (5, 3)
                otlp_receiver.answer(LOGS, OtlpAnswer(status=200))
                refused = otlp_receiver.calls(LOGS)
                await otlp_receiver.wait_for(refused + 1, path=LOGS)
                await asyncio.sleep(0.3)  # nothing more to send
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                await transport.close()
        accepted = logged(otlp_receiver, since=refused)  # the queue, in one request
        users = [r.attributes["svc.event.affectedUser"] for r in accepted]
        assert users == [f"user-{n}" for n in range(3, 8)]
        assert not stats.failing("logs")
        assert exporter.queued == 0

    async def test_a_refused_batch_is_dropped_not_retried(
        self,
        valkey_server: RunningServer,
        memory_app_factory: AppFactory,
        otlp_receiver: OtlpReceiver,
    ):
        otlp_receiver.answer(LOGS, OtlpAnswer(status=400))
        async with memory_app_factory() as app:
            connection = await until_polled(app)
            transport = OtlpTransport(otlp_receiver.base_url)
            exporter = EventExporter(
                app.services.bus,
                transport,
                ExportStats(),
                app.services.connections,
                flush_interval_s=0.1,
            )
            task = asyncio.create_task(exporter.run())
            try:
                app.services.bus.publish(acl_modified(connection, 1))
                await otlp_receiver.wait_for(1, path=LOGS)
                await asyncio.sleep(0.5)  # several flush intervals
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                await transport.close()
        assert otlp_receiver.calls(LOGS) == 1
        assert (exporter.queued, exporter.dropped) == (0, 1)


class TestAttributes:
    async def test_maps_in_a_payload_are_json_text_and_numbers_stay_numbers(
        self, valkey_server: RunningServer, exporting: Exporting, otlp_receiver: OtlpReceiver
    ):
        async with exporting(valkey_server) as app:
            connection = await until_polled(app)
            crc = "cluster_stats_messages_crc_mismatch"
            app.services.bus.publish(
                ClusterBusCorruption(
                    connection_id=connection,
                    increases={crc: 2},
                    totals={crc: 5},
                    state="ok",
                    known_nodes=3,
                )
            )
            await arrived(otlp_receiver, "cluster.bus.corruption")
        [record] = of(otlp_receiver, "cluster.bus.corruption")
        assert json.loads(record.attributes["svc.event.increases"]) == {crc: 2}
        assert json.loads(record.attributes["svc.event.totals"]) == {crc: 5}
        assert record.attributes["svc.event.corruptMessages"] == 2
        assert record.attributes["svc.event.knownNodes"] == 3
        assert record.record.severity_text == "WARN"
        assert "2 corrupt messages" in record.record.body.string_value
