"""The OTLP/HTTP client both exports share, against the real test receiver."""

import gzip

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from svc_monitor.otlp.export.transport import OtlpTransport
from tests.fixtures.app import free_port
from tests.fixtures.otlp_receiver import METRICS, OtlpAnswer, OtlpReceiver


def a_request() -> bytes:
    request = ExportMetricsServiceRequest()
    metric = request.resource_metrics.add().scope_metrics.add().metrics.add(name="m")
    metric.gauge.data_points.add(as_int=7)
    body: bytes = request.SerializeToString()
    return body


class TestPost:
    async def test_a_gzipped_protobuf_post_under_the_endpoints_path(
        self, otlp_receiver: OtlpReceiver
    ):
        transport = OtlpTransport(otlp_receiver.base_url + "/otlp/")
        try:
            result = await transport.post("/v1/metrics", a_request())
        finally:
            await transport.close()
        assert (result.ok, result.status, result.error) == (True, 200, None)
        assert result.duration_s > 0
        [received] = otlp_receiver.requests
        assert received.path == "/otlp/v1/metrics"
        assert received.headers["Content-Encoding"] == "gzip"
        assert int(received.headers["Content-Length"]) == len(gzip.compress(a_request(), 6))
        assert isinstance(received.message, ExportMetricsServiceRequest)
        assert received.message.resource_metrics[0].scope_metrics[0].metrics[0].name == "m"

    async def test_an_error_status_is_a_failure_with_the_status(self, otlp_receiver: OtlpReceiver):
        otlp_receiver.answer(METRICS, OtlpAnswer(status=404))
        transport = OtlpTransport(otlp_receiver.base_url)
        try:
            result = await transport.post(METRICS, a_request())
        finally:
            await transport.close()
        assert (result.ok, result.status) == (False, 404)
        assert result.error is not None
        assert result.error.startswith("HTTP 404")

    async def test_no_answer_in_time_is_a_failure(self, otlp_receiver: OtlpReceiver):
        otlp_receiver.answer(METRICS, OtlpAnswer(hang=True))
        transport = OtlpTransport(otlp_receiver.base_url)
        try:
            result = await transport.post(METRICS, a_request(), timeout_s=0.3)
        finally:
            await transport.close()
        assert (result.ok, result.status) == (False, None)
        assert result.error == "no answer within 0.3 s"
        assert 0.3 <= result.duration_s < 2

    async def test_errors_never_show_the_endpoints_credentials(self):
        endpoint = f"http://collector-user:s3cret-token@127.0.0.1:{free_port()}/p?key=abc123"
        transport = OtlpTransport(endpoint)
        try:
            result = await transport.post(METRICS, a_request())
        finally:
            await transport.close()
        assert not result.ok
        assert result.error
        for secret in ("s3cret-token", "collector-user", "abc123"):
            assert secret not in result.error
        assert (
            transport.target_of(METRICS)
            == f"http://127.0.0.1:{endpoint.split(':')[3].split('/')[0]}"
        )
