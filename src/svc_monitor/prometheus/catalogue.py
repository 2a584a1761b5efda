"""Every family `/api/prometheus/metrics` can show: name, type, help and profile.

Seven names are not the obvious ones, because `promtool check metrics` refuses abbreviated
or non-base units and a `_count` suffix on a gauge, and the scrape must pass it
(docs/features/prometheus.md#prometheus): svc_instantaneous_ops_per_second (not _per_sec),
svc_commandstats_latency_seconds, svc_slowlog_pattern_avg_duration_seconds and
svc_inference_bucket_p50/p95/p99_seconds (not _us, in microseconds) and
svc_slowlog_pattern_entries (not _count). The OTLP semconv export still
sends the microsecond metrics (otlp/export/semconv.py converts).

One table, read by the collector (to build families), by the docs' generated metrics page
and by the tests (the Grafana dashboard may use only these names). Names carry their
unit; counters are named without `_total` here, as prometheus_client wants, and
show with it. `full` families appear only with METRICS_EXPORT_PROFILE=full: the
high-cardinality ones (per pattern, per slot, per client name or user) and the
diagnostic ones (poll counts and durations).

Families of features not built yet are not listed: they are absent, never zero.
"""

from dataclasses import dataclass
from typing import Literal

Kind = Literal["gauge", "counter", "info", "histogram"]


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()  # besides `connection`
    full: bool = False  # only with METRICS_EXPORT_PROFILE=full
    per_connection: bool = True  # False: the service's own (no `connection` label)


@dataclass(frozen=True, slots=True)
class InfoField:
    """A family read straight from one INFO field of each node."""

    family: Family
    section: str
    field: str
    scale: float = 1.0


def _gauge(name: str, help: str, *labels: str, full: bool = False) -> Family:
    return Family(name, "gauge", help, labels, full)


def _counter(name: str, help: str, *labels: str, full: bool = False) -> Family:
    return Family(name, "counter", help, labels, full)


def _info(
    kind: Kind, name: str, section: str, field: str, help: str, scale: float = 1.0
) -> InfoField:
    return InfoField(Family(name, kind, help), section, field, scale)


