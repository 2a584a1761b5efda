"""The rule detectors of one connection: facts judged against fixed levels or the previous
observation, not against a rolling baseline.

- master_link: a replica's link to its primary went down (critical).
- role_change: primary -> replica is a failover starting (critical, `failover.started`);
  replica -> primary is a promotion, the failover's end (warning, `failover.completed`).
  The peer grades the same way. Roles are named primary/replica in the events.
- client_lockout: clients at 85 % of maxclients for 3 observations in a row (warning;
  critical at 95 %).
- data_loss (critical, `data.loss.detected`; valkey-io/valkey#579, where a primary
  without persistence restarted empty and its replicas synced the empty dataset). Never
  judged while `loading` or `async_loading` is 1 (the dataset is still arriving; the
  snapshot before the load is kept). Rule A `primary_restarted_empty`: a primary that
  is still a primary, had keys, now has 0, and restarted (run_id or master_replid
  changed, uptime or master_repl_offset went down); a FLUSHALL without a restart is the
  `keys` z-score's drop, not this. Rule B `replica_wiped`: a replica that is still a
  replica, whose master_replid changed (a full sync from a new history), had keys and
  now has 0 or at most 10 % of them.
- persistence_child: a BGSAVE or AOF rewrite child whose progress (current_fork_perc,
  current_save_keys_processed) has not moved for 60 s (critical), or that has run for
  120 s (warning) / 600 s (critical) by rdb_current_bgsave_time_sec /
  aof_current_rewrite_time_sec. Each fires once per child (the episode ends when no
  child is in progress).
- memory_overhead: used_memory_overhead (server structures, client and replication
  buffers, the keyspace's hash tables) as a share of used_memory, once used_memory is
  64 MiB or more (below that the server's startup memory dominates: an empty Valkey 9.1
  or Redis 7.0 is 70-85 % overhead). Warning at 75 %, critical at 90 %: on Valkey 9.1
  a dataset of millions of tiny values (DEBUG POPULATE, 1-10 bytes, with or without
  TTLs, 55-155 MiB) measured 52-59 %, 200-byte values 12 %, so three quarters means
  buffers are piling up (slow pub/sub consumers, MONITOR, a replica's output buffer, a
  big replication backlog). Fires when the share climbs into a level; re-arms under 70 %.

Every rule that can repeat is quiet for RULE_COOLDOWN_MS after it fires.
"""

from dataclasses import asdict, dataclass, replace
from typing import Any

from svc_monitor.detection.anomaly.models import Detection, Kind, Severity
from svc_monitor.engine.info import ParsedInfo, parse_subfields
from svc_monitor.event_types.detection import DataLossDetected, FailoverCompleted, FailoverStarted
from svc_monitor.events import InstanceEvent

RULES = (
    "master_link",
    "role_change",
    "client_lockout",
    "data_loss",
    "persistence_child",
    "memory_overhead",
)
RULE_COOLDOWN_MS = 60_000
LOCKOUT_WARNING = 0.85
LOCKOUT_CRITICAL = 0.95
LOCKOUT_CONSECUTIVE = 3
WIPED_SHARE = 0.10  # a replica left with this share of its keys or less was wiped
STALL_MS = 60_000  # a fork child's progress frozen this long is stuck
CHILD_WARNING_S = 120
CHILD_CRITICAL_S = 600
OVERHEAD_MIN_USED = 64 * 1024 * 1024
OVERHEAD_WARNING = 0.75
OVERHEAD_CRITICAL = 0.90
OVERHEAD_REARM = 0.70
_ROLES = {"master": "primary", "slave": "replica", "replica": "replica"}
_RANK: dict[Severity | None, int] = {None: 0, "warning": 1, "critical": 2}


def total_keys(info: ParsedInfo) -> float | None:
    """Keys over every database; None when INFO has no keyspace section (a push without it)."""
    section = info.sections.get("keyspace")
    if section is None:
        return None
    total = 0
    for value in section.values():
        fields = value if isinstance(value, dict) else parse_subfields(str(value))
        keys = fields.get("keys")
        if isinstance(keys, int):
            total += keys
    return float(total)


@dataclass(frozen=True, slots=True)
class _Dataset:
    """What data_loss compares between two observations."""

    role: str
    keys: int
    run_id: str | None
    replid: str | None
    uptime: float | None
    offset: float | None


@dataclass(slots=True)
class _Child:
    """One fork child (BGSAVE or AOF rewrite) while it runs."""

    progress: tuple[float | None, float | None]
    progress_since_ms: int
    stall_fired: bool = False
    elapsed_fired: Severity | None = None


