"""The vector index families over OTLP in mode semconv, pushed to a real OTLP/HTTP receiver:
the names, units and `index` attribute of docs/features/vector-search.md."""

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from tests.fixtures.app import make_settings, running_app, target_of
from tests.fixtures.otlp_receiver import OtlpReceiver
from tests.fixtures.search_module import emptied
from tests.fixtures.servers import RunningServer
from tests.otlp.export.test_metrics import (
    address,
    attributes,
    metrics_of,
    points,
    until_pushed,
)
from tests.vector_search.test_indexes import add_documents, create_index


async def test_each_index_is_pushed_under_the_semconv_names(
    search_server: RunningServer, otlp_receiver: OtlpReceiver
):
    emptied(search_server)
    create_index(search_server, "export_idx", "e:")
    add_documents(search_server, "e:", 250)
    node = address(search_server)

    def ready(latest: dict[str, ExportMetricsServiceRequest]) -> bool:
        return node in latest and "svc.vector_index.docs" in metrics_of(latest[node])

    settings = make_settings(
        **target_of(search_server),
        VECTOR_INDEX_POLL_INTERVAL_MS=200,
        OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.base_url,
        OTEL_METRICS_EXPORT_INTERVAL_MS=1000,
        OTEL_METRICS_EXPORT_MODE="semconv",
        OTEL_EVENTS_ENABLED=False,
    )
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
