"""Correlated groups: a connection's detections each within CORRELATION_WINDOW_MS of the
one before (service.py) are one group, matched to the first pattern in PATTERNS whose
rule holds.

Order matters: the most specific explanation first (memory up with evictions is memory
pressure even when ops rose too; ops with clients or network is a traffic burst).
"""

from collections.abc import Callable
from dataclasses import dataclass

from svc_monitor.anomaly.models import Pattern
from svc_monitor.detection.anomaly.models import Detection

CORRELATION_WINDOW_MS = 5_000

Seen = dict[str, str]  # metric -> kind (spike | drop) in the group


def _up(seen: Seen, *metrics: str) -> bool:
    return any(_has(seen, m, "spike") for m in metrics)


def _down(seen: Seen, *metrics: str) -> bool:
    return any(_has(seen, m, "drop") for m in metrics)


def _has(seen: Seen, metric: str, kind: str) -> bool:
    """A name ending in ":" stands for every per-command metric it starts (cmd_calls:get)."""
    if metric.endswith(":"):
        return any(k.startswith(metric) and v == kind for k, v in seen.items())
    return seen.get(metric) == kind


_OPS = ("ops_per_sec", "commands_rate", "cmd_calls:")
_SLOW = ("slowlog_growth", "latency_spike", "cmd_usec:")
_MEMORY = ("memory_used", "memory_rss")
_NETWORK = ("network_in", "network_out")


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: Pattern
    holds: Callable[[Seen], bool]


def _rule(name: str, diagnosis: str, next_step: str, holds: Callable[[Seen], bool]) -> Rule:
    return Rule(Pattern(name, diagnosis, next_step), holds)


