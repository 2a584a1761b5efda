"""The OpenTelemetry SDKs' standard exporter variables, honoured by our OTLP export:
headers (general and per signal, values percent-decoded), compression and timeout, with
a per-signal variable taking precedence over the general one; a malformed header list
stops the start with the variable named and no value shown."""

import time

import pytest
from pydantic import ValidationError

from svc_monitor.config import describe_validation_error
from svc_monitor.otlp.export.exporter_options import signal_options
from svc_monitor.otlp.export.transport import OtlpTransport
from tests.fixtures.app import make_settings
from tests.fixtures.otlp_receiver import LOGS, METRICS, OtlpAnswer, OtlpReceiver

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
