"""The per-metric z-score detectors and the rule detectors, per connection.

Every INFO observation (polled or pushed; a field a push does not send is skipped) is
read into one value per metric: gauges as read, counters as a per-second rate between
this observation and the previous one (a counter going backwards is a restart: that
sample is skipped), and the keyspace hit ratio from the deltas of hits and misses.

Each value is judged against the rolling baseline of the samples *before* it, then joins
the window (detection/window.py, 300 samples: five minutes at the default 1 s poll). Until
30 samples are in the window the buffer is warming up and nothing is judged.

    z = (x - mean) / max(stddev, floor_abs, floor_rel * |mean|)

Severity from |z| (per metric, see METRICS): warning at `warning_z` (3 by default),
critical at `critical_z` (5 by default). The peer uses 2 / 3 on the raw stddev; with
its 3-sample rule that fires on plain Gaussian noise about once an hour per metric, and
on any steady metric (stddev ~0) at the first wobble. The floors make a change also
matter in absolute units (1 MiB of memory, 100 ops/s, 5 clients ...) and relative to the
mean. A detection needs `consecutive` qualifying samples in the same direction; after it
fires, that metric is quiet for its cooldown. Drops count only for metrics where a fall
is news (ops, clients, network, hit ratio, keys).

Rule detectors (no baseline) live in rules.py: master link, role change (failover),
client lockout, data loss, a stuck persistence child, memory overhead.
"""

import math

from svc_monitor.detection.anomaly.models import (
    READY_AT,
    WINDOW,
    BufferState,
    Detection,
    Kind,
    MetricSpec,
    Severity,
)
from svc_monitor.detection.anomaly.rules import RULES, RuleDetectors, total_keys
from svc_monitor.detection.window import RollingWindow
from svc_monitor.engine.info import FieldValue, ParsedInfo, parse_subfields

__all__ = [
    "METRICS",
    "READY_AT",
    "RULES",
    "WINDOW",
    "ConnectionDetectors",
    "MetricBuffer",
    "judge",
]

MIB = 1024 * 1024


def _field(section: str, name: str) -> "FieldReader":
    return FieldReader(section, name)


class FieldReader:
    """One numeric INFO field (a class, not a lambda, so the table prints readably)."""

    __slots__ = ("name", "section")

    def __init__(self, section: str, name: str) -> None:
        self.section = section
        self.name = name

    def __call__(self, info: ParsedInfo) -> float | None:
        return info.get_float(self.section, self.name)


def _acl_denied(info: ParsedInfo) -> float | None:
    values = [
        info.get_float("stats", f"acl_access_denied_{what}")
        for what in ("auth", "cmd", "key", "channel")
    ]
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _cpu(name: str) -> "FieldReader":
    return FieldReader("cpu", name)


def _replication_offset_lag(info: ParsedInfo) -> float | None:
    """Bytes the furthest-behind replica is behind its primary; a primary with replicas only."""
    if info.get_int("replication", "connected_slaves") in (None, 0):
        return None
    offset = info.get_float("replication", "master_repl_offset")
    section = info.sections.get("replication")
    if offset is None or section is None:
        return None
    offsets = [
        o
        for name, value in section.items()
        if name.startswith("slave") and name[5:].isdigit() and (o := _offset_of(value)) is not None
    ]
    return max(0.0, offset - min(offsets)) if offsets else None


def _offset_of(value: FieldValue) -> float | None:
    fields = value if isinstance(value, dict) else parse_subfields(str(value))
    offset = fields.get("offset")
    return float(offset) if isinstance(offset, int) else None