class RuleDetectors:
    """The rule detectors' state for one connection."""

    __slots__ = (
        "_child",
        "_connection_id",
        "_cooldown",
        "_dataset",
        "_link_up",
        "_lockout_run",
        "_overhead_fired",
        "_role",
    )

    def __init__(self, connection_id: str) -> None:
        self._connection_id = connection_id
        self._role: str | None = None
        self._link_up: bool | None = None
        self._lockout_run = 0
        self._cooldown: dict[str, int] = {}
        self._dataset: _Dataset | None = None
        self._child: _Child | None = None
        self._overhead_fired: Severity | None = None

    def carried(self) -> dict[str, Any]:
        """What another replica needs to carry on judging (anomaly/baselines.py): the role
        and link last seen, the dataset data loss compares with, the cooldowns."""
        return {
            "role": self._role,
            "linkUp": self._link_up,
            "cooldown": dict(self._cooldown),
            "overheadFired": self._overhead_fired,
            "dataset": asdict(self._dataset) if self._dataset is not None else None,
        }

    def carry_on(self, state: dict[str, Any]) -> None:
        """Take up `carried()` from another replica (already checked by its reader)."""
        self._role = state["role"]
        self._link_up = state["linkUp"]
        self._cooldown = dict(state["cooldown"])
        self._overhead_fired = state["overheadFired"]
        dataset = state["dataset"]
        self._dataset = _Dataset(**dataset) if dataset is not None else None

    def observe(self, info: ParsedInfo, at_ms: int, found: list[Detection]) -> None:
        role = info.get_str("replication", "role")
        self._role_change(role, at_ms, found)
        self._master_link(info, at_ms, found)
        self._lockout(info, at_ms, found)
        self._data_loss(info, role, at_ms, found)
        self._persistence_child(info, at_ms, found)
        self._memory_overhead(info, at_ms, found)

    def _role_change(self, role: str | None, at_ms: int, found: list[Detection]) -> None:
        if role is None:
            return
        before, self._role = self._role, role
        if before is None or role == before:
            return
        previous, new = _ROLES.get(before, before), _ROLES.get(role, role)
        notice: InstanceEvent | None = None
        severity: Severity = "critical"
        what = f"role {before} -> {role}"
        if (previous, new) == ("primary", "replica"):
            what += ": failover started"
            notice = FailoverStarted(
                connection_id=self._connection_id, at_ms=at_ms, previous_role=previous, new_role=new
            )
        elif (previous, new) == ("replica", "primary"):
            severity, what = "warning", what + ": promoted, failover completed"
            notice = FailoverCompleted(
                connection_id=self._connection_id, at_ms=at_ms, previous_role=previous, new_role=new
            )
        found.append(self._fire("role_change", severity, at_ms, what, notice=notice))

    def _master_link(self, info: ParsedInfo, at_ms: int, found: list[Detection]) -> None:
        status = info.get_str("replication", "master_link_status")
        link_up = None if status is None else status == "up"
        if self._link_up and link_up is False:
            what = "master link went down"
            found.append(self._fire("master_link", "critical", at_ms, what, 0.0, kind="drop"))
        self._link_up = link_up

    def _lockout(self, info: ParsedInfo, at_ms: int, found: list[Detection]) -> None:
        connected = info.get_float("clients", "connected_clients")
        maxclients = info.get_float("clients", "maxclients")
        if connected is None or not maxclients:
            return
        share = connected / maxclients
        self._lockout_run = self._lockout_run + 1 if share >= LOCKOUT_WARNING else 0
        if self._lockout_run >= LOCKOUT_CONSECUTIVE and self._cool("client_lockout", at_ms):
            severity: Severity = "critical" if share >= LOCKOUT_CRITICAL else "warning"
            text = f"{connected:.0f} of {maxclients:.0f} clients ({share:.0%})"
            found.append(self._fire("client_lockout", severity, at_ms, text, share))
            self._lockout_run = 0

    def _data_loss(
        self, info: ParsedInfo, role: str | None, at_ms: int, found: list[Detection]
    ) -> None:
        if info.is_carried("persistence") or info.is_carried("server"):
            # Judged on full INFO reads (every fullInfoIntervalMs): the loading flag, run id
            # and uptime must be as fresh as the key count they qualify
            # (docs/features/polling-and-history.md#info-cadence).
            return
        if info.get_int("persistence", "loading") or info.get_int("persistence", "async_loading"):
            return  # the dataset is still arriving: keep the snapshot from before the load
        keys = total_keys(info)
        if keys is None or role is None:
            return
        now = _Dataset(
            role=role,
            keys=int(keys),
            run_id=info.get_str("server", "run_id"),
            replid=info.get_str("replication", "master_replid"),
            uptime=info.get_float("server", "uptime_in_seconds"),
            offset=info.get_float("replication", "master_repl_offset"),
        )
        before, self._dataset = self._dataset, now
        if before is None or before.keys <= 0 or before.role != now.role:
            return
        replid_changed = _changed(before.replid, now.replid)
        kind: str | None = None  # which rule, A or B
        if now.role == "master" and now.keys == 0 and _restarted(before, now, replid_changed):
            kind = "primary_restarted_empty"
        elif now.role == "slave" and replid_changed and now.keys <= before.keys * WIPED_SHARE:
            kind = "replica_wiped"
        if kind is None:
            return
        notice = DataLossDetected(
            connection_id=self._connection_id,
            at_ms=at_ms,
            kind=kind,
            previous_keys=before.keys,
            current_keys=now.keys,
            previous_replid=before.replid,
            new_replid=now.replid,
            connected_slaves=info.get_int("replication", "connected_slaves"),
            role=_ROLES.get(now.role, now.role),
        )
        what = f"{kind}: {before.keys} keys -> {now.keys}"
        detection = self._fire("data_loss", "critical", at_ms, what, now.keys, kind="drop")
        found.append(replace(detection, notice=notice))

    def _persistence_child(self, info: ParsedInfo, at_ms: int, found: list[Detection]) -> None:
        if info.is_carried("persistence"):
            return  # judged on full reads: its thresholds are minutes long
        rdb = info.get_int("persistence", "rdb_bgsave_in_progress")
        aof = info.get_int("persistence", "aof_rewrite_in_progress")
        if not rdb and not aof:
            self._child = None  # no child (or no such fields): the next one starts afresh
            return
        name = "BGSAVE" if rdb else "AOF rewrite"
        elapsed_field = "rdb_current_bgsave_time_sec" if rdb else "aof_current_rewrite_time_sec"
        elapsed = info.get_float("persistence", elapsed_field) or 0.0
        progress = (
            info.get_float("persistence", "current_fork_perc"),
            info.get_float("persistence", "current_save_keys_processed"),
        )
        child = self._child
        if child is None or child.progress != progress:
            # the first sight of this child, or it moved on
            stall_fired = child.stall_fired if child is not None else False
            elapsed_fired = child.elapsed_fired if child is not None else None
            child = self._child = _Child(progress, at_ms, stall_fired, elapsed_fired)
        frozen_ms = at_ms - child.progress_since_ms
        stalled = progress != (None, None) and frozen_ms >= STALL_MS and not child.stall_fired
        level: Severity | None = (
            "critical"
            if elapsed >= CHILD_CRITICAL_S
            else "warning"
            if elapsed >= CHILD_WARNING_S
            else None
        )
        longer = _RANK[level] > _RANK[child.elapsed_fired]
        if not stalled and not longer:
            return
        if longer:
            child.elapsed_fired = level
        if stalled:
            child.stall_fired = True
            what = f"{name} child made no progress for {frozen_ms // 1000} s ({elapsed:.0f} s in)"
            found.append(self._fire("persistence_child", "critical", at_ms, what, elapsed))
            return
        assert level is not None
        what = f"{name} child running for {elapsed:.0f} s"
        found.append(self._fire("persistence_child", level, at_ms, what, elapsed))

    def _memory_overhead(self, info: ParsedInfo, at_ms: int, found: list[Detection]) -> None:
        used = info.get_float("memory", "used_memory")
        overhead = info.get_float("memory", "used_memory_overhead")
        if used is None or overhead is None or used < OVERHEAD_MIN_USED:
            return
        share = overhead / used
        if share < OVERHEAD_REARM:
            self._overhead_fired = None
            return
        level: Severity | None = (
            "critical"
            if share >= OVERHEAD_CRITICAL
            else "warning"
            if share >= OVERHEAD_WARNING
            else None
        )
        if _RANK[level] <= _RANK[self._overhead_fired] or not self._cool("memory_overhead", at_ms):
            return
        assert level is not None
        self._overhead_fired = level
        what = f"overhead is {share:.0%} of used memory ({overhead / 2**20:.0f} MiB)"
        found.append(self._fire("memory_overhead", level, at_ms, what, share))

    def _cool(self, metric: str, at_ms: int) -> bool:
        return at_ms >= self._cooldown.get(metric, 0)

    def _fire(
        self,
        metric: str,
        severity: Severity,
        at_ms: int,
        what: str,
        value: float = 1.0,
        *,
        kind: Kind = "spike",
        notice: InstanceEvent | None = None,
    ) -> Detection:
        self._cooldown[metric] = at_ms + RULE_COOLDOWN_MS
        return Detection(
            connection_id=self._connection_id,
            metric=metric,
            kind=kind,
            severity=severity,
            value=value,
            baseline=0.0,
            stddev=0.0,
            z_score=0.0,
            threshold=0.0,
            at_ms=at_ms,
            message=f"{severity.upper()}: {metric}: {what}",
            notice=notice,
        )


def _changed(before: str | None, now: str | None) -> bool:
    return before is not None and now is not None and before != now


def _restarted(before: _Dataset, now: _Dataset, replid_changed: bool) -> bool:
    def went_down(a: float | None, b: float | None) -> bool:
        return a is not None and b is not None and b < a

    return (
        _changed(before.run_id, now.run_id)
        or replid_changed
        or went_down(before.uptime, now.uptime)
        or went_down(before.offset, now.offset)
    )
