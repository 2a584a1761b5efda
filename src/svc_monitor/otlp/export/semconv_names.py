"""The names of mode `semconv`: Prometheus family -> OTLP metric [unit]
(docs/features/otlp-export.md#otlp-export-metrics-and-events).

Keyed by the scrape name without `_total` (prometheus_client's `Metric.name` for a counter,
the sample name for the rest), so a family keeps its entry whether it is a counter or a
gauge. Receiver-aligned names take the node's engine prefix (`valkey.` or `redis.`, the
names of the Collector's `redisreceiver`); product-only names start with `svc.`; the
service's own process and garbage-collector families become `process.*` and `cpython.gc.*`.
A family without an entry keeps its scrape name.

Seven families have scrape names that do not match their OTLP names, because `promtool
check metrics` refuses abbreviated units and `_count` on a gauge (prometheus/catalogue.py,
docs/features/prometheus.md#prometheus): svc_instantaneous_ops_per_second,
svc_commandstats_latency_seconds, svc_slowlog_pattern_avg_duration_seconds and the three
svc_inference_bucket_p50/p95/p99_seconds (in seconds, sent in microseconds) and
svc_slowlog_pattern_entries. Their entries below still
give the OTLP names and units (`svc.cmd.latency_avg` [us], `svc.slowlog.pattern.count` ...).

`integer` says how the values travel (asInt or asDouble), fixed per metric so a backend
never sees one metric change type: counts, bytes and flags are integers, as the
`redisreceiver` sends them; ratios, averages, rates, CPU seconds and percentiles are doubles.
"""

from dataclasses import dataclass
from enum import Enum


class Conversion(Enum):
    PLAIN = "plain"
    ROLE = "role"  # svc_instance_info -> <engine>.role{role=primary|replica} = 1
    UPTIME = "uptime"  # a start timestamp -> seconds since then
    DROPPED = "dropped"  # not exported in mode semconv


@dataclass(frozen=True, slots=True)
class SemconvName:
    name: str  # for `aligned`, the part after the engine prefix
    unit: str
    integer: bool
    aligned: bool = False  # prefixed with the node's engine: valkey.* or redis.*
    attributes: tuple[tuple[str, str], ...] = ()  # fixed attributes, e.g. state=sys
    scale: float = 1.0  # scrape value x scale = exported value
    conversion: Conversion = Conversion.PLAIN
    description: str | None = None  # for metrics several families share
    int_labels: tuple[tuple[str, str], ...] = ()  # label -> int attribute it becomes

    def full_name(self, engine: str) -> str:
        return f"{engine}.{self.name}" if self.aligned else self.name


def _s(
    name: str,
    unit: str,
    *,
    double: bool = False,
    aligned: bool = False,
    attributes: tuple[tuple[str, str], ...] = (),
    scale: float = 1.0,
    conversion: Conversion = Conversion.PLAIN,
    description: str | None = None,
    int_labels: tuple[tuple[str, str], ...] = (),
) -> SemconvName:
    return SemconvName(
        name,
        unit,
        integer=not double,
        aligned=aligned,
        attributes=attributes,
        scale=scale,
        conversion=conversion,
        description=description,
        int_labels=int_labels,
    )


def _a(
    name: str,
    unit: str,
    *,
    double: bool = False,
    attributes: tuple[tuple[str, str], ...] = (),
    scale: float = 1.0,
    conversion: Conversion = Conversion.PLAIN,
    description: str | None = None,
) -> SemconvName:
    """Receiver-aligned: `<engine>.<name>`."""
    return _s(
        name,
        unit,
        double=double,
        aligned=True,
        attributes=attributes,
        scale=scale,
        conversion=conversion,
        description=description,
    )


_CPU = "CPU time consumed by the engine, by state (sys, user)."
_PROCESS_CPU = "CPU time of the svc-monitor process, by mode (user, system)."
_INFERENCE = "Inference bucket latency, by percentile (p50, p95, p99)."
_GEN = (("generation", "cpython.gc.generation"),)