# INFO fields of every node, as the engine reports them (absent when it does not).
INFO_FIELDS = (
    _info("gauge", "svc_memory_used_bytes", "memory", "used_memory", "Memory used (used_memory)."),
    _info(
        "gauge",
        "svc_memory_used_rss_bytes",
        "memory",
        "used_memory_rss",
        "Resident memory of the engine process (used_memory_rss).",
    ),
    _info(
        "gauge",
        "svc_memory_used_peak_bytes",
        "memory",
        "used_memory_peak",
        "Peak memory used since start (used_memory_peak).",
    ),
    _info(
        "gauge",
        "svc_memory_max_bytes",
        "memory",
        "maxmemory",
        "The maxmemory limit; 0 means no limit.",
    ),
    _info(
        "gauge",
        "svc_memory_fragmentation_ratio",
        "memory",
        "mem_fragmentation_ratio",
        "RSS over used memory (mem_fragmentation_ratio).",
    ),
    _info(
        "gauge",
        "svc_memory_fragmentation_bytes",
        "memory",
        "mem_fragmentation_bytes",
        "RSS minus used memory (mem_fragmentation_bytes).",
    ),
    _info(
        "counter",
        "svc_cpu_sys_seconds",
        "cpu",
        "used_cpu_sys",
        "System CPU time consumed by the engine.",
    ),
    _info(
        "counter",
        "svc_cpu_user_seconds",
        "cpu",
        "used_cpu_user",
        "User CPU time consumed by the engine.",
    ),
    _info(
        "gauge",
        "svc_connected_clients",
        "clients",
        "connected_clients",
        "Client connections open (connected_clients).",
    ),
    _info(
        "gauge",
        "svc_blocked_clients",
        "clients",
        "blocked_clients",
        "Clients waiting in a blocking command.",
    ),
    _info(
        "gauge",
        "svc_tracking_clients",
        "clients",
        "tracking_clients",
        "Clients with client-side caching tracking on.",
    ),
    _info(
        "counter",
        "svc_commands_processed",
        "stats",
        "total_commands_processed",
        "Commands processed since the engine started.",
    ),
    _info(
        "counter",
        "svc_connections_received",
        "stats",
        "total_connections_received",
        "Connections accepted since the engine started.",
    ),
    _info(
        "gauge",
        "svc_instantaneous_ops_per_second",
        "stats",
        "instantaneous_ops_per_sec",
        "Commands per second, as the engine samples it.",
    ),
    _info(
        "gauge",
        "svc_instantaneous_input_kbps",
        "stats",
        "instantaneous_input_kbps",
        "Network input rate in KiB/s (bytes per second over 1024), as the engine samples it.",
    ),
    _info(
        "gauge",
        "svc_instantaneous_output_kbps",
        "stats",
        "instantaneous_output_kbps",
        "Network output rate in KiB/s (bytes per second over 1024), as the engine samples it.",
    ),
    _info(
        "counter",
        "svc_keyspace_hits",
        "stats",
        "keyspace_hits",
        "Successful key lookups since the engine started.",
    ),
    _info(
        "counter",
        "svc_keyspace_misses",
        "stats",
        "keyspace_misses",
        "Failed key lookups since the engine started.",
    ),
    _info(
        "counter",
        "svc_evicted_keys",
        "stats",
        "evicted_keys",
        "Keys evicted because of the maxmemory limit.",
    ),
    _info("counter", "svc_expired_keys", "stats", "expired_keys", "Keys removed on expiry."),
    _info(
        "gauge", "svc_pubsub_channels", "stats", "pubsub_channels", "Pub/sub channels subscribed."
    ),
    _info(
        "gauge", "svc_pubsub_patterns", "stats", "pubsub_patterns", "Pub/sub patterns subscribed."
    ),
    _info(
        "gauge",
        "svc_connected_slaves",
        "replication",
        "connected_slaves",
        "Replicas connected to this primary.",
    ),
    _info(
        "gauge",
        "svc_uptime_in_seconds",
        "server",
        "uptime_in_seconds",
        "Seconds since the engine started.",
    ),
    _info(
        "gauge",
        "svc_rdb_changes_since_last_save",
        "persistence",
        "rdb_changes_since_last_save",
        "Writes since the last RDB save.",
    ),
    _info(
        "gauge",
        "svc_rdb_last_save_timestamp_seconds",
        "persistence",
        "rdb_last_save_time",
        "Unix time of the last successful RDB save.",
    ),
    _info(
        "gauge",
        "svc_aof_enabled",
        "persistence",
        "aof_enabled",
        "1 when the append-only file is on.",
    ),
    _info(
        "gauge",
        "svc_cluster_enabled",
        "cluster",
        "cluster_enabled",
        "1 when the engine runs in cluster mode.",
    ),
)

