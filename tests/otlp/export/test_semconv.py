"""The export's conversion from Prometheus families to OTLP, without servers: the name
table line by line, the conversions, both modes' shapes, and the series memory
(docs/features/otlp-export.md)."""

import re
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality, Metric
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
)
from prometheus_client.metrics_core import Metric as PromMetric

from svc_monitor.config import ExportMode
from svc_monitor.otlp.export.semconv import build_requests, host_port
from svc_monitor.otlp.export.semconv_names import TABLE, Conversion, lookup
from svc_monitor.otlp.export.series_memory import SeriesMemory
from svc_monitor.prometheus.catalogue import exposed_names
from svc_monitor.prometheus.process import own_collectors

# The expected name of each family in mode semconv, written out by hand so that a change
# to semconv_names.py that renames a metric fails here: `kvv.` stands for the node's engine
# prefix (`valkey.` or `redis.`); the Python runtime's families are checked below.
SPEC_TABLE = """
svc_memory_used_bytes → kvv.memory.used [By]
svc_memory_used_rss_bytes → kvv.memory.rss [By]
svc_memory_used_peak_bytes → kvv.memory.peak [By]
svc_memory_max_bytes → kvv.maxmemory [By]
svc_memory_fragmentation_ratio → kvv.memory.fragmentation_ratio [1]
svc_cpu_sys_seconds_total → kvv.cpu.time [s] (state=sys)
svc_cpu_user_seconds_total → kvv.cpu.time [s] (state=user)
svc_connected_clients → kvv.clients.connected [{client}]
svc_blocked_clients → kvv.clients.blocked [{client}]
svc_commands_processed_total → kvv.commands.processed [{command}]
svc_connections_received_total → kvv.connections.received [{connection}]
svc_instantaneous_ops_per_sec → kvv.commands [{ops}/s]
svc_keyspace_hits_total → kvv.keyspace.hits [{hit}]
svc_keyspace_misses_total → kvv.keyspace.misses [{miss}]
svc_evicted_keys_total → kvv.keys.evicted [{key}]
svc_expired_keys_total → kvv.keys.expired [{event}]
svc_db_keys → kvv.db.keys [{key}]
svc_db_keys_expiring → kvv.db.expires [{key}]
svc_db_avg_ttl_seconds → kvv.db.avg_ttl [ms]
svc_commandstats_calls_total → kvv.cmd.calls [{call}]
svc_connected_slaves → kvv.slaves.connected [{replica}]
svc_replication_offset → kvv.replication.offset [By]
svc_uptime_in_seconds → kvv.uptime [s]
svc_rdb_changes_since_last_save → kvv.rdb.changes_since_last_save [{change}]
svc_cluster_enabled → kvv.cluster.cluster_enabled [1]
svc_cluster_known_nodes → kvv.cluster.known_nodes [{node}]
svc_cluster_slots_assigned → kvv.cluster.slots_assigned [{slot}]
svc_cluster_slots_ok → kvv.cluster.slots_ok [{slot}]
svc_cluster_slots_fail → kvv.cluster.slots_fail [{slot}]
svc_cluster_slots_pfail → kvv.cluster.slots_pfail [{slot}]
svc_instance_info → kvv.role [{role}]
svc_memory_fragmentation_bytes → svc.memory.fragmentation [By]
svc_tracking_clients → svc.clients.tracking [{client}]
svc_instantaneous_input_kbps → svc.net.input_rate [KiBy/s]
svc_instantaneous_output_kbps → svc.net.output_rate [KiBy/s]
svc_pubsub_channels → svc.pubsub.channels [{channel}]
svc_pubsub_patterns → svc.pubsub.patterns [{pattern}]
svc_key_pattern_memory_bytes → svc.key_pattern.memory.total [By]
svc_key_pattern_avg_memory_bytes → svc.key_pattern.memory.avg [By]
svc_key_pattern_max_memory_bytes → svc.key_pattern.memory.max [By]
svc_key_pattern_keys → svc.key_pattern.keys [{key}]
svc_key_memory_bytes → svc.key.memory [By]
svc_key_cardinality → svc.key.cardinality [{element}]
svc_keysize_bucket_keys → svc.keysizes.bucket.keys [{key}]
svc_repl_output_buffer_ratio → svc.replication.output_buffer_ratio [1]
svc_master_link_up → svc.replication.master_link_up [1]
svc_master_last_io_seconds_ago → svc.replication.master_last_io_age [s]
svc_rdb_last_save_timestamp_seconds → svc.rdb.last_save_time [s]
svc_rdb_last_bgsave_ok → svc.rdb.last_bgsave_ok [1]
svc_aof_enabled → svc.aof.enabled [1]
svc_aof_last_bgrewrite_ok → svc.aof.last_bgrewrite_ok [1]
svc_cluster_size → svc.cluster.size [{node}]
svc_cluster_stats_messages_crc_mismatch → svc.cluster.messages_crc_mismatch [{message}]
svc_cluster_slot_keys → svc.cluster.slot.keys [{key}]
svc_cluster_slot_expires → svc.cluster.slot.expires [{key}]
svc_cluster_slot_reads_total → svc.cluster.slot.reads [{read}]
svc_cluster_slot_writes_total → svc.cluster.slot.writes [{write}]
svc_commandstats_latency_us → svc.cmd.latency_avg [us]
svc_slowlog_length → svc.slowlog.length [{entry}]
svc_slowlog_last_id → svc.slowlog.last_id [{id}]
svc_slowlog_pattern_count → svc.slowlog.pattern.count [{entry}]
svc_slowlog_pattern_avg_duration_us → svc.slowlog.pattern.duration_avg [us]
svc_slowlog_pattern_percentage → svc.slowlog.pattern.share [%]
svc_commandlog_large_request → svc.commandlog.large_request [{entry}]
svc_commandlog_large_reply → svc.commandlog.large_reply [{entry}]
svc_commandlog_large_request_by_pattern → svc.commandlog.large_request_by_pattern [{entry}]
svc_commandlog_large_reply_by_pattern → svc.commandlog.large_reply_by_pattern [{entry}]
svc_acl_denied → svc.acl.denied [{event}]
svc_acl_denied_by_reason → svc.acl.denied_by_reason [{event}]
svc_acl_denied_by_user → svc.acl.denied_by_user [{event}]
svc_client_connections_current → svc.client.connections [{connection}]
svc_client_connections_peak → svc.client.connections_peak [{connection}]
svc_client_connections_by_name → svc.client.connections_by_name [{connection}]
svc_client_connections_by_user → svc.client.connections_by_user [{connection}]
svc_vector_index_docs → svc.vector_index.docs [{document}]
svc_vector_index_memory_bytes → svc.vector_index.memory [By]
svc_vector_index_indexing_failures → svc.vector_index.indexing_failures [{failure}]
svc_vector_index_percent_indexed → svc.vector_index.indexed [%]
svc_inference_bucket_p50_seconds → svc.inference.bucket.latency [us] (percentile=p50)
svc_inference_bucket_p95_seconds → svc.inference.bucket.latency [us] (percentile=p95)
svc_inference_bucket_p99_seconds → svc.inference.bucket.latency [us] (percentile=p99)
svc_inference_unhealthy → svc.inference.bucket.unhealthy [1]
svc_inference_sla_breach → svc.inference.sla_breach [1]
svc_poll_stale → svc.poll.stale [1]
svc_polls_total → svc.poll.count [{poll}]
svc_anomaly_events_total → svc.anomaly.events [{event}]
svc_anomaly_events_current → svc.anomaly.active [{event}]
svc_anomaly_by_severity → svc.anomaly.by_severity [{event}]
svc_anomaly_by_metric → svc.anomaly.by_metric [{event}]
svc_correlated_groups_total → svc.anomaly.correlated_groups [{group}]
svc_correlated_groups_by_severity → svc.anomaly.correlated_groups_by_severity [{group}]
svc_correlated_groups_by_pattern → svc.anomaly.correlated_groups_by_pattern [{group}]
svc_anomaly_buffer_ready → svc.anomaly.buffer.ready [1]
svc_anomaly_buffer_mean → svc.anomaly.buffer.mean []
svc_anomaly_buffer_stddev → svc.anomaly.buffer.stddev []
svc_metric_forecast_time_to_limit_seconds → svc.forecast.time_to_limit [s]
svc_cve_findings → svc.cve.findings [{finding}]
svc_cve_kev → svc.cve.kev [{finding}]
svc_cve_dataset_stale → svc.cve.dataset_stale [1]
svc_otlp_metric_points_accepted_total → svc.otlp.metric_points.accepted [{point}]
svc_otlp_metric_points_dropped_total → svc.otlp.metric_points.dropped [{point}]
svc_process_cpu_user_seconds_total → process.cpu.time [s] (cpu.mode=user)
svc_process_cpu_system_seconds_total → process.cpu.time [s] (cpu.mode=system)
svc_process_resident_memory_bytes → process.memory.usage [By]
svc_process_virtual_memory_bytes → process.memory.virtual [By]
svc_process_open_fds → process.unix.file_descriptor.count [{file_descriptor}]
svc_process_start_time_seconds → process.uptime [s]
svc_python_gc_collections_total → cpython.gc.collections [{collection}]
svc_python_gc_objects_collected_total → cpython.gc.collected_objects [{object}]
svc_python_gc_objects_uncollectable_total → cpython.gc.uncollectable_objects [{object}]
"""
# promtool refuses four of the scrape names the table above starts from; the catalogue
# ships these instead (same OTLP names; the two durations are in seconds on the scrape, us
# in the export: docs/features/prometheus.md#prometheus).
SHIPPED_AS = {
    "svc_instantaneous_ops_per_sec": "svc_instantaneous_ops_per_second",
    "svc_commandstats_latency_us": "svc_commandstats_latency_seconds",
    "svc_slowlog_pattern_avg_duration_us": "svc_slowlog_pattern_avg_duration_seconds",
    "svc_slowlog_pattern_count": "svc_slowlog_pattern_entries",
}
LINE = re.compile(r"^(\S+) → (\S+) \[(.*)\](?: \((\S+)=(\S+)\))?$")
SPEC_ROWS = [LINE.match(line).groups() for line in SPEC_TABLE.strip().splitlines()]  # type: ignore[union-attr]
HOST = "10.0.0.5:6379"
NOW_NS = 1_800_000_000 * 10**9


