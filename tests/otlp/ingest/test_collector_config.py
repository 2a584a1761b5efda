"""The Collector configuration we hand out: parsed as the Collector would read it (YAML),
with every key docs/features/otlp-push-and-traces.md#the-collector-side lists, and served
by GET /api/otlp/collector-config."""

from typing import Any

import yaml

from svc_monitor.otlp.ingest.collector_config import collector_config
from tests.fixtures.app import AppFactory, RunningApp

SERVICE = "https://svc.example.com"


def parsed(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"host": "10.0.0.1", "port": 6379, "service_url": SERVICE}
    document = yaml.safe_load(collector_config(**{**values, **overrides}))
    assert isinstance(document, dict)
    return document


class TestRedisConfig:
    def test_receiver_watches_the_instance_every_15_seconds(self) -> None:
        receiver = parsed()["receivers"]["redis"]
        assert receiver["endpoint"] == "10.0.0.1:6379"
        assert receiver["collection_interval"] == "15s"

    def test_receiver_reports_the_address_we_match_connections_by(self) -> None:
        attributes = parsed()["receivers"]["redis"]["resource_attributes"]
        assert attributes == {
            "server.address": {"enabled": True},
            "server.port": {"enabled": True},
        }

    def test_metrics_off_by_default_are_turned_on(self) -> None:
        metrics = parsed()["receivers"]["redis"]["metrics"]
        for name in (
            "redis.maxmemory",
            "redis.role",
            "redis.cmd.calls",
            "redis.cmd.usec",
            "redis.cmd.latency",
            "redis.replication.replica_offset",
        ):
            assert metrics[name] == {"enabled": True}, name

    def test_exporter_posts_to_the_external_metrics_route_verbatim(self) -> None:
        exporter = parsed(service_url=SERVICE + "/")["exporters"]["otlphttp"]
        assert exporter["metrics_endpoint"] == f"{SERVICE}/v1/external/metrics"
        # `endpoint` would have /v1/metrics appended and miss our route.
        assert "endpoint" not in exporter

    def test_bearer_header_reads_the_token_from_the_environment(self) -> None:
        text = collector_config(host="10.0.0.1", port=6379, service_url=SERVICE)
        headers = yaml.safe_load(text)["exporters"]["otlphttp"]["headers"]
        assert headers == {"Authorization": "Bearer ${env:SVC_INGEST_TOKEN}"}
        assert "OTEL_INGEST_TOKEN" in text  # the comment says which value to put there

    def test_no_header_without_a_token(self) -> None:
        assert "headers" not in parsed(token=False)["exporters"]["otlphttp"]

    def test_batches_stay_under_the_1_mib_request_limit(self) -> None:
        batch = parsed()["processors"]["batch"]
        assert 0 < batch["send_batch_max_size"] <= 1000
        # The Collector refuses a send_batch_size above the maximum (its default is 8192).
        assert batch["send_batch_size"] <= batch["send_batch_max_size"]

    def test_pipeline_wires_receiver_batch_and_exporter(self) -> None:
        document = parsed()
        assert document["service"]["pipelines"]["metrics"] == {
            "receivers": ["redis"],
            "processors": ["batch"],
            "exporters": ["otlphttp"],
        }
        assert "resource" not in document["processors"]

    def test_ipv6_host_is_bracketed(self) -> None:
        assert parsed(host="::1", port=7000)["receivers"]["redis"]["endpoint"] == "[::1]:7000"


class TestValkeyConfig:
    def test_resource_processor_upserts_version_and_engine(self) -> None:
        document = parsed(engine="valkey", valkey_version="9.0")
        actions = document["processors"]["resource"]["attributes"]
        assert {"key": "valkey.version", "value": "9.0", "action": "upsert"} in actions
        assert {"key": "db.system.name", "value": "valkey", "action": "upsert"} in actions

    def test_version_placeholder_says_to_update_it(self) -> None:
        text = collector_config(host="h", port=1, service_url=SERVICE, engine="valkey")
        actions = yaml.safe_load(text)["processors"]["resource"]["attributes"]
        assert {"key": "valkey.version", "value": "9.0.0", "action": "upsert"} in actions
        assert "Update it on upgrade" in text

    def test_pipeline_runs_the_resource_processor(self) -> None:
        pipeline = parsed(engine="valkey")["service"]["pipelines"]["metrics"]
        assert pipeline["processors"] == ["resource", "batch"]
        assert pipeline["receivers"] == ["redis"]  # the receiver speaks to Valkey too


class TestCollectorConfigRoute:
    async def test_answers_yaml_for_this_service(self, api: RunningApp) -> None:
        response = await api.client.get(
            "/api/otlp/collector-config", params={"host": "10.1.2.3", "port": 7001}
        )
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/yaml")
        document = yaml.safe_load(response.text)
        assert document["receivers"]["redis"]["endpoint"] == "10.1.2.3:7001"
        exporter = document["exporters"]["otlphttp"]
        # The test client's base URL is the address this request was sent to.
        assert exporter["metrics_endpoint"] == "http://svc.test/v1/external/metrics"
        assert "headers" not in exporter  # no OTEL_INGEST_TOKEN set

    async def test_public_url_and_token_when_configured(
        self, memory_app_factory: AppFactory
    ) -> None:
        async with memory_app_factory(
            AUTH_PUBLIC_URL="https://monitor.example.com/", OTEL_INGEST_TOKEN="s3cret"
        ) as running:
            response = await running.client.get(
                "/api/otlp/collector-config",
                params={"host": "db.internal", "engine": "valkey", "valkeyVersion": "8.1.4"},
            )
        assert response.status_code == 200
        assert "s3cret" not in response.text  # the token itself is never handed out
        document = yaml.safe_load(response.text)
        exporter = document["exporters"]["otlphttp"]
        assert exporter["metrics_endpoint"] == "https://monitor.example.com/v1/external/metrics"
        assert exporter["headers"]["Authorization"] == "Bearer ${env:SVC_INGEST_TOKEN}"
        assert document["receivers"]["redis"]["endpoint"] == "db.internal:6379"
        actions = document["processors"]["resource"]["attributes"]
        assert {"key": "valkey.version", "value": "8.1.4", "action": "upsert"} in actions

    async def test_unusable_host_or_version_is_a_422(self, api: RunningApp) -> None:
        bad_host = await api.client.get("/api/otlp/collector-config", params={"host": "a/b@c"})
        assert bad_host.status_code == 422
        # A control character would make the whole YAML unreadable, not just one line.
        control = await api.client.get("/api/otlp/collector-config", params={"host": "db\x05x"})
        assert control.status_code == 422
        assert "host" in control.text
        bad_version = await api.client.get(
            "/api/otlp/collector-config",
            params={"host": "h", "engine": "valkey", "valkeyVersion": "9; rm"},
        )
        assert bad_version.status_code == 422