# Derived from INFO by a rule rather than copied (collector.py says how).
REPLICATION_OFFSET = _gauge(
    "svc_replication_offset",
    "Replication offset: master_repl_offset on a primary, slave_repl_offset on a replica.",
)
MASTER_LINK_UP = _gauge(
    "svc_master_link_up", "Replicas only: 1 when the link to the primary is up."
)
MASTER_LAST_IO = _gauge(
    "svc_master_last_io_seconds_ago",
    "Replicas only: seconds since the last interaction with the primary.",
)
REPL_OUTPUT_BUFFER_RATIO = _gauge(
    "svc_repl_output_buffer_ratio",
    "Primaries with replicas only: memory held in replica output buffers (INFO "
    "mem_clients_slaves) over the replica class's hard client-output-buffer-limit "
    "(CONFIG GET); at 1 the primary drops the replica. Absent without CONFIG or a limit.",
)
RDB_LAST_BGSAVE_OK = _gauge("svc_rdb_last_bgsave_ok", "1 when the last RDB save succeeded.")
AOF_LAST_REWRITE_OK = _gauge("svc_aof_last_bgrewrite_ok", "1 when the last AOF rewrite succeeded.")
KEYSPACE_KEYS = _gauge("svc_keyspace_keys", "Keys in all databases.")
KEYSPACE_EXPIRING = _gauge("svc_keyspace_keys_expiring", "Keys with a TTL in all databases.")
DB_KEYS = _gauge("svc_db_keys", "Keys in one database.", "db")
DB_EXPIRING = _gauge("svc_db_keys_expiring", "Keys with a TTL in one database.", "db")
DB_AVG_TTL = _gauge(
    "svc_db_avg_ttl_seconds", "Average TTL of the keys with one, in one database.", "db"
)
INSTANCE = Family(
    "svc_instance",
    "info",
    "The engine behind each connection: type (valkey or redis), version and role.",
    ("type", "version", "role"),
)

# INFO commandstats (the commandstats poll).
COMMAND_CALLS = _counter("svc_commandstats_calls", "Calls of one command.", "command")
COMMAND_LATENCY = _gauge(
    "svc_commandstats_latency_seconds", "Mean time per call of one command.", "command"
)

# CLUSTER INFO of the seed, and CLUSTER SLOT-STATS (Valkey 8.0+): the cluster poll.
CLUSTER_INFO_FIELDS = (
    (_gauge("svc_cluster_known_nodes", "Nodes this node knows of."), "cluster_known_nodes"),
    (_gauge("svc_cluster_size", "Primaries serving at least one slot."), "cluster_size"),
    (_gauge("svc_cluster_slots_assigned", "Slots assigned to a node."), "cluster_slots_assigned"),
    (_gauge("svc_cluster_slots_ok", "Slots whose node is healthy."), "cluster_slots_ok"),
    (_gauge("svc_cluster_slots_fail", "Slots whose node is failed."), "cluster_slots_fail"),
    (_gauge("svc_cluster_slots_pfail", "Slots whose node may be failing."), "cluster_slots_pfail"),
    (
        _gauge(
            "svc_cluster_stats_messages_crc_mismatch",
            "Cluster bus messages dropped for a bad checksum (builds that report it).",
        ),
        "cluster_stats_messages_crc_mismatch",
    ),
)
SLOT_KEYS = _gauge("svc_cluster_slot_keys", "Keys in one slot (top 100).", "slot", full=True)
SLOT_EXPIRES = _gauge(
    "svc_cluster_slot_expires", "Keys with a TTL in one slot (top 100).", "slot", full=True
)
SLOT_READS = _counter("svc_cluster_slot_reads", "Reads of one slot (top 100).", "slot", full=True)
SLOT_WRITES = _counter(
    "svc_cluster_slot_writes", "Writes to one slot (top 100).", "slot", full=True
)

# SLOWLOG and COMMANDLOG (the log polls).
SLOWLOG_LENGTH = _gauge("svc_slowlog_length", "Entries in the slow log (SLOWLOG LEN).")
SLOWLOG_LAST_ID = _gauge("svc_slowlog_last_id", "Id of the newest slow log entry.")
SLOWLOG_PATTERN_COUNT = _gauge(
    "svc_slowlog_pattern_entries",
    "Slow log entries of one command pattern, among the newest read.",
    "pattern",
    full=True,
)
SLOWLOG_PATTERN_AVG = _gauge(
    "svc_slowlog_pattern_avg_duration_seconds",
    "Mean duration of one pattern's slow log entries.",
    "pattern",
    full=True,
)
SLOWLOG_PATTERN_SHARE = _gauge(
    "svc_slowlog_pattern_percentage",
    "Share of the newest slow log entries that are of one pattern, 0-100.",
    "pattern",
    full=True,
)
COMMANDLOG_LARGE_REQUEST = _gauge(
    "svc_commandlog_large_request", "Entries in the large-request command log (Valkey 8.1+)."
)
COMMANDLOG_LARGE_REPLY = _gauge(
    "svc_commandlog_large_reply", "Entries in the large-reply command log (Valkey 8.1+)."
)
COMMANDLOG_REQUEST_PATTERN = _gauge(
    "svc_commandlog_large_request_by_pattern",
    "Large-request entries of one command pattern, among the newest read.",
    "pattern",
    full=True,
)
COMMANDLOG_REPLY_PATTERN = _gauge(
    "svc_commandlog_large_reply_by_pattern",
    "Large-reply entries of one command pattern, among the newest read.",
    "pattern",
    full=True,
)

