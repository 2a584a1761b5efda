"""The OTLP metrics export against a real OTLP/HTTP receiver on 127.0.0.1, with a
standalone Valkey 9.1, a Valkey cluster node and a Redis 7 connected.

What a collector's operator would check: one resource in mode mirror and one per node in
mode semconv, the names, units, attributes and shapes of docs/features/otlp-export.md, pushes on
schedule even when the collector hangs, nothing sent when export is off, and the
exporter's own counters in the scrape.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality, Metric
from prometheus_client.parser import text_string_to_metric_families

from svc_monitor.otlp.export.semconv_names import Conversion, lookup
from tests.fixtures.app import RunningApp, make_settings, running_app, target_of
from tests.fixtures.otlp_receiver import METRICS, OtlpAnswer, OtlpReceiver
from tests.fixtures.servers import RunningServer, ServerFactory

SCRAPE = "/api/prometheus/metrics"
CUMULATIVE = AggregationTemporality.Value("AGGREGATION_TEMPORALITY_CUMULATIVE")
FAST_POLLS = {
    "SLOWLOG_POLL_INTERVAL_MS": 300,
    "COMMANDSTATS_POLL_INTERVAL_MS": 300,
    "AUDIT_POLL_INTERVAL_MS": 300,
    "CLIENT_ANALYTICS_POLL_INTERVAL_MS": 300,
}
# Families about svc-monitor itself, not about a connection: no `connection` attribute.
OWN_PREFIXES = (
    "svc_process_",
    "svc_python_gc_",
    "svc_otlp_export_",
    "svc_cve_dataset_",
    "svc_replica_",
)


@dataclass
class Fleet:
    valkey: RunningServer
    cluster_node: RunningServer
    redis: RunningServer

    @property
    def addresses(self) -> dict[str, str]:
        """host:port -> engine."""
        return {
            address(self.valkey): "valkey",
            address(self.cluster_node): "valkey",
            address(self.redis): "redis",
        }


def address(server: RunningServer) -> str:
    return f"{server.host}:{server.port}"


@pytest.fixture(scope="module")
def fleet(
    server_factory: ServerFactory, valkey_server: RunningServer, redis7_server: RunningServer
) -> Iterator[Fleet]:
    [node] = server_factory.cluster("valkey", masters=1)
    with valkey_server.client() as conn:
        for i in range(10):
            conn.set(f"otlp:{i}", "v", ex=600)  # db0 has keys with a TTL
    with redis7_server.client() as conn:
        conn.set("otlp", "v")
    yield Fleet(valkey_server, node, redis7_server)
    server_factory.stop(node)


@contextlib.asynccontextmanager
async def exporting_app(
    fleet: Fleet, receiver: OtlpReceiver, **overrides: Any
) -> AsyncIterator[RunningApp]:
    settings = make_settings(
        **{
            **target_of(fleet.valkey),
            **FAST_POLLS,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base_url,
            "OTEL_METRICS_EXPORT_INTERVAL_MS": 1000,
            "OTEL_EVENTS_ENABLED": False,
            **overrides,
        }
    )
    async with running_app(settings) as running:
        for name, server in (("cluster", fleet.cluster_node), ("redis", fleet.redis)):
            response = await running.client.post(
                "/api/connections", json={"name": name, "host": server.host, "port": server.port}
            )
            assert response.status_code == 201, response.text
        yield running


# --- reading what arrived ---


def resource_of(request: ExportMetricsServiceRequest) -> dict[str, object]:
    [resource_metrics] = request.resource_metrics
    return {
        a.key: getattr(a.value, a.value.WhichOneof("value") or "string_value")
        for a in resource_metrics.resource.attributes
    }


def metrics_of(request: ExportMetricsServiceRequest) -> dict[str, Metric]:
    [resource_metrics] = request.resource_metrics
    [scope] = resource_metrics.scope_metrics
    assert scope.scope.name == "svc-monitor"
    return {m.name: m for m in scope.metrics}


def points(metric: Metric) -> list[Any]:
    data = metric.WhichOneof("data")
    assert data is not None
    return list(getattr(metric, data).data_points)


def attributes(point: Any) -> dict[str, object]:
    return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in point.attributes}


def resource_key(request: ExportMetricsServiceRequest) -> str:
    resource = resource_of(request)
    return str(resource.get("service.instance.id", resource["service.name"]))


def latest_by_resource(receiver: OtlpReceiver) -> dict[str, ExportMetricsServiceRequest]:
    latest: dict[str, ExportMetricsServiceRequest] = {}
    for request in receiver.metric_requests():
        latest[resource_key(request)] = request
    return latest


async def until_pushed(
    receiver: OtlpReceiver,
    ready: Callable[[dict[str, ExportMetricsServiceRequest]], bool],
    what: str,
    *,
    within: float = 30,
) -> dict[str, ExportMetricsServiceRequest]:
    """The latest request per resource, once `ready` holds for them (bounded)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        latest = latest_by_resource(receiver)
        if latest and ready(latest):
            return latest
        with contextlib.suppress(TimeoutError):
            await receiver.wait_for(receiver.calls(METRICS) + 1, within=2)
    raise AssertionError(f"{what} not pushed within {within:g} s; got {sorted(latest)}")