TABLE: dict[str, SemconvName] = {
    # Receiver-aligned
    "svc_memory_used_bytes": _a("memory.used", "By"),
    "svc_memory_used_rss_bytes": _a("memory.rss", "By"),
    "svc_memory_used_peak_bytes": _a("memory.peak", "By"),
    "svc_memory_max_bytes": _a("maxmemory", "By"),
    "svc_memory_fragmentation_ratio": _a("memory.fragmentation_ratio", "1", double=True),
    "svc_cpu_sys_seconds": _a(
        "cpu.time", "s", double=True, attributes=(("state", "sys"),), description=_CPU
    ),
    "svc_cpu_user_seconds": _a(
        "cpu.time", "s", double=True, attributes=(("state", "user"),), description=_CPU
    ),
    "svc_connected_clients": _a("clients.connected", "{client}"),
    "svc_blocked_clients": _a("clients.blocked", "{client}"),
    "svc_commands_processed": _a("commands.processed", "{command}"),
    "svc_connections_received": _a("connections.received", "{connection}"),
    "svc_instantaneous_ops_per_second": _a("commands", "{ops}/s"),
    "svc_keyspace_hits": _a("keyspace.hits", "{hit}"),
    "svc_keyspace_misses": _a("keyspace.misses", "{miss}"),
    "svc_evicted_keys": _a("keys.evicted", "{key}"),
    "svc_expired_keys": _a("keys.expired", "{event}"),
    "svc_db_keys": _a("db.keys", "{key}"),
    "svc_db_keys_expiring": _a("db.expires", "{key}"),
    "svc_db_avg_ttl_seconds": _a("db.avg_ttl", "ms", scale=1000.0),
    "svc_commandstats_calls": _a("cmd.calls", "{call}"),
    "svc_connected_slaves": _a("slaves.connected", "{replica}"),
    "svc_replication_offset": _a("replication.offset", "By"),
    "svc_uptime_in_seconds": _a("uptime", "s"),
    "svc_rdb_changes_since_last_save": _a("rdb.changes_since_last_save", "{change}"),
    "svc_cluster_enabled": _a("cluster.cluster_enabled", "1"),
    "svc_cluster_known_nodes": _a("cluster.known_nodes", "{node}"),
    "svc_cluster_slots_assigned": _a("cluster.slots_assigned", "{slot}"),
    "svc_cluster_slots_ok": _a("cluster.slots_ok", "{slot}"),
    "svc_cluster_slots_fail": _a("cluster.slots_fail", "{slot}"),
    "svc_cluster_slots_pfail": _a("cluster.slots_pfail", "{slot}"),
    "svc_instance_info": _a(
        "role",
        "{role}",
        conversion=Conversion.ROLE,
        description="Replication role of the node (primary or replica); always 1.",
    ),
    # Not exported in mode semconv: they are sums of <engine>.db.*
    "svc_keyspace_keys": _s("", "", conversion=Conversion.DROPPED),
    "svc_keyspace_keys_expiring": _s("", "", conversion=Conversion.DROPPED),
    # Product-only
    "svc_memory_fragmentation_bytes": _s("svc.memory.fragmentation", "By"),
    "svc_tracking_clients": _s("svc.clients.tracking", "{client}"),
    "svc_instantaneous_input_kbps": _s("svc.net.input_rate", "KiBy/s", double=True),
    "svc_instantaneous_output_kbps": _s("svc.net.output_rate", "KiBy/s", double=True),
    "svc_pubsub_channels": _s("svc.pubsub.channels", "{channel}"),
    "svc_pubsub_patterns": _s("svc.pubsub.patterns", "{pattern}"),
    "svc_key_pattern_memory_bytes": _s("svc.key_pattern.memory.total", "By"),
    "svc_key_pattern_avg_memory_bytes": _s("svc.key_pattern.memory.avg", "By", double=True),
    "svc_key_pattern_max_memory_bytes": _s("svc.key_pattern.memory.max", "By"),
    "svc_key_pattern_keys": _s("svc.key_pattern.keys", "{key}"),
    "svc_key_memory_bytes": _s("svc.key.memory", "By"),
    "svc_key_cardinality": _s("svc.key.cardinality", "{element}"),
    "svc_keysize_bucket_keys": _s("svc.keysizes.bucket.keys", "{key}"),
    "svc_repl_output_buffer_ratio": _s("svc.replication.output_buffer_ratio", "1", double=True),
    "svc_master_link_up": _s("svc.replication.master_link_up", "1"),
    "svc_master_last_io_seconds_ago": _s("svc.replication.master_last_io_age", "s"),
    "svc_rdb_last_save_timestamp_seconds": _s("svc.rdb.last_save_time", "s"),
    "svc_rdb_last_bgsave_ok": _s("svc.rdb.last_bgsave_ok", "1"),
    "svc_aof_enabled": _s("svc.aof.enabled", "1"),
    "svc_aof_last_bgrewrite_ok": _s("svc.aof.last_bgrewrite_ok", "1"),
    "svc_cluster_size": _s("svc.cluster.size", "{node}"),
    "svc_cluster_stats_messages_crc_mismatch": _s("svc.cluster.messages_crc_mismatch", "{message}"),
    "svc_cluster_slot_keys": _s("svc.cluster.slot.keys", "{key}"),
    "svc_cluster_slot_expires": _s("svc.cluster.slot.expires", "{key}"),
    "svc_cluster_slot_reads": _s("svc.cluster.slot.reads", "{read}"),
    "svc_cluster_slot_writes": _s("svc.cluster.slot.writes", "{write}"),
    "svc_commandstats_latency_seconds": _s("svc.cmd.latency_avg", "us", double=True, scale=1e6),
    "svc_slowlog_length": _s("svc.slowlog.length", "{entry}"),
    "svc_slowlog_last_id": _s("svc.slowlog.last_id", "{id}"),
    "svc_slowlog_pattern_entries": _s("svc.slowlog.pattern.count", "{entry}"),
    "svc_slowlog_pattern_avg_duration_seconds": _s(
        "svc.slowlog.pattern.duration_avg", "us", double=True, scale=1e6
    ),
    "svc_slowlog_pattern_percentage": _s("svc.slowlog.pattern.share", "%", double=True),
    "svc_commandlog_large_request": _s("svc.commandlog.large_request", "{entry}"),
    "svc_commandlog_large_reply": _s("svc.commandlog.large_reply", "{entry}"),
    "svc_commandlog_large_request_by_pattern": _s(
        "svc.commandlog.large_request_by_pattern", "{entry}"
    ),
    "svc_commandlog_large_reply_by_pattern": _s("svc.commandlog.large_reply_by_pattern", "{entry}"),
    "svc_acl_denied": _s("svc.acl.denied", "{event}"),
    "svc_acl_denied_by_reason": _s("svc.acl.denied_by_reason", "{event}"),
    "svc_acl_denied_by_user": _s("svc.acl.denied_by_user", "{event}"),
    "svc_client_connections_current": _s("svc.client.connections", "{connection}"),
    "svc_client_connections_peak": _s("svc.client.connections_peak", "{connection}"),
    "svc_client_connections_by_name": _s("svc.client.connections_by_name", "{connection}"),
    "svc_client_connections_by_user": _s("svc.client.connections_by_user", "{connection}"),
    "svc_vector_index_docs": _s("svc.vector_index.docs", "{document}"),
    "svc_vector_index_memory_bytes": _s("svc.vector_index.memory", "By"),
    "svc_vector_index_indexing_failures": _s("svc.vector_index.indexing_failures", "{failure}"),
    "svc_vector_index_percent_indexed": _s("svc.vector_index.indexed", "%", double=True),
    **{
        f"svc_inference_bucket_{p}_seconds": _s(
            "svc.inference.bucket.latency",
            "us",
            double=True,
            scale=1e6,
            attributes=(("percentile", p),),
            description=_INFERENCE,
        )
        for p in ("p50", "p95", "p99")
    },
    "svc_inference_unhealthy": _s("svc.inference.bucket.unhealthy", "1"),
    "svc_inference_sla_breach": _s("svc.inference.sla_breach", "1"),
    "svc_poll_stale": _s("svc.poll.stale", "1"),
    "svc_polls": _s("svc.poll.count", "{poll}"),
    "svc_anomaly_events": _s("svc.anomaly.events", "{event}"),
    "svc_anomaly_events_current": _s("svc.anomaly.active", "{event}"),
    "svc_anomaly_by_severity": _s("svc.anomaly.by_severity", "{event}"),
    "svc_anomaly_by_metric": _s("svc.anomaly.by_metric", "{event}"),
    "svc_correlated_groups": _s("svc.anomaly.correlated_groups", "{group}"),
    "svc_correlated_groups_by_severity": _s("svc.anomaly.correlated_groups_by_severity", "{group}"),
    "svc_correlated_groups_by_pattern": _s("svc.anomaly.correlated_groups_by_pattern", "{group}"),
    "svc_anomaly_buffer_ready": _s("svc.anomaly.buffer.ready", "1"),
    "svc_anomaly_buffer_mean": _s("svc.anomaly.buffer.mean", "", double=True),
    "svc_anomaly_buffer_stddev": _s("svc.anomaly.buffer.stddev", "", double=True),
    "svc_metric_forecast_time_to_limit_seconds": _s("svc.forecast.time_to_limit", "s", double=True),
    "svc_cve_findings": _s("svc.cve.findings", "{finding}"),
    "svc_cve_kev": _s("svc.cve.kev", "{finding}"),
    "svc_cve_dataset_stale": _s("svc.cve.dataset_stale", "1"),
    "svc_otlp_metric_points_accepted": _s("svc.otlp.metric_points.accepted", "{point}"),
    "svc_otlp_metric_points_dropped": _s("svc.otlp.metric_points.dropped", "{point}"),
    # The monitor's own process (on the svc-monitor resource)
    "svc_process_cpu_user_seconds": _s(
        "process.cpu.time",
        "s",
        double=True,
        attributes=(("cpu.mode", "user"),),
        description=_PROCESS_CPU,
    ),
    "svc_process_cpu_system_seconds": _s(
        "process.cpu.time",
        "s",
        double=True,
        attributes=(("cpu.mode", "system"),),
        description=_PROCESS_CPU,
    ),
    "svc_process_resident_memory_bytes": _s("process.memory.usage", "By"),
    "svc_process_virtual_memory_bytes": _s("process.memory.virtual", "By"),
    "svc_process_open_fds": _s("process.unix.file_descriptor.count", "{file_descriptor}"),
    "svc_process_start_time_seconds": _s(
        "process.uptime",
        "s",
        double=True,
        conversion=Conversion.UPTIME,
        description="Time since the svc-monitor process started.",
    ),
    # The Python runtime's garbage collector (docs/features/otlp-export.md: cpython.gc.*)
    "svc_python_gc_collections": _s("cpython.gc.collections", "{collection}", int_labels=_GEN),
    "svc_python_gc_objects_collected": _s(
        "cpython.gc.collected_objects", "{object}", int_labels=_GEN
    ),
    "svc_python_gc_objects_uncollectable": _s(
        "cpython.gc.uncollectable_objects", "{object}", int_labels=_GEN
    ),
}

_UNIT_SUFFIXES = (("_bytes", "By"), ("_seconds", "s"), ("_ratio", "1"), ("_percent", "%"))


def table_key(sample_name: str) -> str:
    return sample_name.removesuffix("_total")


def lookup(sample_name: str) -> SemconvName | None:
    return TABLE.get(table_key(sample_name))


def unit_of_scrape_name(sample_name: str) -> str:
    """The unit a scrape name carries (mode mirror, and families with no entry)."""
    base = table_key(sample_name)
    for suffix, unit in _UNIT_SUFFIXES:
        if base.endswith(suffix):
            return unit
    return ""