# ACL LOG (the audit poll) and CLIENT LIST (the clients poll).
ACL_DENIED = _gauge("svc_acl_denied", "Denials in the server's ACL LOG (sum of entry counts).")
ACL_BY_REASON = _gauge(
    "svc_acl_denied_by_reason", "ACL LOG denials by reason (auth, command, key ...).", "reason"
)
ACL_BY_USER = _gauge("svc_acl_denied_by_user", "ACL LOG denials by user.", "username", full=True)
CLIENTS_CURRENT = _gauge(
    "svc_client_connections_current", "Client connections in the latest CLIENT LIST."
)
CLIENTS_PEAK = _gauge(
    "svc_client_connections_peak", "Most client connections seen since svc-monitor started."
)
CLIENTS_BY_NAME = _gauge(
    "svc_client_connections_by_name",
    "Client connections by client name (unnamed for none).",
    "client_name",
    full=True,
)
CLIENTS_BY_USER = _gauge(
    "svc_client_connections_by_user", "Client connections by ACL user.", "user", full=True
)

# capacity forecasting (prometheus/families/forecast.py): only while a metric has a projection
METRIC_FORECAST_TIME_TO_LIMIT = _gauge(
    "svc_metric_forecast_time_to_limit_seconds",
    "Projected seconds until the metric reaches its ceiling at the current trend.",
    "metric_kind",
)