# The z-score metrics. Floors are in the metric's own unit (per second for rates).
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("memory_used", _field("memory", "used_memory"), floor_abs=MIB, floor_rel=0.02),
    MetricSpec("memory_rss", _field("memory", "used_memory_rss"), floor_abs=MIB, floor_rel=0.02),
    MetricSpec(
        "fragmentation",
        _field("memory", "mem_fragmentation_ratio"),
        consecutive=5,
        cooldown_ms=120_000,
        floor_abs=0.1,
        floor_rel=0.0,
    ),
    MetricSpec(
        "ops_per_sec",
        _field("stats", "instantaneous_ops_per_sec"),
        drops=True,
        floor_abs=100,
        floor_rel=0.2,
    ),
    MetricSpec(
        "commands_rate",
        _field("stats", "total_commands_processed"),
        "rate",
        floor_abs=100,
        floor_rel=0.2,
    ),
    MetricSpec(
        "connected_clients",
        _field("clients", "connected_clients"),
        drops=True,
        floor_abs=5,
        floor_rel=0.1,
    ),
    MetricSpec("blocked_clients", _field("clients", "blocked_clients"), floor_abs=2, floor_rel=0.2),
    MetricSpec(
        "rejected_connections",
        _field("stats", "rejected_connections"),
        "rate",
        consecutive=1,
        cooldown_ms=30_000,
        floor_abs=0.5,
    ),
    MetricSpec(
        "connections_received",
        _field("stats", "total_connections_received"),
        "rate",
        floor_abs=5,
        floor_rel=0.2,
    ),
    MetricSpec(
        "evictions",
        _field("stats", "evicted_keys"),
        "rate",
        consecutive=2,
        cooldown_ms=30_000,
        floor_abs=1,
        floor_rel=0.2,
    ),
    MetricSpec("expirations", _field("stats", "expired_keys"), "rate", floor_abs=50, floor_rel=0.3),
    MetricSpec(
        "keyspace_misses", _field("stats", "keyspace_misses"), "rate", floor_abs=50, floor_rel=0.3
    ),
    MetricSpec(
        "hit_ratio",
        _field("stats", "keyspace_hits"),  # with keyspace_misses: see ConnectionDetectors
        "ratio",
        drops=True,
        spikes=False,
        floor_abs=0.05,
        floor_rel=0.0,
    ),
    MetricSpec(
        "network_in",
        _field("stats", "total_net_input_bytes"),
        "rate",
        drops=True,
        floor_abs=64 * 1024,
        floor_rel=0.2,
    ),
    MetricSpec(
        "network_out",
        _field("stats", "total_net_output_bytes"),
        "rate",
        drops=True,
        floor_abs=64 * 1024,
        floor_rel=0.2,
    ),
    # CPU seconds per second x 100: percent of one core.
    MetricSpec("cpu_sys", _cpu("used_cpu_sys"), "rate", floor_abs=0.05, floor_rel=0.2),
    MetricSpec("cpu_user", _cpu("used_cpu_user"), "rate", floor_abs=0.05, floor_rel=0.2),
    MetricSpec("replication_offset_lag", _replication_offset_lag, floor_abs=MIB, floor_rel=0.2),
    MetricSpec(
        "master_last_io",
        _field("replication", "master_last_io_seconds_ago"),
        floor_abs=5,
        floor_rel=0.0,
    ),
    MetricSpec(
        "error_replies", _field("stats", "total_error_replies"), "rate", floor_abs=1, floor_rel=0.2
    ),
    MetricSpec("acl_denied", _acl_denied, "rate", consecutive=1, cooldown_ms=30_000, floor_abs=0.5),
    MetricSpec("keys", total_keys, drops=True, floor_abs=100, floor_rel=0.1),
    MetricSpec(
        "output_buffer",
        _field("clients", "client_recent_max_output_buffer"),
        floor_abs=MIB,
        floor_rel=0.2,
    ),
    MetricSpec("latest_fork_usec", _field("stats", "latest_fork_usec"), floor_abs=10_000),
)


class MetricBuffer(RollingWindow):
    """The rolling window of one metric (WINDOW values, READY_AT to judge) and its
    firing state: the run of qualifying samples, and the cooldown after a detection."""

    __slots__ = ("cooldown_until", "run", "run_kind")

    def __init__(self) -> None:
        super().__init__(size=WINDOW, ready_at=READY_AT)
        self.run = 0  # consecutive qualifying samples
        self.run_kind: Kind = "spike"
        self.cooldown_until = 0

    def state(self, metric: str) -> BufferState:
        n = len(self.values)
        if not n:
            return BufferState(metric, 0, False, None, None)
        mean, stddev = self.stats()
        return BufferState(metric, n, n >= READY_AT, mean, stddev)


