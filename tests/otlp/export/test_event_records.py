"""The log record of one notification: severity per event type, attribute types."""

import pytest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from svc_monitor.licensing.models import WEBHOOK_EVENT_TIERS
from svc_monitor.otlp.export.event_records import SEVERITY, Instance, export_request, log_record

INSTANCE = Instance("c1", "10.0.0.5", 6379)


def attributes(record: LogRecord) -> dict[str, object]:
    found: dict[str, object] = {}
    for pair in record.attributes:
        kind = pair.value.WhichOneof("value")
        found[pair.key] = getattr(pair.value, kind) if kind else None
    return found


def record_of(event: str, **data: object) -> LogRecord:
    return log_record(event, data, INSTANCE, at_ms=1_000, observed_ns=2_000_000_000)


class TestSeverity:
    def test_every_webhook_event_has_one(self):
        assert set(SEVERITY) == set(WEBHOOK_EVENT_TIERS)

    @pytest.mark.parametrize(
        ("event", "data", "number", "text"),
        [
            ("instance.down", {}, 17, "ERROR"),
            ("instance.up", {}, 9, "INFO"),
            ("memory.critical", {}, 13, "WARN"),
            ("config.changed", {}, 9, "INFO"),
            ("cluster.failover", {"clusterState": "fail", "slotsFailed": 0}, 13, "WARN"),
            ("cluster.failover", {"clusterState": "ok", "slotsFailed": 5}, 13, "WARN"),
            pytest.param(
                "cluster.failover",
                {"clusterState": "ok", "slotsFailed": 0},
                9,
                "INFO",
                id="cluster-recovered",
            ),
            ("anomaly.detected", {"severity": "critical"}, 17, "ERROR"),
            ("anomaly.detected", {"severity": "info"}, 9, "INFO"),
            ("failover.started", {}, 17, "ERROR"),
            ("failover.completed", {}, 13, "WARN"),
            ("data.loss.detected", {}, 17, "ERROR"),
            ("compliance.alert", {"severity": "warning"}, 13, "WARN"),
        ],
    )
    def test_by_event_and_payload(
        self, event: str, data: dict[str, object], number: int, text: str
    ):
        record = record_of(event, **data)
        assert (record.severity_number, record.severity_text) == (number, text)


class TestRecord:
    def test_times_name_body_and_where(self):
        record = record_of("instance.down", message="gone", reason="timeout")
        assert record.time_unix_nano == 1_000_000_000
        assert record.observed_time_unix_nano == 2_000_000_000
        assert record.event_name == "instance.down"
        assert record.body.string_value == "gone"
        assert attributes(record) == {
            "event.name": "instance.down",
            "svc.connection.id": "c1",
            "server.address": "10.0.0.5",
            "server.port": 6379,
            "svc.event.reason": "timeout",
        }

    def test_field_types(self):
        record = record_of(
            "latency.spike",
            latencyMs=1.5,
            count=3,
            test=True,
            baselineMs=None,
            users=["a", "b"],
            totals={"x": 1},
            huge=2**70,
        )
        found = attributes(record)
        assert found["svc.event.latencyMs"] == 1.5
        assert found["svc.event.count"] == 3
        assert found["svc.event.test"] is True  # a bool, not the int 1
        assert "svc.event.baselineMs" not in found
        assert found["svc.event.users"] == '["a","b"]'
        assert found["svc.event.totals"] == '{"x":1}'
        assert found["svc.event.huge"] == str(2**70)  # past int64: text, not an error

    def test_a_removed_connection_keeps_only_its_id(self):
        record = log_record(
            "instance.up", {"message": "back"}, Instance("gone", None, None), at_ms=1, observed_ns=1
        )
        assert attributes(record) == {"event.name": "instance.up", "svc.connection.id": "gone"}

    def test_one_resource_one_scope_per_request(self):
        request = export_request([record_of("instance.up"), record_of("instance.down")])
        [resource_logs] = request.resource_logs
        [scope_logs] = resource_logs.scope_logs
        assert scope_logs.scope.name == "svc-events"
        assert len(scope_logs.log_records) == 2
        names = {a.key: a.value.string_value for a in resource_logs.resource.attributes}
        assert names["service.name"] == "svc-monitor"