async def scrape(running: RunningApp) -> dict[str, str]:
    """Sample name -> family type, of one scrape."""
    response = await running.client.get(SCRAPE)
    assert response.status_code == 200
    return {
        sample.name: family.type
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def scrape_value(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def fleet_observed(fleet: Fleet) -> Callable[[dict[str, ExportMetricsServiceRequest]], bool]:
    """Mode mirror: the push has every connection's memory and commandstats."""

    def ready(latest: dict[str, ExportMetricsServiceRequest]) -> bool:
        request = latest.get("svc-monitor")
        if request is None:
            return False
        metrics = metrics_of(request)
        memory = metrics.get("svc_memory_used_bytes")
        calls = metrics.get("svc_commandstats_calls_total")
        if memory is None or calls is None:
            return False
        seen = {attributes(p).get("connection") for p in points(memory)}
        called = {attributes(p).get("connection") for p in points(calls)}
        return set(fleet.addresses) <= seen and address(fleet.redis) in called

    return ready


class TestMirrorMode:
    async def test_one_resource_with_the_scrape_names_and_a_connection_on_every_point(
        self, fleet: Fleet, otlp_receiver: OtlpReceiver
    ):
        async with exporting_app(fleet, otlp_receiver) as running:
            latest = await until_pushed(otlp_receiver, fleet_observed(fleet), "every connection")
            assert list(latest) == ["svc-monitor"]
            [request] = latest.values()
            assert len(request.resource_metrics) == 1
            assert resource_of(request) == {"service.name": "svc-monitor"}
            metrics = metrics_of(request)
            for name, metric in metrics.items():
                assert metric.WhichOneof("data") in ("gauge", "sum"), name
                if not name.startswith(OWN_PREFIXES):
                    for point in points(metric):
                        assert "connection" in attributes(point), name
            # exactly the scrape's families, histograms left out
            for _ in range(5):  # a family may join between a push and the next scrape
                scraped = await scrape(running)
                expected = {
                    name for name, kind in scraped.items() if kind not in ("histogram", "summary")
                }
                pushed = set(metrics_of(latest_by_resource(otlp_receiver)["svc-monitor"]))
                if pushed == expected:
                    break
                await otlp_receiver.wait_for(otlp_receiver.calls(METRICS) + 1)
            assert pushed == expected
            assert not any(name.startswith("svc_poll_duration") for name in pushed)

            commands = metrics["svc_commands_processed_total"]
            assert commands.sum.is_monotonic
            assert commands.sum.aggregation_temporality == CUMULATIVE
            for point in points(commands):
                assert 0 < point.start_time_unix_nano <= point.time_unix_nano
                assert point.WhichOneof("value") == "as_int"
            assert metrics["svc_memory_used_bytes"].unit == "By"
            assert metrics["svc_cpu_user_seconds_total"].unit == "s"
            assert metrics["svc_memory_used_bytes"].WhichOneof("data") == "gauge"

    async def test_sent_as_gzip_protobuf_with_our_user_agent(
        self, fleet: Fleet, otlp_receiver: OtlpReceiver
    ):
        async with exporting_app(fleet, otlp_receiver):
            [first] = await otlp_receiver.wait_for(1, within=10)
        assert first.headers["Content-Type"] == "application/x-protobuf"
        assert first.headers["Content-Encoding"] == "gzip"
        assert first.headers["User-Agent"] == "Svc-Monitor/1.0"
        assert otlp_receiver.decode_errors == []


class TestSemconvMode:
    async def test_one_resource_per_node_with_the_specs_names(
        self, fleet: Fleet, otlp_receiver: OtlpReceiver
    ):
        wanted = set(fleet.addresses) | {"svc-monitor"}

        def ready(latest: dict[str, ExportMetricsServiceRequest]) -> bool:
            if set(latest) != wanted:
                return False
            redis = metrics_of(latest[address(fleet.redis)])
            valkey = metrics_of(latest[address(fleet.valkey)])
            node = metrics_of(latest[address(fleet.cluster_node)])
            # Built after an export had finished, as the scrape below is: the exporter's
            # own figures (its last duration) exist only from then on.
            monitor = metrics_of(latest["svc-monitor"])
            return (
                "redis.cmd.calls" in redis
                and "svc.client.connections" in valkey
                and "valkey.cluster.known_nodes" in node
                and "svc_otlp_export_last_duration_seconds" in monitor
            )

        async with exporting_app(
            fleet, otlp_receiver, OTEL_METRICS_EXPORT_MODE="semconv"
        ) as running:
            latest = await until_pushed(otlp_receiver, ready, "every node's resource")
            scraped = await scrape(running)

        for key, engine in fleet.addresses.items():
            host, port = key.rsplit(":", 1)
            resource = resource_of(latest[key])
            version = resource.pop(f"{engine}.version")
            assert str(version)[0].isdigit()
            assert resource == {
                "service.name": engine,
                "service.instance.id": key,
                "db.system.name": engine,
                "server.address": host,
                "server.port": int(port),
            }
        assert resource_of(latest["svc-monitor"]) == {"service.name": "svc-monitor"}

        valkey = metrics_of(latest[address(fleet.valkey)])
        redis = metrics_of(latest[address(fleet.redis)])
        node = metrics_of(latest[address(fleet.cluster_node)])
        monitor = metrics_of(latest["svc-monitor"])

        assert valkey["valkey.memory.used"].unit == "By"
        assert points(valkey["valkey.memory.used"])[0].as_int > 0
        assert points(redis["redis.memory.used"])[0].as_int > 0
        cpu = valkey["valkey.cpu.time"]
        assert (cpu.unit, cpu.sum.is_monotonic, cpu.sum.aggregation_temporality) == (
            "s",
            True,
            CUMULATIVE,
        )
        assert {attributes(p)["state"] for p in points(cpu)} == {"sys", "user"}
        assert {attributes(p)["state"] for p in points(redis["redis.cpu.time"])} == {"sys", "user"}
        [keys] = [p for p in points(valkey["valkey.db.keys"]) if attributes(p) == {"db": "0"}]
        assert keys.as_int >= 10
        [ttl] = [p for p in points(valkey["valkey.db.avg_ttl"]) if attributes(p) == {"db": "0"}]
        assert valkey["valkey.db.avg_ttl"].unit == "ms"
        assert 1000 < ttl.as_int <= 600_000  # milliseconds, not seconds
        calls = {attributes(p)["cmd"] for p in points(redis["redis.cmd.calls"])}
        assert "info" in calls
        assert redis["redis.cmd.calls"].sum.is_monotonic
        [role] = points(valkey["valkey.role"])
        assert (role.as_int, attributes(role)) == (1, {"role": "primary"})
        [role] = points(redis["redis.role"])
        assert attributes(role) == {"role": "primary"}
        assert points(node["valkey.cluster.cluster_enabled"])[0].as_int == 1
        assert "valkey.cluster.known_nodes" in node
        for product in ("svc.poll.stale", "svc.slowlog.length", "svc.client.connections"):
            assert product in valkey, product
        assert "svc.commandlog.large_request" in valkey  # Valkey 9.1 has a command log
        assert "svc.commandlog.large_request" not in redis  # Redis 7 has none

        for metric in ("process.cpu.time", "process.memory.usage", "process.uptime"):
            assert metric in monitor, metric
        assert {attributes(p)["cpu.mode"] for p in points(monitor["process.cpu.time"])} == {
            "user",
            "system",
        }
        generations = {
            attributes(p)["cpython.gc.generation"]
            for p in points(monitor["cpython.gc.collections"])
        }
        assert generations == {0, 1, 2}
        assert "cpython.gc.collected_objects" in monitor
        assert "cpython.gc.uncollectable_objects" in monitor

        # every family the scrape shows arrives under the table's name and unit
        pushed = {
            (name, metric.unit)
            for request in latest.values()
            for name, metric in metrics_of(request).items()
        }
        for sample_name, kind in scraped.items():
            if kind in ("histogram", "summary"):
                continue
            entry = lookup(sample_name)
            if entry is None:
                assert any(name == sample_name for name, _ in pushed), sample_name
            elif entry.conversion is Conversion.DROPPED:
                assert not any(name == sample_name for name, _ in pushed), sample_name
            else:
                names = {(entry.full_name(engine), entry.unit) for engine in ("valkey", "redis")}
                assert names & pushed, sample_name
        for request in latest.values():
            if resource_key(request) == "svc-monitor":
                continue
            for family, sent in metrics_of(request).items():
                assert not family.startswith("svc_"), family  # every node family has an entry
                for point in points(sent):
                    assert "connection" not in attributes(point), family


class TestTiming:
    async def test_a_hanging_collector_does_not_delay_the_next_push(
        self, fleet: Fleet, otlp_receiver: OtlpReceiver, caplog: pytest.LogCaptureFixture
    ):
        otlp_receiver.answer(METRICS, OtlpAnswer(hang=True))
        with caplog.at_level(logging.INFO, logger="svc_monitor.otlp"):
            async with exporting_app(fleet, otlp_receiver) as running:
                [first] = await otlp_receiver.wait_for(1, within=10)
                otlp_receiver.answer(METRICS, OtlpAnswer())
                second = (await otlp_receiver.wait_for(2, within=5))[1]
                third = (await otlp_receiver.wait_for(3, within=5))[2]
                # one interval apart (1 s), although the first is still unanswered
                assert second.at - first.at < 1.5
                assert third.at - second.at < 1.5
                text = ""
                for _ in range(50):  # bounded: 5 s; the hung push gives up 2 intervals on
                    text = (await running.client.get(SCRAPE)).text
                    failed = scrape_value(
                        text, "svc_otlp_export_requests_total", signal="metrics", outcome="failure"
                    )
                    if failed:
                        break
                    await asyncio.sleep(0.1)
                assert failed == 1
                await otlp_receiver.wait_for(otlp_receiver.calls(METRICS) + 1, within=5)
                text = (await running.client.get(SCRAPE)).text
        succeeded = scrape_value(
            text, "svc_otlp_export_requests_total", signal="metrics", outcome="success"
        )
        assert succeeded is not None
        assert succeeded >= 2
        assert scrape_value(
            text, "svc_otlp_export_last_success_timestamp_seconds", signal="metrics"
        ) == pytest.approx(time.time(), abs=10)
        assert scrape_value(text, "svc_otlp_export_last_duration_seconds", signal="metrics")
        warnings = [r for r in caplog.records if "is failing" in r.getMessage()]
        assert len(warnings) == 1
        assert "no answer within" in warnings[0].getMessage()
        assert [r for r in caplog.records if "recovered" in r.getMessage()]

    async def test_a_refusing_collector_is_counted_and_logged_once(
        self, fleet: Fleet, otlp_receiver: OtlpReceiver, caplog: pytest.LogCaptureFixture
    ):
        otlp_receiver.answer(METRICS, OtlpAnswer(status=503))
        with caplog.at_level(logging.WARNING, logger="svc_monitor.otlp"):
            async with exporting_app(fleet, otlp_receiver) as running:
                # Three 1 s intervals; a loaded full run once needed more than 10 s for them.
                await otlp_receiver.wait_for(3, within=20)
                await asyncio.sleep(0.2)  # the third answer is recorded
                text = (await running.client.get(SCRAPE)).text
        failed = scrape_value(
            text, "svc_otlp_export_requests_total", signal="metrics", outcome="failure"
        )
        assert failed is not None
        assert failed >= 3
        warnings = [r for r in caplog.records if "is failing" in r.getMessage()]
        assert len(warnings) == 1
        assert "HTTP 503" in warnings[0].getMessage()


class TestOff:
    @pytest.mark.parametrize(
        "overrides",
        [
            pytest.param({"OTEL_TELEMETRY_ENABLED": False}, id="telemetry-disabled"),
            pytest.param({"OTEL_EXPORTER_OTLP_ENDPOINT": None}, id="no-endpoint"),
        ],
    )
    async def test_nothing_is_sent(
        self, fleet: Fleet, otlp_receiver: OtlpReceiver, overrides: dict[str, Any]
    ):
        async with exporting_app(fleet, otlp_receiver, **overrides) as running:
            assert running.app.state.features.metrics_exporter is None
            await asyncio.sleep(2.5)  # two and a half intervals
            scraped = await scrape(running)
        assert otlp_receiver.requests == []
        assert not any(name.startswith("svc_otlp_export") for name in scraped)
