"""Detectors on the facts polls other than INFO hand to the pipe (pipe/facts.py):
the slow log, the latency monitor, commandstats and CLUSTER INFO.

They reach anomaly detection as facts through the pipe (anomaly detection is one of its
facts consumers), so a pushed connection's commandstats is judged like a polled one's.
Each source keeps its own clock: a value is a rate over the time between two reads of
that source, and the 300-sample window spans 300 reads of it (50 minutes of slow log at
the default 10 s, 75 of commandstats at 15 s, 2.5 h of latency at 30 s; ready after 30
reads).

z-score metrics (the rule of detectors.py, spikes only):

- slowlog_growth: new slow log entries per second, from the newest entry's id (ids only
  grow while the server runs; a lower id is a restart and that read is skipped; a log
  that was empty counts SLOWLOG LEN). Floor 0.5/s: five new entries in a 10 s read
  against a quiet baseline is not news, fifteen is. Fires on one read (the peer's
  choice too): a burst of slow commands rarely lasts two reads.
- latency_spike: the highest latest_ms of the LATENCY LATEST events whose spike time
  moved since the last read, 0 when none did. Floor 10 ms, so against a quiet baseline
  30 ms is a warning and 50 ms critical. The latency monitor only records events over
  latency-monitor-threshold, so with it off (the default) this never has anything.
- cmd_calls:<command>: calls per second of each command. Floor 20/s and 50 % of the
  mean: a command must more than double and add 60 calls/s to be a warning.
- cmd_usec:<command>: microseconds per call over the interval (usec and calls deltas,
  not INFO's lifetime usec_per_call, which a long-running server barely moves). Judged
  only when the interval had MIN_CALLS calls; floor 20 us and 50 % of the mean. Two
  reads in a row for both per-command metrics.
  At most MAX_COMMANDS commands per connection are followed (the first seen), so a
  server with a long tail of module commands costs a bounded amount. Names are cut to
  fit the stored metric column (32 characters).

Rule (no baseline) on CLUSTER INFO:

- cluster_state: `cluster_state` ok -> fail is critical (a drop), fail -> ok a warning
  (the recovery); slots on nodes suspected down (`cluster_slots_pfail` from 0 to more)
  a warning. The first read only sets the starting point. `cluster.failover` is
  published by detection/cluster_state.py from the same reads, so nothing here does.
"""

from dataclasses import dataclass

from svc_monitor.detection.anomaly.detectors import MetricBuffer, judge
from svc_monitor.detection.anomaly.models import BufferState, Detection, Kind, MetricSpec, Severity
from svc_monitor.detection.anomaly.rules import RULE_COOLDOWN_MS
from svc_monitor.engine.info import ParsedInfo, parse_subfields
from svc_monitor.pipe.facts import (
    ClusterFacts,
    CommandstatsFacts,
    Facts,
    LatencyFacts,
    SlowlogFacts,
)

MAX_COMMANDS = 64
MIN_CALLS = 20
METRIC_NAME_LIMIT = 32
_CMDSTAT = "cmdstat_"


def _from_feed(_: ParsedInfo) -> float | None:
    """These metrics are read by feeds.py from other polls' facts, never from INFO."""
    return None


SLOWLOG_GROWTH = MetricSpec(
    "slowlog_growth", _from_feed, "rate", consecutive=1, cooldown_ms=30_000, floor_abs=0.5
)
LATENCY_SPIKE = MetricSpec(
    "latency_spike", _from_feed, consecutive=1, cooldown_ms=60_000, floor_abs=10, floor_rel=0.5
)
COMMAND_CALLS = MetricSpec(
    "cmd_calls", _from_feed, "rate", consecutive=2, cooldown_ms=120_000, floor_abs=20, floor_rel=0.5
)
COMMAND_USEC = MetricSpec(
    "cmd_usec", _from_feed, consecutive=2, cooldown_ms=120_000, floor_abs=20, floor_rel=0.5
)
FEED_METRICS = (SLOWLOG_GROWTH, LATENCY_SPIKE)


@dataclass(slots=True)
class _Command:
    """One followed command: its metric names (made once) and its last counters."""

    calls_metric: str
    usec_metric: str
    at_ms: int = 0
    calls: int = -1  # -1: not read yet
    usec: int = 0