def engine_name(name: str, engine: str) -> str:
    return name.replace("kvv.", f"{engine}.", 1)


class TestTheNameTable:
    @pytest.mark.parametrize(("family", "name", "unit", "key", "value"), SPEC_ROWS)
    def test_each_family_maps_to_its_expected_name_and_unit(self, family, name, unit, key, value):
        entry = lookup(SHIPPED_AS.get(family, family))
        assert entry is not None, family
        assert entry.conversion is not Conversion.DROPPED
        assert entry.unit == unit
        for engine in ("valkey", "redis"):
            assert entry.full_name(engine) == engine_name(name, engine)
        if key is not None:
            assert (key, value) in entry.attributes

    def test_the_keyspace_sums_are_not_exported(self):
        for family in ("svc_keyspace_keys", "svc_keyspace_keys_expiring"):
            entry = lookup(family)
            assert entry is not None
            assert entry.conversion is Conversion.DROPPED

    def test_the_table_holds_nothing_the_expected_table_lacks(self):
        spec = {SHIPPED_AS.get(row[0], row[0]).removesuffix("_total") for row in SPEC_ROWS}
        extra = set(TABLE) - spec - {"svc_keyspace_keys", "svc_keyspace_keys_expiring"}
        assert extra == set()

    def test_every_exposed_name_has_an_entry_or_is_a_kept_or_skipped_one(self):
        # What may keep its scrape name: the process families without an OTLP name, the
        # exporter's own counters; histograms are skipped (docs/features/otlp-export.md).
        kept = {
            "svc_process_cpu_seconds_total",
            "svc_process_max_fds",
            "svc_otlp_export_requests_total",
            "svc_otlp_export_last_duration_seconds",
            "svc_otlp_export_last_success_timestamp_seconds",
            "svc_replica_polled_connections",
            "svc_replica_heartbeat_age_seconds",
            "svc_info_values_rejected_total",
        }
        for name in exposed_names():
            if name.startswith("svc_poll_duration_seconds"):
                continue
            assert lookup(name) is not None or name in kept, name


