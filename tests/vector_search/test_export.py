"""The vector index families over OTLP in mode semconv, pushed to a real OTLP/HTTP receiver:
the names, units and `index` attribute of docs/features/vector-search.md."""

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from svc_monitor.config import Settings
from tests.fixtures.app import make_settings, running_app, target_of
from tests.fixtures.otlp_receiver import OtlpReceiver
from tests.fixtures.search_module import emptied
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually
from tests.otlp.export.test_metrics import (
    address,
    attributes,
    metrics_of,
    points,
    until_pushed,
)
from tests.vector_search.test_indexes import add_documents, create_index


def exporting(server: RunningServer, receiver: OtlpReceiver) -> Settings:
    """Watching `server`, polling its indexes every 200 ms, exporting semconv each second."""
    return make_settings(
        **target_of(server),
        VECTOR_INDEX_POLL_INTERVAL_MS=200,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.base_url,
        OTEL_METRICS_EXPORT_INTERVAL_MS=1000,
        OTEL_METRICS_EXPORT_MODE="semconv",
        OTEL_EVENTS_ENABLED=False,
    )


async def test_each_index_is_pushed_under_the_semconv_names(
    search_server: RunningServer, otlp_receiver: OtlpReceiver
):
    emptied(search_server)
    create_index(search_server, "export_idx", "e:")
    add_documents(search_server, "e:", 250)
    node = address(search_server)

    def ready(latest: dict[str, ExportMetricsServiceRequest]) -> bool:
        return node in latest and "svc.vector_index.docs" in metrics_of(latest[node])

    settings = exporting(search_server, otlp_receiver)
    async with running_app(settings):
        latest = await until_pushed(otlp_receiver, ready, "the vector index families")
    metrics = metrics_of(latest[node])
    expected_units = {
        "svc.vector_index.docs": "{document}",
        "svc.vector_index.memory": "By",
        "svc.vector_index.indexing_failures": "{failure}",
        "svc.vector_index.indexed": "%",
    }
    for name, unit in expected_units.items():
        assert metrics[name].unit == unit, name
        [point] = points(metrics[name])
        assert attributes(point)["index"] == "export_idx", name
    assert points(metrics["svc.vector_index.docs"])[0].as_int == 250
    assert points(metrics["svc.vector_index.indexed"])[0].as_double == 100.0
    assert points(metrics["svc.vector_index.memory"])[0].as_int > 0


async def test_search_latency_is_pushed_as_one_family_by_percentile(
    search_server: RunningServer, otlp_receiver: OtlpReceiver
):
    emptied(search_server)
    create_index(search_server, "lat_export_idx", "x:")
    add_documents(search_server, "x:", 100)
    node = address(search_server)

    def ready(latest: dict[str, ExportMetricsServiceRequest]) -> bool:
        return node in latest and "svc.inference.bucket.latency" in metrics_of(latest[node])

    settings = exporting(search_server, otlp_receiver)
    async with running_app(settings) as app:

        async def baseline() -> bool:
            body = (await app.client.get("/api/vector-search/latency")).json()
            return body["capturedAt"] is not None

        await eventually(baseline, within=15)
        with search_server.client() as conn:
            for _ in range(30):
                conn.execute_command("FT.SEARCH", "lat_export_idx", "@title:document", "NOCONTENT")
        latest = await until_pushed(otlp_receiver, ready, "the search latency family")
        body = (await app.client.get("/api/vector-search/latency")).json()
    metrics = metrics_of(latest[node])
    family = metrics["svc.inference.bucket.latency"]
    assert family.unit == "us"
    by_percentile = {
        attributes(p)["percentile"]: p
        for p in points(family)
        if attributes(p)["bucket"] == "FT.SEARCH" and attributes(p)["source"] == "histogram"
    }
    assert set(by_percentile) == {"p50", "p95", "p99"}
    [histogram] = [b for b in body["buckets"] if b["source"] == "histogram"]
    # Scraped in seconds, sent in microseconds, as the API gives them.
    assert by_percentile["p99"].as_double == pytest.approx(histogram["p99Us"])
    assert "svc.inference.bucket.unhealthy" in metrics