# key analytics (prometheus/families/key_analytics.py), from each connection's newest run;
# per pattern and per key only in the full profile (key names and patterns as labels)
KEY_PATTERN_KEYS = _gauge(
    "svc_key_pattern_keys", "Estimated keys of one key pattern.", "pattern", full=True
)
KEY_PATTERN_MEMORY = _gauge(
    "svc_key_pattern_memory_bytes",
    "Estimated memory of one key pattern's keys (MEMORY USAGE, scaled to the keyspace).",
    "pattern",
    full=True,
)
KEY_PATTERN_AVG_MEMORY = _gauge(
    "svc_key_pattern_avg_memory_bytes",
    "Average MEMORY USAGE of one key pattern's sampled keys.",
    "pattern",
    full=True,
)
KEY_PATTERN_MAX_MEMORY = _gauge(
    "svc_key_pattern_max_memory_bytes",
    "Largest MEMORY USAGE among one key pattern's sampled keys.",
    "pattern",
    full=True,
)
KEY_MEMORY = _gauge(
    "svc_key_memory_bytes",
    "MEMORY USAGE of one of the largest sampled keys (top 20).",
    "key",
    "type",
    full=True,
)
KEY_CARDINALITY = _gauge(
    "svc_key_cardinality",
    "Elements of one of the largest sampled keys (STRLEN for strings).",
    "key",
    "type",
    full=True,
)
VECTOR_INDEX_DOCS = _gauge(
    "svc_vector_index_docs", "Documents in a search index (FT.INFO num_docs).", "index"
)
VECTOR_INDEX_MEMORY = _gauge(
    "svc_vector_index_memory_bytes",
    "Memory of a search index, its vector indexes included (absent where the engine "
    "reports no sizes).",
    "index",
)
VECTOR_INDEX_FAILURES = _gauge(
    "svc_vector_index_indexing_failures",
    "Documents a search index failed to index since it was created (hash_indexing_failures).",
    "index",
)
VECTOR_INDEX_PERCENT_INDEXED = _gauge(
    "svc_vector_index_percent_indexed",
    "How much of the existing keys a search index's backfill has indexed, 0 to 100.",
    "index",
)
# Search latency (vector_search/latency.py): `bucket` is FT.SEARCH or FT.AGGREGATE for the
# histogram's figures (every call), FT.SEARCH:<index>, read or write for the slow log's.
INFERENCE_P50 = _gauge(
    "svc_inference_bucket_p50_seconds",
    "Median search latency in seconds over the latency window, by bucket and source "
    "(histogram: every call; slowlog: the slow tail only).",
    "bucket",
    "source",
)
INFERENCE_P95 = _gauge(
    "svc_inference_bucket_p95_seconds",
    "95th percentile search latency in seconds over the latency window.",
    "bucket",
    "source",
)
INFERENCE_P99 = _gauge(
    "svc_inference_bucket_p99_seconds",
    "99th percentile search latency in seconds over the latency window.",
    "bucket",
    "source",
)
INFERENCE_UNHEALTHY = _gauge(
    "svc_inference_unhealthy",
    "1 while a search bucket's p50 is over SEARCH_UNHEALTHY_P50_US (absent where the source "
    "cannot tell).",
    "bucket",
    "source",
)
INFERENCE_SLA_BREACH = _gauge(
    "svc_inference_sla_breach",
    "1 while a search index's p99 is over its SLA (Pro; absent without it).",
    "index",
)

KEYSIZE_BUCKET_KEYS = _gauge(
    "svc_keysize_bucket_keys",
    "Estimated keys of one type whose MEMORY USAGE is at most `bucket` bytes.",
    "type",
    "bucket",
)

# anomaly detection (prometheus/families/anomaly.py), refreshed every
# anomalyPrometheusIntervalMs; a connection appears once its detectors have seen INFO.
ANOMALY_EVENTS = _counter(
    "svc_anomaly_events", "Anomalies detected since start.", "metric", "severity"
)
ANOMALY_EVENTS_CURRENT = _gauge(
    "svc_anomaly_events_current",
    "Unresolved anomalies of the last anomalyCacheTtlMs.",
)
ANOMALY_BY_SEVERITY = _gauge(
    "svc_anomaly_by_severity", "Unresolved anomalies of the last anomalyCacheTtlMs.", "severity"
)
ANOMALY_BY_METRIC = _gauge(
    "svc_anomaly_by_metric", "Unresolved anomalies of the last anomalyCacheTtlMs.", "metric"
)
CORRELATED_GROUPS = _counter("svc_correlated_groups", "Correlated anomaly groups since start.")
CORRELATED_GROUPS_BY_SEVERITY = _gauge(
    "svc_correlated_groups_by_severity", "Correlated groups since start.", "severity"
)
CORRELATED_GROUPS_BY_PATTERN = _gauge(
    "svc_correlated_groups_by_pattern", "Correlated groups since start.", "pattern"
)
ANOMALY_BUFFER_READY = _gauge(
    "svc_anomaly_buffer_ready",
    "1 when the metric's rolling baseline holds enough samples (30) to judge.",
    "metric",
)
ANOMALY_BUFFER_MEAN = _gauge(
    "svc_anomaly_buffer_mean", "Mean of the metric's rolling baseline.", "metric", full=True
)
ANOMALY_BUFFER_STDDEV = _gauge(
    "svc_anomaly_buffer_stddev",
    "Standard deviation of the metric's rolling baseline.",
    "metric",
    full=True,
)