def families_of_one_node(engine: str = "valkey") -> list[PromMetric]:
    memory = GaugeMetricFamily("svc_memory_used_bytes", "Memory used.", labels=["connection"])
    memory.add_metric([HOST], 1024)
    memory.add_metric(["agent-7"], 2048)  # an agent connection: no host:port
    sys_cpu = CounterMetricFamily("svc_cpu_sys_seconds", "sys", labels=["connection"])
    sys_cpu.add_metric([HOST], 1.25)
    user_cpu = CounterMetricFamily("svc_cpu_user_seconds", "user", labels=["connection"])
    user_cpu.add_metric([HOST], 2.5)
    ttl = GaugeMetricFamily("svc_db_avg_ttl_seconds", "ttl", labels=["connection", "db"])
    ttl.add_metric([HOST, "db0"], 12.345)
    keys = GaugeMetricFamily("svc_db_keys", "keys", labels=["connection", "db"])
    keys.add_metric([HOST, "db0"], 7)
    total = GaugeMetricFamily("svc_keyspace_keys", "all keys", labels=["connection"])
    total.add_metric([HOST], 7)
    calls = CounterMetricFamily("svc_commandstats_calls", "calls", labels=["connection", "command"])
    calls.add_metric([HOST, "config|get"], 3)
    latency = GaugeMetricFamily(
        "svc_commandstats_latency_seconds", "latency", labels=["connection", "command"]
    )
    latency.add_metric([HOST, "get"], 0.0000025)
    info = InfoMetricFamily("svc_instance", "Instance.", labels=["connection"])
    info.add_metric([HOST], {"type": engine, "version": "9.1.0", "role": "slave"})
    polls = HistogramMetricFamily("svc_poll_duration_seconds", "durations", labels=["kind"])
    polls.add_metric(["info"], [("0.1", 1), ("+Inf", 2)], 0.3)
    own = [family for collector in own_collectors() for family in collector.collect()]
    return [memory, sys_cpu, user_cpu, ttl, keys, total, calls, latency, info, polls, *own]


