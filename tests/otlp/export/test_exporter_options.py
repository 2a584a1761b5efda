"""The OpenTelemetry SDKs' standard exporter variables, honoured by our OTLP export:
endpoints, headers (general and per signal, values percent-decoded), compression and
timeout, with a per-signal variable taking precedence over the general one; a malformed
header list or endpoint stops the start with the variable named and no value shown."""

import asyncio
import time

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from pydantic import ValidationError

from svc_monitor.config import describe_validation_error
from svc_monitor.event_types.access import AclModified
from svc_monitor.otlp.export.exporter_options import signal_options
from svc_monitor.otlp.export.transport import OtlpTransport
from tests.fixtures.app import make_settings, running_app, target_of
from tests.fixtures.otlp_receiver import LOGS, METRICS, OtlpAnswer, OtlpReceiver
from tests.fixtures.servers import RunningServer

SECRET = "tok-9f8e7d6c5b4a"


async def test_headers_compression_and_timeout_reach_the_collector_per_signal(
    otlp_receiver: OtlpReceiver,
) -> None:
    settings = make_settings(
        OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.base_url,
        OTEL_EXPORTER_OTLP_HEADERS=f"Authorization=Bearer%20{SECRET},X-Tenant=fleet",
        OTEL_EXPORTER_OTLP_LOGS_HEADERS="X-Tenant=events",
        OTEL_EXPORTER_OTLP_METRICS_COMPRESSION="none",
        OTEL_EXPORTER_OTLP_LOGS_TIMEOUT=300,
    )
    options = {s: signal_options(settings, s) for s in ("metrics", "logs")}
    transport = OtlpTransport(otlp_receiver.base_url, options=options)
    try:
        metrics = await transport.post(METRICS, b"")
        logs = await transport.post(LOGS, b"")
        otlp_receiver.answer(LOGS, OtlpAnswer(delay_s=2.0))
        started = time.perf_counter()
        slow = await transport.post(LOGS, b"")
        waited = time.perf_counter() - started
    finally:
        await transport.close()
    assert metrics.ok, metrics.error
    assert logs.ok, logs.error
    (sent,) = otlp_receiver.on(METRICS)
    sent_metrics = {k.lower(): v for k, v in sent.headers.items()}
    first_logs = {k.lower(): v for k, v in otlp_receiver.on(LOGS)[0].headers.items()}
    assert sent_metrics["authorization"] == f"Bearer {SECRET}"
    assert sent_metrics["x-tenant"] == "fleet"
    assert "content-encoding" not in sent_metrics  # compression none, for metrics
    # Per signal, the logs' own header list replaces the general one.
    assert first_logs["x-tenant"] == "events"
    assert "authorization" not in first_logs
    assert first_logs["content-encoding"] == "gzip"
    assert not slow.ok
    assert waited < 1.5  # the logs' 300 ms, not the 10 s default
    assert SECRET not in (slow.error or "")


def test_a_malformed_header_list_is_refused_naming_the_variable_not_its_value() -> None:
    with pytest.raises(ValidationError) as refused:
        make_settings(OTEL_EXPORTER_OTLP_HEADERS=f"Authorization Bearer {SECRET}")
    text = describe_validation_error(refused.value)  # what `serve` prints before it exits
    assert "OTEL_EXPORTER_OTLP_HEADERS" in text
    assert SECRET not in text


class TestEndpoints:
    """The OpenTelemetry SDKs' rule (docs/features/otlp-export.md): a per-signal endpoint is
    the whole URL, used as it is; the general one is a base that gets /v1/metrics or
    /v1/logs; per-signal wins."""

    async def test_a_per_signal_endpoint_is_used_as_is_and_the_general_one_gets_the_path(
        self, otlp_receiver: OtlpReceiver
    ) -> None:
        base = otlp_receiver.base_url
        settings = make_settings(
            OTEL_EXPORTER_OTLP_ENDPOINT=f"{base}/general/",
            OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=f"{base}/ingest/metrics-in",
        )
        options = {s: signal_options(settings, s) for s in ("metrics", "logs")}
        transport = OtlpTransport(settings.OTEL_EXPORTER_OTLP_ENDPOINT, options=options)
        try:
            metrics = await transport.post(METRICS, b"")
            logs = await transport.post(LOGS, b"")
        finally:
            await transport.close()
        assert metrics.ok, metrics.error
        assert logs.ok, logs.error
        assert [r.path for r in otlp_receiver.requests] == [
            "/ingest/metrics-in",
            "/general/v1/logs",
        ]

    async def test_only_a_metrics_endpoint_exports_metrics_there_and_no_events(
        self, otlp_receiver: OtlpReceiver
    ) -> None:
        url = f"{otlp_receiver.base_url}/tenant-7/otlp-metrics"
        settings = make_settings(
            DB_HOST="127.0.0.1",
            DB_PORT=9,  # nothing listens: the export carries our own families
            OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=url,
            OTEL_METRICS_EXPORT_INTERVAL_MS=1000,
        )
        async with running_app(settings) as running:
            assert running.services.event_exporter is None  # no logs endpoint: no events out
            arrived = (await otlp_receiver.wait_for(path="/tenant-7/otlp-metrics", within=15))[0]
        pushed = ExportMetricsServiceRequest.FromString(arrived.raw)
        names = {
            m.name for rm in pushed.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
        }
        assert any(name.startswith("svc_") for name in names), names
        assert otlp_receiver.calls(LOGS) == 0

    async def test_only_a_logs_endpoint_exports_events_there_and_no_metrics(
        self, otlp_receiver: OtlpReceiver, valkey_server: RunningServer
    ) -> None:
        url = f"{otlp_receiver.base_url}/events"
        settings = make_settings(
            **target_of(valkey_server),
            OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=url,
            OTEL_METRICS_EXPORT_INTERVAL_MS=1000,
        )
        async with running_app(settings) as running:
            assert running.app.state.features.metrics_exporter is None
            connection = (await running.client.get("/api/connections")).json()[0]["id"]
            running.services.bus.publish(
                AclModified(
                    connection_id=connection,
                    change_type="user_added",
                    affected_user="ops",
                    modified_by="admin",
                )
            )
            await otlp_receiver.wait_for(path="/events", within=15)
            await asyncio.sleep(1.5)  # a metrics interval and a half: nothing else comes
        events = [
            record.event_name
            for arrived in otlp_receiver.on("/events")
            for rl in ExportLogsServiceRequest.FromString(arrived.raw).resource_logs
            for sl in rl.scope_logs
            for record in sl.log_records
        ]
        assert "acl.modified" in events
        assert {r.path for r in otlp_receiver.requests} == {"/events"}

    @pytest.mark.parametrize(
        "variable",
        [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
        ],
    )
    @pytest.mark.parametrize(
        "value",
        [f"ftp://user:{SECRET}@127.0.0.1/", f"127.0.0.1:4318/{SECRET}", f"http:///{SECRET}"],
    )
    def test_an_endpoint_that_is_no_http_url_is_refused_without_echoing_it(
        self, variable: str, value: str
    ) -> None:
        with pytest.raises(ValidationError) as refused:
            make_settings(**{variable: value})
        text = describe_validation_error(refused.value)
        assert text.startswith(variable)
        assert "http://" in text
        assert SECRET not in text
