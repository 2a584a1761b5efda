"""The OTLP metrics export of a push connection, to a real receiver on 127.0.0.1: like the
scrape it mirrors, it carries a series or an attribute only for what was pushed."""

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from tests.fixtures.app import RunningApp, make_settings, running_app
from tests.fixtures.otlp_receiver import OtlpReceiver
from tests.otlp.export.test_metrics import attributes, metrics_of, points, resource_of, until_pushed
from tests.otlp.push_payloads import PROTOBUF, at, body, gauge, point, resource

PUSHED = ("127.0.0.1", 6391)  # what the Collector reports; never dialled
ADDRESS = f"{PUSHED[0]}:{PUSHED[1]}"


@contextlib.asynccontextmanager
async def pushed_and_exporting(receiver: OtlpReceiver, mode: str) -> AsyncIterator[RunningApp]:
    settings = make_settings(
        DB_HOST="127.0.0.1",
        DB_PORT=9,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.base_url,
        OTEL_METRICS_EXPORT_INTERVAL_MS=1000,
        OTEL_METRICS_EXPORT_MODE=mode,
        OTEL_EVENTS_ENABLED=False,
    )
    async with running_app(settings) as running:
        made = await running.client.post(
            "/api/connections",
            json={"source": "push", "name": "pushed", "host": PUSHED[0], "port": PUSHED[1]},
        )
        assert made.status_code == 201, made.text
        # Keys only: no db.expires, no role, no version attribute.
        sent = await running.client.post(
            "/v1/external/metrics",
            content=body(resource(at(*PUSHED), gauge("redis.db.keys", point(12, db="0")))),
            headers=PROTOBUF,
        )
        assert sent.status_code == 200, sent.text
        yield running


def has_metric(key: str, name: str) -> Callable[[dict[str, ExportMetricsServiceRequest]], bool]:
    def ready(latest: dict[str, ExportMetricsServiceRequest]) -> bool:
        request = latest.get(key)
        return request is not None and name in metrics_of(request)

    return ready


def connection_points(request: ExportMetricsServiceRequest, name: str) -> list[dict[str, Any]]:
    metric = metrics_of(request).get(name)
    if metric is None:
        return []
    found = [attributes(p) for p in points(metric)]
    return [a for a in found if a.get("connection") == ADDRESS]


class TestPushedConnectionExport:
    async def test_mirror_mode_sends_no_unpushed_series_or_empty_attributes(
        self, otlp_receiver: OtlpReceiver
    ) -> None:
        async with pushed_and_exporting(otlp_receiver, "mirror"):
            latest = await until_pushed(
                otlp_receiver, has_metric("svc-monitor", "svc_db_keys"), "the pushed keys"
            )
        request = latest["svc-monitor"]
        assert connection_points(request, "svc_db_keys") == [{"connection": ADDRESS, "db": "db0"}]
        assert connection_points(request, "svc_keyspace_keys")
        for never_pushed in ("svc_keyspace_keys_expiring", "svc_db_keys_expiring"):
            assert connection_points(request, never_pushed) == [], never_pushed
        [info] = connection_points(request, "svc_instance_info")
        assert info == {"connection": ADDRESS, "type": "redis"}

    async def test_semconv_mode_sends_no_role_point_and_no_version_attribute(
        self, otlp_receiver: OtlpReceiver
    ) -> None:
        async with pushed_and_exporting(otlp_receiver, "semconv"):
            latest = await until_pushed(
                otlp_receiver, has_metric(ADDRESS, "redis.db.keys"), "the node's keys"
            )
        request = latest[ADDRESS]
        node = resource_of(request)
        assert node["db.system.name"] == "redis"
        assert not [k for k in node if k.endswith(".version")], node
        names = set(metrics_of(request))
        assert "redis.db.expires" not in names
        assert "redis.role" not in names
        [keys] = points(metrics_of(request)["redis.db.keys"])
        assert attributes(keys) == {"db": "0"}