def metrics_of(request: ExportMetricsServiceRequest) -> dict[str, Metric]:
    [resource_metrics] = request.resource_metrics
    [scope] = resource_metrics.scope_metrics
    assert scope.scope.name == "svc-monitor"
    return {m.name: m for m in scope.metrics}


def resource_of(request: ExportMetricsServiceRequest) -> dict[str, object]:
    [resource_metrics] = request.resource_metrics
    return {
        a.key: getattr(a.value, str(a.value.WhichOneof("value")))
        for a in resource_metrics.resource.attributes
    }


def points(metric: Metric) -> list[Any]:
    data = metric.WhichOneof("data")
    assert data is not None
    return list(getattr(metric, data).data_points)


def attributes(point) -> dict[str, object]:
    return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in point.attributes}


class TestSemconvMode:
    def requests(self, engine: str = "valkey") -> dict[str, ExportMetricsServiceRequest]:
        built = build_requests(families_of_one_node(engine), mode=ExportMode.SEMCONV, now_ns=NOW_NS)
        return dict(built)

    def test_one_resource_per_node_and_one_for_the_monitor(self):
        requests = self.requests()
        assert set(requests) == {HOST, "svc-monitor"}
        assert resource_of(requests[HOST]) == {
            "service.name": "valkey",
            "service.instance.id": HOST,
            "db.system.name": "valkey",
            "server.address": "10.0.0.5",
            "server.port": 6379,
            "valkey.version": "9.1.0",
        }
        assert resource_of(requests["svc-monitor"]) == {"service.name": "svc-monitor"}

    def test_a_redis_node_has_redis_names_and_resource(self):
        requests = self.requests("redis")
        assert resource_of(requests[HOST])["redis.version"] == "9.1.0"
        assert "redis.memory.used" in metrics_of(requests[HOST])

    def test_conversions(self):
        node = metrics_of(self.requests()[HOST])
        assert node["valkey.memory.used"].unit == "By"
        assert points(node["valkey.memory.used"])[0].as_int == 1024
        cpu = node["valkey.cpu.time"]
        assert cpu.sum.is_monotonic
        assert cpu.sum.aggregation_temporality == AggregationTemporality.Value(
            "AGGREGATION_TEMPORALITY_CUMULATIVE"
        )
        assert {attributes(p)["state"]: p.as_double for p in points(cpu)} == {
            "sys": 1.25,
            "user": 2.5,
        }
        [ttl] = points(node["valkey.db.avg_ttl"])
        assert (node["valkey.db.avg_ttl"].unit, ttl.as_int, attributes(ttl)) == (
            "ms",
            12345,
            {"db": "0"},
        )
        [keys] = points(node["valkey.db.keys"])
        assert attributes(keys) == {"db": "0"}
        [calls] = points(node["valkey.cmd.calls"])
        assert attributes(calls) == {"cmd": "config|get"}
        [latency] = points(node["svc.cmd.latency_avg"])
        assert latency.as_double == pytest.approx(2.5)
        assert node["svc.cmd.latency_avg"].unit == "us"
        [role] = points(node["valkey.role"])
        assert (role.as_int, attributes(role)) == (1, {"role": "replica"})
        assert "svc_keyspace_keys" not in node
        assert "svc_poll_duration_seconds" not in node
        for metric in node.values():
            for point in points(metric):
                assert "connection" not in attributes(point)

    def test_the_monitor_resource_has_process_gc_and_unplaceable_points(self):
        monitor = metrics_of(self.requests()["svc-monitor"])
        [agent] = points(monitor["valkey.memory.used"])
        assert attributes(agent) == {"connection": "agent-7"}
        modes = {attributes(p)["cpu.mode"] for p in points(monitor["process.cpu.time"])}
        assert modes == {"user", "system"}
        [uptime] = points(monitor["process.uptime"])
        assert monitor["process.uptime"].unit == "s"
        assert 0 < uptime.as_double < NOW_NS / 1e9  # seconds since start, not a timestamp
        assert monitor["process.memory.usage"].unit == "By"
        generations = {
            attributes(p)["cpython.gc.generation"]
            for p in points(monitor["cpython.gc.collections"])
        }
        assert generations == {0, 1, 2}  # int attributes
        assert monitor["cpython.gc.collected_objects"].sum.is_monotonic
        assert "svc_process_max_fds" in monitor  # no entry: its scrape name