# The polls themselves.
POLL_STALE = _gauge(
    "svc_poll_stale",
    "1 when the connection's INFO has not answered for 30 s (or ever); kept while stale.",
)
POLLS = _counter("svc_polls", "Poll passes by kind.", "kind", full=True)
INFO_VALUES_REJECTED = _counter(
    "svc_info_values_rejected",
    "INFO values left out: a number past 64 bits, inf or nan where a number belongs.",
)
POLL_DURATION = Family(
    "svc_poll_duration_seconds",
    "histogram",
    "Duration of poll passes by kind, all connections together.",
    ("kind",),
    full=True,
    per_connection=False,
)

# The service's own process (prometheus/process.py) and exporters (otlp/export/stats.py).


# The CVE scanner's (prometheus/families/cve.py), per scanned connection; end-of-life is
# not counted.
CVE_FINDINGS = _gauge(
    "svc_cve_findings",
    "CVEs and advisories that apply to the connection's engine version, by severity.",
    "severity",
)
CVE_KEV = _gauge(
    "svc_cve_kev",
    "Findings of the connection that are on CISA's Known Exploited Vulnerabilities list.",
)


def _own(name: str, kind: Kind, help: str, *labels: str) -> Family:
    return Family(name, kind, help, labels, per_connection=False)


# The CVE scanner's dataset (prometheus/families/cve.py).
CVE_DATASET_STALE = _own(
    "svc_cve_dataset_stale",
    "gauge",
    "1 when the CVE dataset is older than CVE_DATASET_MAX_AGE_DAYS.",
)

# This replica's membership (prometheus/families/replica.py): every replica exports its own.
REPLICA_POLLED = _own(
    "svc_replica_polled_connections",
    "gauge",
    "Connections this replica polls.",
    "replica",
)
REPLICA_HEARTBEAT_AGE = _own(
    "svc_replica_heartbeat_age_seconds",
    "gauge",
    "Seconds since storage last took this replica's heartbeat; absent before the first.",
    "replica",
)

OWN = (
    _own("svc_process_cpu_seconds", "counter", "CPU time of svc-monitor (user + system)."),
    _own("svc_process_cpu_user_seconds", "counter", "User CPU time of svc-monitor."),
    _own("svc_process_cpu_system_seconds", "counter", "System CPU time of svc-monitor."),
    _own("svc_process_virtual_memory_bytes", "gauge", "Virtual memory of svc-monitor."),
    _own("svc_process_resident_memory_bytes", "gauge", "Resident memory of svc-monitor."),
    _own("svc_process_start_time_seconds", "gauge", "Unix time svc-monitor started."),
    _own("svc_process_open_fds", "gauge", "File descriptors svc-monitor holds open."),
    _own("svc_process_max_fds", "gauge", "The file descriptor limit of svc-monitor."),
    _own("svc_python_gc_collections", "counter", "Garbage collector runs.", "generation"),
    _own(
        "svc_python_gc_objects_collected", "counter", "Objects the collector freed.", "generation"
    ),
    _own(
        "svc_python_gc_objects_uncollectable",
        "counter",
        "Objects the collector could not free.",
        "generation",
    ),
    _own(
        "svc_otlp_export_requests",
        "counter",
        "OTLP export requests by signal (metrics, logs) and outcome (success, failure).",
        "signal",
        "outcome",
    ),
    _own(
        "svc_otlp_export_last_duration_seconds",
        "gauge",
        "How long the last OTLP export request of a signal took.",
        "signal",
    ),
    _own(
        "svc_otlp_export_last_success_timestamp_seconds",
        "gauge",
        "Unix time of the last OTLP export request of a signal that succeeded.",
        "signal",
    ),
    CVE_DATASET_STALE,
    REPLICA_POLLED,
    REPLICA_HEARTBEAT_AGE,
    # The metrics receiver's (otlp/ingest/counts.py), full profile only.
    Family(
        "svc_otlp_metric_points_accepted",
        "counter",
        "Pushed metric points taken by /v1/external/metrics.",
        full=True,
        per_connection=False,
    ),
    Family(
        "svc_otlp_metric_points_dropped",
        "counter",
        "Pushed metric points dropped by /v1/external/metrics, by reason.",
        ("reason",),
        full=True,
        per_connection=False,
    ),
)