PATTERNS: tuple[Rule, ...] = (
    _rule(
        "auth_attack",
        "Many ACL denials at once: a client is guessing passwords or using commands or keys "
        "it is not allowed.",
        "Check the ACL audit trail for the client addresses and users; block or fix them.",
        lambda s: _up(s, "acl_denied"),
    ),
    _rule(
        "data_loss",
        "The dataset is gone: a primary restarted without its data, or a replica was wiped "
        "by a full sync from a primary that had restarted empty.",
        "Stop writes if you can; restore from a backup or a surviving replica; turn on "
        "persistence (RDB/AOF) or keep an empty primary from restarting automatically.",
        lambda s: "data_loss" in s,
    ),
    _rule(
        "failover",
        "The instance changed role or lost its primary: a failover or a broken replication link.",
        "Check the primary's health and the replication page; confirm clients follow the "
        "new primary.",
        lambda s: "role_change" in s or "master_link" in s,
    ),
    _rule(
        "cluster_failure",
        "The cluster cannot serve every slot, or nodes holding slots are suspected down: "
        "clients get CLUSTERDOWN or MOVED errors for some keys.",
        "Open the Cluster page: find the failed or unreachable nodes and whether their "
        "replicas took over; check the network between nodes (cluster bus port).",
        lambda s: "cluster_state" in s,
    ),
    _rule(
        "persistence_stall",
        "A BGSAVE or AOF rewrite child is stuck or has run too long: the next snapshot is at "
        "risk and the fork's copy-on-write memory keeps growing.",
        "Check the disk (space, latency) and the server log for the child; check memory for "
        "copy-on-write growth; if it is hung, kill the child process and let the next save run.",
        lambda s: "persistence_child" in s,
    ),
    _rule(
        "memory_pressure",
        "Memory rose sharply and keys are being evicted: the dataset no longer fits in maxmemory.",
        "Find what grew (Key Analytics), raise maxmemory or add TTLs; check the eviction "
        "policy suits the data.",
        lambda s: _up(s, *_MEMORY) and _up(s, "evictions"),
    ),
    _rule(
        "cache_thrashing",
        "Evictions with more misses: keys are evicted and then asked for again.",
        "Raise maxmemory or cut the working set; compare the hit ratio before and after.",
        lambda s: _up(s, "evictions") and (_up(s, "keyspace_misses") or _down(s, "hit_ratio")),
    ),
    _rule(
        "bulk_write",
        "Commands and memory rose together without evictions: a bulk load or batch job.",
        "Check which client is writing (Clients page); confirm the job is expected and that "
        "memory has room for it.",
        lambda s: _up(s, *_OPS) and _up(s, *_MEMORY),
    ),
    _rule(
        "traffic_burst",
        "More commands together with more clients or network traffic: a burst of load.",
        "Check whether the load is expected (a deploy, a batch, a retry storm) and whether "
        "latency held.",
        lambda s: (
            _up(s, *_OPS)
            and (_up(s, "connected_clients", "connections_received") or _up(s, *_NETWORK))
        ),
    ),
    _rule(
        "slow_queries",
        "Commands got slower: new slow log entries, latency monitor spikes, or a command's "
        "time per call rose.",
        "Open the Slow Log and Commandstats pages for the commands and keys; look for "
        "O(N) commands (KEYS, SMEMBERS, big ranges), large values, or a fork at the time.",
        lambda s: _up(s, *_SLOW),
    ),
    _rule(
        "connection_storm",
        "Connections are refused or close to maxclients.",
        "Look for a client opening connections without reusing them; raise maxclients or "
        "fix the pool size.",
        lambda s: _up(s, "rejected_connections") or "client_lockout" in s,
    ),
    _rule(
        "connection_leak",
        "Clients rose without more commands: connections are opened and left idle.",
        "List idle clients by name and address (Clients page) and fix the pool that leaks.",
        lambda s: _up(s, "connected_clients", "connections_received") and not _up(s, *_OPS),
    ),
    _rule(
        "memory_overhead",
        "Server bookkeeping (client output buffers, replication backlog, hash tables) takes a "
        "large share of memory.",
        "Check client output buffers (CLIENT LIST omem, slow pub/sub or MONITOR clients), "
        "repl-backlog-size and MEMORY STATS.",
        lambda s: "memory_overhead" in s,
    ),
    _rule(
        "memory_pressure",
        "Memory rose sharply, evictions or fragmentation on their own.",
        "Check used memory against maxmemory; for fragmentation consider MEMORY PURGE or "
        "activedefrag.",
        lambda s: _up(s, "evictions", "fragmentation", *_MEMORY),
    ),
    _rule(
        "traffic_burst",
        "Commands or network traffic rose sharply.",
        "Check which clients and commands grew (Commandstats, Clients).",
        lambda s: _up(s, *_OPS, *_NETWORK),
    ),
    _rule(
        "traffic_drop",
        "Commands, clients or traffic fell sharply: clients may have lost the instance.",
        "Check the application side: deploys, network paths, DNS.",
        lambda s: _down(s, *_OPS, *_NETWORK, "connected_clients"),
    ),
    _rule(
        "replication_lag",
        "A replica fell behind its primary.",
        "Check the replica's network and load, and the primary's replication backlog.",
        lambda s: _up(s, "replication_offset_lag", "master_last_io"),
    ),
    _rule(
        "cpu_saturation",
        "CPU use rose sharply.",
        "Look for slow or expensive commands (Slow Log, Commandstats) and forks.",
        lambda s: _up(s, "cpu_sys", "cpu_user", "latest_fork_usec"),
    ),
    _rule(
        "data_loss",
        "The number of keys fell sharply.",
        "Check for FLUSHALL/FLUSHDB, a restart without persistence, or mass deletes.",
        lambda s: _down(s, "keys"),
    ),
)
UNKNOWN = Pattern(
    "unknown",
    "Unusual values without a known pattern.",
    "Open the metrics around this time and compare with the connection's normal.",
)


def match(detections: list[Detection]) -> Pattern:
    seen: Seen = {}
    for d in detections:
        seen.setdefault(d.metric, d.kind)
    for rule in PATTERNS:
        if rule.holds(seen):
            return rule.pattern
    return UNKNOWN