@pytest.mark.parametrize("mode", [ExportMode.MIRROR, ExportMode.SEMCONV])
def test_a_replica_s_own_resource_names_it_and_the_nodes_do_not(mode: ExportMode) -> None:
    built = dict(
        build_requests(
            families_of_one_node(), mode=mode, now_ns=NOW_NS, monitor_instance="mon-a-1-abc"
        )
    )
    assert resource_of(built.pop("svc-monitor")) == {
        "service.name": "svc-monitor",
        "service.instance.id": "mon-a-1-abc",
    }
    assert all(
        resource_of(request)["service.instance.id"] != "mon-a-1-abc" for request in built.values()
    )


class TestMirrorMode:
    def test_one_resource_scrape_names_and_every_label(self):
        [(key, request)] = build_requests(
            families_of_one_node(), mode=ExportMode.MIRROR, now_ns=NOW_NS
        )
        assert key == "svc-monitor"
        assert resource_of(request) == {"service.name": "svc-monitor"}
        metrics = metrics_of(request)
        assert "svc_cpu_sys_seconds_total" in metrics
        assert "svc_keyspace_keys" in metrics
        assert not any(name.startswith("svc_poll_duration") for name in metrics)
        assert metrics["svc_memory_used_bytes"].unit == "By"
        assert metrics["svc_cpu_sys_seconds_total"].unit == "s"
        assert metrics["svc_cpu_sys_seconds_total"].sum.is_monotonic
        [ttl] = points(metrics["svc_db_avg_ttl_seconds"])
        assert (ttl.as_double, attributes(ttl)) == (12.345, {"connection": HOST, "db": "db0"})
        [info] = points(metrics["svc_instance_info"])
        assert info.as_int == 1
        assert attributes(info)["role"] == "slave"
        for name, metric in metrics.items():
            if not name.startswith(("svc_process_", "svc_python_gc_")):
                assert all("connection" in attributes(p) for p in points(metric)), name


