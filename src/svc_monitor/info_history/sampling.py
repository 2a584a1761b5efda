"""Observation -> history rows, one sample per connection every HISTORY_SAMPLE_INTERVAL_MS.

INFO is read every second for live state and detectors; history keeps one sample
per interval (10 s by default: 8,640 rows a day per connection and table), which
is what charts over hours and weeks need. Rates that INFO gives as counters (CPU
seconds, keyspace hits) are turned into per-interval values from the previous sample.
"""

from dataclasses import dataclass
from typing import Any

from svc_monitor.engine.info import ParsedInfo
from svc_monitor.pipe.observation import Observation


@dataclass(slots=True)
class _Previous:
    at_ms: int
    cpu_sys: float | None
    cpu_user: float | None
    hits: int | None
    misses: int | None


class Sampler:
    """Decides when an observation becomes history, and what the rows hold."""

    def __init__(self, interval_ms: int) -> None:
        self._interval_ms = interval_ms
        self._previous: dict[str, _Previous] = {}

    def due(self, observation: Observation) -> bool:
        previous = self._previous.get(observation.connection_id)
        return previous is None or observation.received_at_ms - previous.at_ms >= self._interval_ms

    def rows(self, observation: Observation) -> tuple[dict[str, Any], dict[str, Any]]:
        """(memory snapshot, stats sample) for this observation; remembers it for rates."""
        info = observation.info
        previous = self._previous.get(observation.connection_id)
        cpu_sys = info.get_float("cpu", "used_cpu_sys")
        cpu_user = info.get_float("cpu", "used_cpu_user")
        hits = info.get_int("stats", "keyspace_hits")
        misses = info.get_int("stats", "keyspace_misses")
        elapsed_s = (observation.received_at_ms - previous.at_ms) / 1000 if previous else 0.0
        sys_percent = _rate_percent(cpu_sys, previous.cpu_sys if previous else None, elapsed_s)
        user_percent = _rate_percent(cpu_user, previous.cpu_user if previous else None, elapsed_s)
        self._previous[observation.connection_id] = _Previous(
            observation.received_at_ms, cpu_sys, cpu_user, hits, misses
        )
        base = {
            "connection_id": observation.connection_id,
            "captured_at": observation.received_at_ms,
        }
        memory = {
            **base,
            "used_memory": info.get_int("memory", "used_memory"),
            "used_memory_rss": info.get_int("memory", "used_memory_rss"),
            "used_memory_peak": info.get_int("memory", "used_memory_peak"),
            "mem_fragmentation_ratio": info.get_float("memory", "mem_fragmentation_ratio"),
            "maxmemory": info.get_int("memory", "maxmemory"),
            "allocator_frag_ratio": info.get_float("memory", "allocator_frag_ratio"),
            "ops_per_sec": info.get_int("stats", "instantaneous_ops_per_sec"),
            "cpu_sys_percent": sys_percent,
            "cpu_user_percent": user_percent,
            "io_threaded_reads": info.get_int("stats", "io_threaded_reads_processed"),
            "io_threaded_writes": info.get_int("stats", "io_threaded_writes_processed"),
        }
        if observation.pushed:
            # Pushed snapshots: maxmemory, ops/s and CPU read 0 when not pushed; every other
            # unpushed field stays null, a gap, not a zero
            # (docs/features/otlp-push-and-traces.md#pushed-data-through-the-pipe).
            for name in ("maxmemory", "ops_per_sec", "cpu_sys_percent", "cpu_user_percent"):
                if memory[name] is None:
                    memory[name] = 0
        keys, expires = _keyspace_totals(info)
        stats = {
            **base,
            "ops_per_sec": memory["ops_per_sec"],
            "connected_clients": info.get_int("clients", "connected_clients"),
            "blocked_clients": info.get_int("clients", "blocked_clients"),
            "used_memory": memory["used_memory"],
            "cpu_sys_percent": sys_percent,
            "cpu_user_percent": user_percent,
            "net_input_kbps": info.get_float("stats", "instantaneous_input_kbps"),
            "net_output_kbps": info.get_float("stats", "instantaneous_output_kbps"),
            "keyspace_hits": hits,
            "keyspace_misses": misses,
            "hit_ratio": _hit_ratio(hits, misses, previous),
            "keys": keys,
            "expires": expires,
            "evicted_keys": info.get_int("stats", "evicted_keys"),
            "expired_keys": info.get_int("stats", "expired_keys"),
            "connected_replicas": info.get_int("replication", "connected_slaves"),
            "repl_offset": info.get_int("replication", "master_repl_offset"),
            "role": info.get_str("replication", "role"),
        }
        return memory, stats

    def carry_on(
        self, connection_id: str, at_ms: int, hits: int | None, misses: int | None
    ) -> None:
        """Another replica stored this connection's last sample (at `at_ms`): the next one is
        due an interval after it, not at once, so a handover leaves the history evenly
        spaced. CPU rates start again at the sample after (its counters are not stored)."""
        if connection_id not in self._previous:
            self._previous[connection_id] = _Previous(at_ms, None, None, hits, misses)

    def forget(self, connection_id: str) -> None:
        self._previous.pop(connection_id, None)


def _rate_percent(now: float | None, before: float | None, elapsed_s: float) -> float | None:
    if now is None or before is None or elapsed_s <= 0 or now < before:
        return None
    return round((now - before) / elapsed_s * 100, 3)


def _hit_ratio(hits: int | None, misses: int | None, previous: _Previous | None) -> float | None:
    """Hits over lookups in the last interval (since start when there is no previous)."""
    if hits is None or misses is None:
        return None
    before_hits = previous.hits if previous is not None else None
    before_misses = previous.misses if previous is not None else None
    # Counters that went down mean a restart or CONFIG RESETSTAT: count from zero then.
    if (
        before_hits is not None
        and before_misses is not None
        and hits >= before_hits
        and misses >= before_misses
    ):
        hits, misses = hits - before_hits, misses - before_misses
    lookups = hits + misses
    return round(hits / lookups, 4) if lookups else None


def _keyspace_totals(info: ParsedInfo) -> tuple[int | None, int | None]:
    keyspace = info.sections.get("keyspace")
    if keyspace is None:
        return None, None
    keys = expires = 0
    for value in keyspace.values():
        if isinstance(value, dict):
            k, e = value.get("keys"), value.get("expires")
            keys += k if isinstance(k, int) else 0
            expires += e if isinstance(e, int) else 0
    return keys, expires
