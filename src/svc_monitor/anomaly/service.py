"""Anomaly detection (Pro): z-score and rule detectors on every INFO observation, their
detections correlated into groups, stored, and one `anomaly.detected` per group.

`observe` is a consumer of the pipe (pipe/pipe.py): synchronous and cheap, it runs the
connection's detectors (detection/anomaly/detectors.py) and puts what they find into the
connection's open correlation window. A window closes once an observation of the same connection is
CORRELATION_WINDOW_MS (5 s) past its latest detection (the peer counts from the first:
memory_rss trails used_memory by a few polls on a burst and became a second group of
one), or MAX_WINDOW_MS (30 s) past its first, or, when the connection went quiet, twice
the window in wall time. `flush` (every second, from `run`) stores each closed window
as one group with its events, and publishes one AnomalyDetected for it: webhooks and
OTLP logs get one event per group, never one per sample. A rule detection that is an
event of its own (failover.started/completed, data.loss.detected) is published as it is
found, beside its group's anomaly.detected.

Times are the observations' own (`received_at_ms`), so a test can feed recorded INFO
with a simulated clock. The Prometheus summary is rebuilt every
anomalyPrometheusIntervalMs; detections stay in memory for anomalyCacheTtlMs (the
`_current` families count the unresolved ones). ANOMALY_DETECTION_ENABLED=false or a
tier without anomaly detection: nothing is judged, and the routes answer 403/404.
"""

import asyncio
import contextlib
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from svc_monitor.anomaly import baselines
from svc_monitor.anomaly.baseline_store import BaselineStore
from svc_monitor.anomaly.correlation import CORRELATION_WINDOW_MS, match
from svc_monitor.anomaly.models import Window
from svc_monitor.anomaly.store import AnomalyStore
from svc_monitor.config import Settings
from svc_monitor.detection.anomaly.detectors import METRICS, ConnectionDetectors
from svc_monitor.detection.anomaly.feeds import FEED_METRICS, FeedDetectors
from svc_monitor.detection.anomaly.models import SEVERITY_RANK, BufferState, Detection
from svc_monitor.errors import NotFound
from svc_monitor.event_types.detection import AnomalyDetected
from svc_monitor.events import ConnectionsChanged, EventBus
from svc_monitor.pipe.facts import (
    ClusterFacts,
    CommandstatsFacts,
    Facts,
    LatencyFacts,
    SlowlogFacts,
)
from svc_monitor.pipe.observation import Observation
from svc_monitor.runtime_settings.service import RuntimeSettingsService

logger = logging.getLogger(__name__)

FLUSH_EVERY_S = 1.0
FEEDS = (SlowlogFacts, LatencyFacts, CommandstatsFacts, ClusterFacts)
MAX_WINDOW_MS = 30_000


class AnomalyDetectionDisabled(NotFound):
    def __init__(self) -> None:
        super().__init__("anomaly detection is turned off (ANOMALY_DETECTION_ENABLED=false)")


class AnomalyNotFound(NotFound):
    pass


@dataclass(frozen=True, slots=True)
class _Cached:
    connection_id: str
    metric: str
    severity: str
    group_id: int
    at_ms: int


@dataclass(slots=True)
class Summary:
    """What the Prometheus families show, rebuilt every anomalyPrometheusIntervalMs."""

    events_total: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    groups_total: Counter[str] = field(default_factory=Counter)
    current_by_severity: Counter[tuple[str, str]] = field(default_factory=Counter)
    current_by_metric: Counter[tuple[str, str]] = field(default_factory=Counter)
    groups_by_severity: Counter[tuple[str, str]] = field(default_factory=Counter)
    groups_by_pattern: Counter[tuple[str, str]] = field(default_factory=Counter)
    buffers: dict[str, list[BufferState]] = field(default_factory=dict)