class TestSeriesMemory:
    def push(
        self, families: list[PromMetric], memory: SeriesMemory, at_s: float
    ) -> dict[str, Metric]:
        now_ns = NOW_NS + int(at_s * 1e9)
        built = dict(
            build_requests(families, mode=ExportMode.SEMCONV, now_ns=now_ns, series_memory=memory)
        )
        return metrics_of(built[HOST]) if HOST in built else {}

    def test_a_series_that_left_is_sent_until_the_bound_then_dropped_then_back(self):
        memory = SeriesMemory(bound_ns=10 * 10**9)
        families = families_of_one_node()
        assert points(self.push(families, memory, 0)["valkey.memory.used"])[0].as_int == 1024
        others = [f for f in families if f.name != "svc_memory_used_bytes"]
        kept = self.push(others, memory, 9)
        assert points(kept["valkey.memory.used"])[0].as_int == 1024  # its last value
        assert "valkey.memory.used" not in self.push(others, memory, 11)
        assert "valkey.memory.used" in self.push(families, memory, 12)

    def test_a_removed_node_leaves_with_all_its_series_and_moves_nowhere(self):
        memory = SeriesMemory(bound_ns=10 * 10**9)
        families = families_of_one_node()
        self.push(families, memory, 0)
        own = [f for f in families if f.name.startswith(("svc_process", "svc_python"))]
        assert "valkey.memory.used" in self.push(own, memory, 5)
        built = dict(
            build_requests(
                own, mode=ExportMode.SEMCONV, now_ns=NOW_NS + 11 * 10**9, series_memory=memory
            )
        )
        assert set(built) == {"svc-monitor"}
        assert "valkey.memory.used" not in str(built["svc-monitor"])

    def test_a_counter_starts_when_first_seen_and_again_when_it_goes_down(self):
        memory = SeriesMemory(bound_ns=10 * 10**9)

        def cpu(value: float) -> list[PromMetric]:
            family = CounterMetricFamily("svc_cpu_sys_seconds", "sys", labels=["connection"])
            family.add_metric([HOST], value)
            return [family]

        def start_ns(at_s: float, value: float) -> int:
            [point] = points(self.push(cpu(value), memory, at_s)["valkey.cpu.time"])
            return int(point.start_time_unix_nano)

        first = start_ns(0, 5.0)
        assert first == NOW_NS
        assert start_ns(1, 6.0) == first
        assert start_ns(2, 1.0) == NOW_NS + 2 * 10**9  # the engine restarted


@pytest.mark.parametrize(
    ("connection", "expected"),
    [
        ("10.0.0.1:6379", ("10.0.0.1", 6379)),
        ("[::1]:7000", ("::1", 7000)),
        ("cache.internal:6380", ("cache.internal", 6380)),
        ("agent-7", None),
        ("agent-1234abcd:0", None),  # how an agent connection is labelled
        ("host:0", None),
        ("host:99999", None),
        (":6379", None),
    ],
)
def test_host_port(connection, expected):
    assert host_port(connection) == expected
