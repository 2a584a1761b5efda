"""The mapping table: a pushed `redis.*`/`valkey.*` metric to one INFO field.

Every accepted point maps to exactly one INFO field; nothing is summed. Names and
attributes follow the Collector's redisreceiver; the `valkey.*` names mirror them
(docs/features/otlp-push-and-traces.md#what-is-taken). Units are never checked: they
changed between receiver releases.
"""

from dataclasses import dataclass
from typing import Literal, get_args

Engine = Literal["redis", "valkey"]

# How a point's attributes pick its field.
Shape = Literal["plain", "cpu", "role", "mode", "db", "cmd", "latency"]


@dataclass(frozen=True, slots=True)
class Target:
    """Where a metric's points go: `section.field`, or a composite entry's `field`."""

    shape: Shape
    section: str
    field: str
    # INFO keeps these as decimals; every other field is an integer count.
    decimal: bool = False


# The plain metrics, by the INFO section their field is in: metric suffix -> field.
_PLAIN: dict[str, dict[str, str]] = {
    "memory": {
        "memory.used": "used_memory",
        "memory.rss": "used_memory_rss",
        "memory.peak": "used_memory_peak",
        "memory.lua": "used_memory_lua",
        "memory.used_memory_overhead": "used_memory_overhead",
        "memory.used_memory_startup": "used_memory_startup",
        "maxmemory": "maxmemory",
    },
    "stats": {
        "commands": "instantaneous_ops_per_sec",
        "commands.processed": "total_commands_processed",
        "connections.received": "total_connections_received",
        "connections.rejected": "rejected_connections",
        "keys.evicted": "evicted_keys",
        "keys.expired": "expired_keys",
        "keyspace.hits": "keyspace_hits",
        "keyspace.misses": "keyspace_misses",
        "net.input": "total_net_input_bytes",
        "net.output": "total_net_output_bytes",
        "latest_fork": "latest_fork_usec",
    },
    "clients": {
        "clients.connected": "connected_clients",
        "clients.blocked": "blocked_clients",
        "clients.max_input_buffer": "client_recent_max_input_buffer",
        "clients.max_output_buffer": "client_recent_max_output_buffer",
    },
    "replication": {
        "slaves.connected": "connected_slaves",
        "replication.offset": "master_repl_offset",
        "replication.backlog_first_byte_offset": "repl_backlog_first_byte_offset",
        # The receiver reads slave_repl_offset, which only a replica reports.
        "replication.replica_offset": "slave_repl_offset",
    },
    "server": {"uptime": "uptime_in_seconds"},
    "persistence": {"rdb.changes_since_last_save": "rdb_changes_since_last_save"},
}


def _table() -> dict[str, Target]:
    table = {
        suffix: Target("plain", section, field)
        for section, fields in _PLAIN.items()
        for suffix, field in fields.items()
    }
    table["memory.fragmentation_ratio"] = Target(
        "plain", "memory", "mem_fragmentation_ratio", decimal=True
    )
    table["cpu.time"] = Target("cpu", "cpu", "used_cpu_", decimal=True)
    table["role"] = Target("role", "replication", "role")
    table["mode"] = Target("mode", "server", "redis_mode")
    table["db.keys"] = Target("db", "keyspace", "keys")
    table["db.expires"] = Target("db", "keyspace", "expires")
    table["db.avg_ttl"] = Target("db", "keyspace", "avg_ttl")
    table["cmd.calls"] = Target("cmd", "commandstats", "calls")
    table["cmd.usec"] = Target("cmd", "commandstats", "usec")
    # Seconds on the wire, INFO latencystats' microseconds here; `percentile` picks the field.
    table["cmd.latency"] = Target("latency", "latencystats", "", decimal=True)
    return table


TABLE: dict[str, Target] = _table()

CPU_STATES = frozenset(
    {"sys", "sys_children", "sys_main_thread", "user", "user_children", "user_main_thread"}
)
ROLES = {"primary": "master", "replica": "slave"}
# INFO server's redis_mode values; the receiver sends the one it read, with value 1.
MODES = frozenset({"standalone", "sentinel", "cluster"})
# The percentiles the receiver reports (its `percentile` attribute's enum), which are
# INFO latencystats' default ones (latency-tracking-info-percentiles "50 99 99.9").
PERCENTILES = frozenset({"p50", "p99", "p99.9"})


# Every mapped metric name, spelled out: one dict lookup per metric instead of splitting
# the name. Bounded by the table: twice its length.
_BY_NAME: dict[str, tuple[Engine, Target]] = {
    f"{engine}.{suffix}": (engine, target)
    for engine in get_args(Engine)
    for suffix, target in TABLE.items()
}

# lookup(metric_name): the engine a metric name speaks for and where its points go; None
# if unmapped. The dict's own get: it runs once per pushed metric, and the many-instances
# push has one point per metric, so a wrapping function would cost more than the lookup.
lookup = _BY_NAME.get


def database_index(text: str) -> str | None:
    """`db` attribute `"0"` or `"db0"` -> INFO's `db0`; None when it names no database."""
    digits = text[2:] if text.startswith("db") else text
    if digits.isdigit() and len(digits) <= 5:
        return f"db{int(digits)}"
    return None


# The point attribute that picks the field, by shape.
ATTRIBUTE_OF: dict[Shape, str] = {
    "cpu": "state",
    "role": "role",
    "mode": "mode",
    "db": "db",
    "cmd": "cmd",
    "latency": "cmd",
}


def attribute_name(shape: Shape, text: str) -> str | None:
    """What an attributed point's attribute names: the cpu field (`used_cpu_sys`), the INFO
    role (`slave`) or mode (`cluster`), the keyspace entry (`db0`) or the commandstats or
    latencystats entry (`get`); None when it names nothing we map."""
    if shape == "cpu":
        return f"used_cpu_{text}" if text in CPU_STATES else None
    if shape == "role":
        return ROLES.get(text)
    if shape == "mode":
        return text if text in MODES else None
    if shape == "db":
        return database_index(text)
    return text.strip().lower() or None  # cmd, latency: INFO names commands in lower case