class AnomalyService:
    """The detectors of every connection, the correlation windows, and their storage."""

    def __init__(
        self,
        store: AnomalyStore,
        bus: EventBus,
        settings: Settings,
        runtime_settings: RuntimeSettingsService,
        *,
        allowed: Callable[[], bool],
        monotonic: Callable[[], float] = time.monotonic,
        baseline_store: BaselineStore | None = None,
    ) -> None:
        self._store = store
        # Where replicas share storage: the detector state saved for the next holder of a
        # connection (baselines.py). Observed since the last save; due soon after a
        # detection (its cooldown); forgotten here, so the saved one must go too.
        self._baseline_store = baseline_store
        self._observed: set[str] = set()
        self._save_soon: set[str] = set()
        self._unsave: set[str] = set()
        self._leaving: dict[str, dict[str, Any]] = {}  # the last state of one let go
        self._next_save = monotonic() + baselines.SAVE_EVERY_S
        self._bus = bus
        self._enabled = settings.ANOMALY_DETECTION_ENABLED
        self._runtime = runtime_settings
        self._allowed = allowed
        self._monotonic = monotonic
        self._detectors: dict[str, ConnectionDetectors] = {}
        self._feeds: dict[str, FeedDetectors] = {}
        # When each connection's detectors began (wall ms): a registry change published
        # before that is already reflected, whenever the loop gets to it.
        self._started_ms: dict[str, int] = {}
        self._open: dict[str, Window] = {}
        self._closed: list[Window] = []
        self._cache: deque[_Cached] = deque()
        self._cache_ttl_ms = settings.ANOMALY_CACHE_TTL_MS
        self._resolved_groups: set[int] = set()
        # Totals since start: counters by (connection, metric, severity) and (connection, pattern).
        self._events_total: Counter[tuple[str, str, str]] = Counter()
        self._groups_total: Counter[tuple[str, str, str]] = Counter()
        self.summary = Summary()
        self.groups_published = 0

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def pending_detections(self) -> int:
        """Detections in windows not yet flushed."""
        return sum(len(w.detections) for w in (*self._open.values(), *self._closed))

    # --- the pipe ---

    def observe(self, observation: Observation) -> None:
        """Judge one observation (as a pipe consumer); cluster nodes' own are left out."""
        if not self._enabled or observation.node is not None or not self._allowed():
            return
        connection_id = observation.connection_id
        detectors = self._detectors.get(connection_id)
        if detectors is None:
            detectors = self._detectors[connection_id] = ConnectionDetectors(connection_id)
            self._started_ms.setdefault(connection_id, _now_ms())
        at = observation.received_at_ms
        if self._baseline_store is not None:
            self._observed.add(connection_id)
        self._collect(connection_id, at, detectors.observe(observation.info, at))

    def observe_facts(self, connection_id: str, facts: Facts) -> None:
        """Judge another poll's facts (as a pipe consumer): the slow log, latency,
        commandstats and CLUSTER INFO (detection/anomaly/feeds.py)."""
        if not self._enabled or not isinstance(facts, FEEDS) or not self._allowed():
            return
        feeds = self._feeds.get(connection_id)
        if feeds is None:
            feeds = self._feeds[connection_id] = FeedDetectors(connection_id)
            self._started_ms.setdefault(connection_id, _now_ms())
        self._collect(connection_id, facts.at_ms, feeds.observe(facts))

    def _collect(self, connection_id: str, at: int, found: list[Detection]) -> None:
        """Put a connection's detections into its open correlation window."""
        for detection in found:
            if detection.notice is not None:  # failover.*, data.loss.detected: now, not per group
                self._bus.publish(detection.notice)
        window = self._open.get(connection_id)
        if window is not None and (
            at - window.last_ms >= CORRELATION_WINDOW_MS or at - window.started_ms >= MAX_WINDOW_MS
        ):
            self._closed.append(self._open.pop(connection_id))
            window = None
        if not found:
            return
        if window is None:
            window = self._open[connection_id] = Window(at, self._monotonic())
        window.detections.extend(found)
        window.last_ms = max(window.last_ms, at)
        window.opened_monotonic = self._monotonic()

    def forget(self, connection_id: str, *, changed_at_ms: int | None = None) -> None:
        """This replica no longer judges the connection: its baselines go.

        With `changed_at_ms` (the change's time) it was edited or removed, and starts over
        everywhere: the state saved for the next holder goes too. Detectors begun after
        the change are kept: the loop reads changes up to a second late, and a new
        connection's first samples must not be thrown away then. Without it this replica
        stopped polling it (a stop, or a handover): its state is saved once more, for the
        replica that polls it next."""
        if changed_at_ms is not None and self._started_ms.get(connection_id, -1) >= changed_at_ms:
            return
        detectors = self._detectors.pop(connection_id, None)
        if self._baseline_store is not None and connection_id:
            if changed_at_ms is not None:
                self._leaving.pop(connection_id, None)
                self._unsave.add(connection_id)
            elif detectors is not None and connection_id in self._observed:
                self._leaving[connection_id] = baselines.carried(detectors, _now_ms())
            self._observed.discard(connection_id)
        self._feeds.pop(connection_id, None)
        self._started_ms.pop(connection_id, None)
        self._open.pop(connection_id, None)

    async def flush(self, *, everything: bool = False) -> int:
        """Store and publish every closed window (with `everything`, the open ones too);
        the number of groups published."""
        limit = 2 * CORRELATION_WINDOW_MS / 1000
        now = self._monotonic()
        for connection_id, window in list(self._open.items()):
            if everything or now - window.opened_monotonic >= limit:
                self._closed.append(self._open.pop(connection_id))
        closed, self._closed = self._closed, []
        for window in closed:
            await self._publish(window.detections)
        return len(closed)

    async def _publish(self, detections: list[Detection]) -> None:
        pattern = match(detections)
        strongest = max(detections, key=lambda d: (SEVERITY_RANK[d.severity], abs(d.z_score)))
        severity = strongest.severity
        group_id = await self._store.save_group(detections, pattern=pattern, severity=severity)
        connection_id = strongest.connection_id
        for d in detections:
            self._events_total[(connection_id, d.metric, d.severity)] += 1
            self._cache.append(_Cached(connection_id, d.metric, d.severity, group_id, d.at_ms))
        self._groups_total[(connection_id, pattern.name, severity)] += 1
        metrics = list(dict.fromkeys(d.metric for d in detections))
        self._bus.publish(
            AnomalyDetected(
                connection_id=connection_id,
                at_ms=detections[0].at_ms,
                anomaly_id=str(group_id),
                metric_type=strongest.metric,
                anomaly_type=strongest.kind,
                severity=severity,
                value=strongest.value,
                baseline=strongest.baseline,
                std_dev=strongest.stddev,
                z_score=strongest.z_score,
                threshold=strongest.threshold,
                message=(
                    f"{pattern.name}: {pattern.diagnosis} Next: {pattern.recommendation} "
                    f"({', '.join(metrics)}; strongest: {strongest.message})"
                ),
                pattern=pattern.name,
                related_metrics=tuple(metrics),
            )
        )
        self.groups_published += 1
        if self._baseline_store is not None:
            self._save_soon.add(connection_id)  # its cooldown must reach the next holder
        logger.info("anomaly group %s on %s: %s", group_id, connection_id, pattern.name)

    # --- across replicas ---

    async def carry_on(self, connection_ids: Sequence[str]) -> None:
        """Connections taken over from another replica: judge them against the baselines
        it saved, rather than warming up again (and with its cooldowns)."""
        if self._baseline_store is None or not self._enabled:
            return
        now = _now_ms()
        for connection_id, state in (await self._baseline_store.load(connection_ids)).items():
            detectors = baselines.carry_on(connection_id, state, now_ms=now)
            if detectors is not None:
                self._detectors[connection_id] = detectors
                self._started_ms[connection_id] = now

    async def save_baselines(self, *, everything: bool = False) -> None:
        """Save the detector state of what this replica judges: every SAVE_EVERY_S (or
        `everything`, at a clean stop) all it observed since, otherwise only those with a
        detection just published, and always the last state of those it let go."""
        store = self._baseline_store
        if store is None:
            return
        if self._unsave:
            unsave, self._unsave = self._unsave, set()
            await store.remove(unsave)
        if everything or self._monotonic() >= self._next_save:
            due, self._observed = self._observed, set()
            self._next_save = self._monotonic() + baselines.SAVE_EVERY_S
        else:
            due = set(self._save_soon)
        self._save_soon -= due
        now = _now_ms()
        states, self._leaving = self._leaving, {}
        for connection_id in due:
            if (detectors := self._detectors.get(connection_id)) is not None:
                states[connection_id] = baselines.carried(detectors, now)
        await store.save(states, at_ms=now)

    # --- background ---

    async def run(self) -> None:
        """Flush every second; rebuild the summary every anomalyPrometheusIntervalMs;
        forget a connection's baselines when it is edited or removed."""
        changes = self._bus.subscribe(
            "anomaly-connections", maxsize=1000, kinds=(ConnectionsChanged,)
        )
        next_summary = 0.0
        try:
            while True:
                for event in changes.pending():
                    if isinstance(event, ConnectionsChanged):
                        self.forget(event.connection_id, changed_at_ms=event.at_ms)
                try:
                    await self.flush()
                    await self.save_baselines()
                    if self._monotonic() >= next_summary:
                        values = await self._runtime.current()
                        self._cache_ttl_ms = values.anomalyCacheTtlMs
                        self.refresh_summary()
                        next_summary = self._monotonic() + values.anomalyPrometheusIntervalMs / 1000
                except Exception:  # a storage hiccup: the next pass tries again
                    logger.exception("anomaly flush failed")
                await asyncio.sleep(FLUSH_EVERY_S)
        finally:
            with contextlib.suppress(ValueError):
                self._bus.unsubscribe(changes)

    def refresh_summary(self, *, now_ms: int | None = None) -> Summary:
        """Rebuild what the Prometheus families show (the loop does it on its interval)."""
        now = now_ms if now_ms is not None else int(time.time() * 1000)
        cache = self._cache
        while cache and now - cache[0].at_ms > self._cache_ttl_ms:
            cache.popleft()
        summary = Summary(events_total=Counter(self._events_total))
        groups: dict[int, tuple[str, str]] = {}
        for c in cache:
            if c.group_id in self._resolved_groups:
                continue
            summary.current_by_severity[(c.connection_id, c.severity)] += 1
            summary.current_by_metric[(c.connection_id, c.metric)] += 1
            groups[c.group_id] = (c.connection_id, c.severity)
        for (connection_id, pattern, severity), count in self._groups_total.items():
            summary.groups_total[connection_id] += count
            summary.groups_by_pattern[(connection_id, pattern)] += count
            summary.groups_by_severity[(connection_id, severity)] += count
        summary.buffers = {
            cid: self._buffer_states(cid) for cid in {*self._detectors, *self._feeds}
        }
        self.summary = summary
        return summary

    # --- reads and resolves (api.py) ---

    def _check(self) -> None:
        if not self._enabled:
            raise AnomalyDetectionDisabled()

    async def events(self, connection_id: str, **filters: Any) -> list[Any]:
        self._check()
        return list(await self._store.events(connection_id, **filters))

    async def groups(self, connection_id: str, **filters: Any) -> list[Any]:
        self._check()
        return list(await self._store.groups(connection_id, **filters))

    def buffers(self, connection_id: str) -> list[BufferState]:
        """Every metric's buffer of the connection (empty ones before its first INFO)."""
        self._check()
        return self._buffer_states(connection_id)

    async def saved_buffers(self, connection_id: str) -> list[BufferState]:
        """The baselines the replica polling the connection last saved (baselines.py);
        the feed detectors' do not travel, and are listed empty."""
        self._check()
        detectors = None
        if self._baseline_store is not None:
            saved = await self._baseline_store.load([connection_id])
            if connection_id in saved:
                detectors = baselines.carry_on(
                    connection_id, saved[connection_id], now_ms=_now_ms()
                )
        return _states_of(detectors, None)

    def _buffer_states(self, connection_id: str) -> list[BufferState]:
        return _states_of(self._detectors.get(connection_id), self._feeds.get(connection_id))

    async def resolve_event(self, connection_id: str, event_id: int) -> bool:
        """Resolve one event; False when it already was (its first time is kept)."""
        self._check()
        newly = await self._store.resolve_event(connection_id, event_id, at_ms=_now_ms())
        if newly is None:
            raise AnomalyNotFound(f"no anomaly event {event_id} on this connection")
        return newly

    async def resolve_group(self, connection_id: str, group_id: int) -> bool:
        """Resolve a group and its events; False when it already was."""
        self._check()
        newly = await self._store.resolve_group(connection_id, group_id, at_ms=_now_ms())
        if newly is None:
            raise AnomalyNotFound(f"no anomaly group {group_id} on this connection")
        self._resolved_groups.add(group_id)
        return newly


def _now_ms() -> int:
    return int(time.time() * 1000)


def _states_of(
    detectors: ConnectionDetectors | None, feeds: FeedDetectors | None
) -> list[BufferState]:
    """Every metric's buffer (empty ones before the first INFO or feed read)."""
    states = (
        detectors.buffer_states()
        if detectors is not None
        else [BufferState(spec.name, 0, False, None, None) for spec in METRICS]
    )
    named = {s.metric for s in states}
    if feeds is not None:
        states += feeds.buffer_states()
        named |= {s.metric for s in states}
    # The slow log and latency buffers are listed before their first read too.
    states += [
        BufferState(s.name, 0, False, None, None) for s in FEED_METRICS if s.name not in named
    ]
    return states