FAMILIES: tuple[Family, ...] = (
    *(f.family for f in INFO_FIELDS),
    REPLICATION_OFFSET,
    MASTER_LINK_UP,
    MASTER_LAST_IO,
    REPL_OUTPUT_BUFFER_RATIO,
    RDB_LAST_BGSAVE_OK,
    AOF_LAST_REWRITE_OK,
    KEYSPACE_KEYS,
    KEYSPACE_EXPIRING,
    DB_KEYS,
    DB_EXPIRING,
    DB_AVG_TTL,
    INSTANCE,
    COMMAND_CALLS,
    COMMAND_LATENCY,
    *(f for f, _ in CLUSTER_INFO_FIELDS),
    SLOT_KEYS,
    SLOT_EXPIRES,
    SLOT_READS,
    SLOT_WRITES,
    SLOWLOG_LENGTH,
    SLOWLOG_LAST_ID,
    SLOWLOG_PATTERN_COUNT,
    SLOWLOG_PATTERN_AVG,
    SLOWLOG_PATTERN_SHARE,
    COMMANDLOG_LARGE_REQUEST,
    COMMANDLOG_LARGE_REPLY,
    COMMANDLOG_REQUEST_PATTERN,
    COMMANDLOG_REPLY_PATTERN,
    ACL_DENIED,
    ACL_BY_REASON,
    ACL_BY_USER,
    CLIENTS_CURRENT,
    CLIENTS_PEAK,
    CLIENTS_BY_NAME,
    CLIENTS_BY_USER,
    METRIC_FORECAST_TIME_TO_LIMIT,
    KEY_PATTERN_KEYS,
    KEY_PATTERN_MEMORY,
    KEY_PATTERN_AVG_MEMORY,
    KEY_PATTERN_MAX_MEMORY,
    KEY_MEMORY,
    KEY_CARDINALITY,
    KEYSIZE_BUCKET_KEYS,
    VECTOR_INDEX_DOCS,
    VECTOR_INDEX_MEMORY,
    VECTOR_INDEX_FAILURES,
    VECTOR_INDEX_PERCENT_INDEXED,
    INFERENCE_P50,
    INFERENCE_P95,
    INFERENCE_P99,
    INFERENCE_UNHEALTHY,
    INFERENCE_SLA_BREACH,
    ANOMALY_EVENTS,
    ANOMALY_EVENTS_CURRENT,
    ANOMALY_BY_SEVERITY,
    ANOMALY_BY_METRIC,
    CORRELATED_GROUPS,
    CORRELATED_GROUPS_BY_SEVERITY,
    CORRELATED_GROUPS_BY_PATTERN,
    ANOMALY_BUFFER_READY,
    ANOMALY_BUFFER_MEAN,
    ANOMALY_BUFFER_STDDEV,
    POLL_STALE,
    INFO_VALUES_REJECTED,
    POLLS,
    POLL_DURATION,
    CVE_FINDINGS,
    CVE_KEV,
    *OWN,
)


def sample_names(family: Family) -> tuple[str, ...]:
    """The names `family`'s samples show under in the text format."""
    if family.kind == "counter":
        return (f"{family.name}_total",)
    if family.kind == "info":
        return (f"{family.name}_info",)
    if family.kind == "histogram":
        return tuple(f"{family.name}{suffix}" for suffix in ("_bucket", "_sum", "_count"))
    return (family.name,)


def exposed_names() -> frozenset[str]:
    """Every sample name the endpoint can produce (with `_total`, `_bucket` ...)."""
    return frozenset(name for family in FAMILIES for name in sample_names(family))