class ConnectionDetectors:
    """Every detector of one connection: the metrics' buffers and the rules' state."""

    def __init__(self, connection_id: str) -> None:
        self.connection_id = connection_id
        self.buffers: dict[str, MetricBuffer] = {spec.name: MetricBuffer() for spec in METRICS}
        # Each metric with its buffer, looked up once rather than on every observation.
        self._plan = [(spec, self.buffers[spec.name], spec.reading == "gauge") for spec in METRICS]
        self._previous: dict[str, float] = {}
        self._previous_at = 0
        self.rules = RuleDetectors(connection_id)

    def observe(self, info: ParsedInfo, at_ms: int) -> list[Detection]:
        found: list[Detection] = []
        elapsed_s = (at_ms - self._previous_at) / 1000 if self._previous_at else 0.0
        previous, current = self._previous, {}
        connection_id = self.connection_id
        for spec, buffer, gauge in self._plan:
            raw = spec.read(info)
            if raw is None:
                continue
            if gauge:
                value: float | None = raw
            else:
                current[spec.name] = raw
                value = self._derived(spec, raw, previous, current, info, elapsed_s)
            if value is not None:
                detection = judge(connection_id, spec.name, spec, buffer, value, at_ms)
                if detection is not None:
                    found.append(detection)
        self._previous = current
        self._previous_at = at_ms
        self.rules.observe(info, at_ms, found)
        return found

    @staticmethod
    def _derived(
        spec: MetricSpec,
        raw: float,
        previous: dict[str, float],
        current: dict[str, float],
        info: ParsedInfo,
        elapsed_s: float,
    ) -> float | None:
        before = previous.get(spec.name)
        if spec.reading == "ratio":
            misses = info.get_float("stats", "keyspace_misses")
            if misses is None:
                return None
            current["hit_ratio:misses"] = misses
            misses_before = previous.get("hit_ratio:misses")
            if before is None or misses_before is None:
                return None
            hits, missed = raw - before, misses - misses_before
            # Under 10 lookups between two polls the ratio is noise, not a signal.
            return (
                hits / (hits + missed)
                if hits >= 0 and missed >= 0 and hits + missed >= 10
                else None
            )
        if before is None or elapsed_s <= 0 or raw < before:
            return None  # first sample, or the counter went back (a restart)
        rate = (raw - before) / elapsed_s
        return rate * 100 if spec.name.startswith("cpu_") else rate

    def buffer_states(self) -> list[BufferState]:
        return [self.buffers[spec.name].state(spec.name) for spec in METRICS]


def judge(
    connection_id: str,
    metric: str,
    spec: MetricSpec,
    buffer: MetricBuffer,
    value: float,
    at_ms: int,
) -> Detection | None:
    """`value` against the buffer's baseline by `spec`'s rule, then added to the buffer.

    Almost every sample is ordinary, so that path compares squares, |value - mean|^2
    against (warning_z * sigma)^2, and takes no square root: on the INFO detectors'
    24 metrics a sample this cost about a fifth less (bench/detectors.py).
    """
    before = buffer.take(value)
    if before is None:
        return None
    mean, variance = before
    if at_ms < buffer.cooldown_until:
        return None
    # max() written out: two builtin calls per sample were a tenth of this function.
    floor = spec.floor_rel * (mean if mean >= 0.0 else -mean)
    if floor < spec.floor_abs:
        floor = spec.floor_abs
    floor_sq = floor * floor
    sigma_sq = variance if variance > floor_sq else floor_sq
    deviation = value - mean
    if sigma_sq <= 0 or deviation * deviation < spec.warning_z * spec.warning_z * sigma_sq:
        buffer.run = 0
        return None
    kind: Kind = "spike" if deviation > 0 else "drop"
    if not (spec.drops if kind == "drop" else spec.spikes):
        buffer.run = 0
        return None
    stddev = math.sqrt(variance)
    z = deviation / math.sqrt(sigma_sq)
    buffer.run = buffer.run + 1 if buffer.run_kind == kind else 1
    buffer.run_kind = kind
    if buffer.run < spec.consecutive:
        return None
    buffer.run = 0
    buffer.cooldown_until = at_ms + spec.cooldown_ms
    severity: Severity = "critical" if abs(z) >= spec.critical_z else "warning"
    return Detection(
        connection_id=connection_id,
        metric=metric,
        kind=kind,
        severity=severity,
        value=value,
        baseline=mean,
        stddev=stddev,
        z_score=z,
        threshold=spec.warning_z,
        at_ms=at_ms,
        message=_message(metric, kind, severity, value, mean, z),
    )


def _message(
    metric: str, kind: Kind, severity: Severity, value: float, mean: float, z: float
) -> str:
    if mean:
        change = (
            f"{abs(value - mean) / abs(mean):.0%} {'above' if kind == 'spike' else 'below'} normal"
        )
    else:
        change = "from a baseline of 0"
    return (
        f"{severity.upper()}: {metric} {kind} detected. Value: {_short(value)}, "
        f"Baseline: {_short(mean)} ({change}, Z-score: {z:.2f})"
    )


def _short(value: float) -> str:
    size = abs(value)
    if size >= 1e9:
        return f"{value / 1e9:.2f}G"
    if size >= 1e6:
        return f"{value / 1e6:.2f}M"
    if size >= 1e3:
        return f"{value / 1e3:.1f}K"
    return f"{value:.2f}"