class FeedDetectors:
    """The slow log, latency, commandstats and cluster detectors of one connection."""

    def __init__(self, connection_id: str) -> None:
        self.connection_id = connection_id
        self.buffers: dict[str, MetricBuffer] = {}
        self._slowlog: tuple[int, int | None] | None = None  # (at_ms, newest id)
        self._latency_seen: dict[str, int] | None = None  # event -> latest spike (s)
        self._commands: dict[str, _Command] = {}  # by INFO field name (cmdstat_get)
        self._cluster: tuple[str, int] | None = None  # (cluster_state, slots pfail)
        self._pfail_quiet_until = 0

    def observe(self, facts: Facts) -> list[Detection]:
        if isinstance(facts, SlowlogFacts):
            return self._slowlog_read(facts)
        if isinstance(facts, CommandstatsFacts):
            return self._commandstats_read(facts)
        if isinstance(facts, LatencyFacts):
            return self._latency_read(facts)
        if isinstance(facts, ClusterFacts):
            return self._cluster_read(facts)
        return []

    def _judge(self, spec: MetricSpec, metric: str, value: float, at_ms: int) -> list[Detection]:
        buffer = self.buffers.get(metric)
        if buffer is None:
            buffer = self.buffers[metric] = MetricBuffer()
        found = judge(self.connection_id, metric, spec, buffer, value, at_ms)
        return [found] if found is not None else []

    def _slowlog_read(self, facts: SlowlogFacts) -> list[Detection]:
        before, self._slowlog = self._slowlog, (facts.at_ms, facts.last_id)
        if before is None or facts.at_ms <= before[0]:
            return []
        before_at, before_id = before
        if facts.last_id is None:
            new = 0
        elif before_id is None:  # the log was empty (new server or SLOWLOG RESET)
            new = facts.length if facts.length is not None else 1
        elif facts.last_id < before_id:
            return []  # restarted: ids start again
        else:
            new = facts.last_id - before_id
        rate = new / ((facts.at_ms - before_at) / 1000)
        return self._judge(SLOWLOG_GROWTH, SLOWLOG_GROWTH.name, rate, facts.at_ms)

    def _latency_read(self, facts: LatencyFacts) -> list[Detection]:
        latest = {e.name: e.latest_at_s for e in facts.events}
        seen, self._latency_seen = self._latency_seen, latest
        if seen is None:
            return []
        worst = max(
            (e.latest_ms for e in facts.events if e.latest_at_s > seen.get(e.name, -1)),
            default=0,
        )
        return self._judge(LATENCY_SPIKE, LATENCY_SPIKE.name, float(worst), facts.at_ms)

    def _commandstats_read(self, facts: CommandstatsFacts) -> list[Detection]:
        section = facts.info.sections.get("commandstats")
        if section is None:
            return []
        found: list[Detection] = []
        at_ms = facts.at_ms
        commands = self._commands
        for name, value in section.items():
            command = commands.get(name)
            if command is None:
                if not name.startswith(_CMDSTAT) or len(commands) >= MAX_COMMANDS:
                    continue
                label = name[len(_CMDSTAT) :].lower()[: METRIC_NAME_LIMIT - len("cmd_calls:")]
                command = commands[name] = _Command(f"cmd_calls:{label}", f"cmd_usec:{label}")
            fields = value if isinstance(value, dict) else parse_subfields(str(value))
            calls, usec = fields.get("calls"), fields.get("usec")
            if not isinstance(calls, int) or not isinstance(usec, int):
                continue  # pushed without cmd.usec: no time per call to judge
            before_at, before_calls, before_usec = command.at_ms, command.calls, command.usec
            command.at_ms, command.calls, command.usec = at_ms, calls, usec
            if before_calls < 0 or at_ms <= before_at or calls < before_calls:
                continue  # first read, or a restart / CONFIG RESETSTAT
            new_calls, new_usec = calls - before_calls, usec - before_usec
            rate = new_calls / ((at_ms - before_at) / 1000)
            found += self._judge(COMMAND_CALLS, command.calls_metric, rate, at_ms)
            if new_calls >= MIN_CALLS and new_usec >= 0:
                per_call = new_usec / new_calls
                found += self._judge(COMMAND_USEC, command.usec_metric, per_call, at_ms)
        return found

    def _cluster_read(self, facts: ClusterFacts) -> list[Detection]:
        state, pfail = facts.info.get("cluster_state"), facts.info.get("cluster_slots_pfail")
        if not isinstance(state, str) or not isinstance(pfail, int):
            return []  # not a cluster, or CLUSTER INFO refused
        before, self._cluster = self._cluster, (state, pfail)
        if before is None:
            return []
        before_state, before_pfail = before
        at_ms = facts.at_ms
        if before_state == "ok" and state != "ok":
            failed = facts.info.get("cluster_slots_fail", 0)
            return [
                self._rule(
                    "critical",
                    "drop",
                    at_ms,
                    f"CRITICAL: cluster state is {state} ({failed} slots failed): "
                    "some keys cannot be served.",
                )
            ]
        if before_state != "ok" and state == "ok":
            return [self._rule("warning", "spike", at_ms, "WARNING: cluster state is ok again.")]
        if state == "ok" and before_pfail == 0 and pfail > 0 and at_ms >= self._pfail_quiet_until:
            self._pfail_quiet_until = at_ms + RULE_COOLDOWN_MS
            return [
                self._rule(
                    "warning",
                    "drop",
                    at_ms,
                    f"WARNING: {pfail} slots are on nodes suspected down (PFAIL); "
                    "a failover may follow.",
                )
            ]
        return []

    def _rule(self, severity: Severity, kind: Kind, at_ms: int, message: str) -> Detection:
        return Detection(
            connection_id=self.connection_id,
            metric="cluster_state",
            kind=kind,
            severity=severity,
            value=0.0 if kind == "drop" else 1.0,
            baseline=1.0 if kind == "drop" else 0.0,
            stddev=0.0,
            z_score=0.0,
            threshold=0.0,
            at_ms=at_ms,
            message=message,
        )

    def buffer_states(self) -> list[BufferState]:
        return [self.buffers[name].state(name) for name in sorted(self.buffers)]
