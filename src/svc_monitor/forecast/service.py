"""Capacity forecasting: a trend line over each connection's stored memory snapshots.

Four metrics, read from the memory snapshots the pipe stores (metrics/), polled and
pushed connections alike: usedMemory, opsPerSec, cpuTotal (CPU sys + user, percent of
one core) and memFragmentation. The window's snapshots are averaged into at most 720
buckets in SQL and the buckets without a value (fields a push connection does not send,
gaps while an instance was down) are skipped, so a gap shortens the data, never bends
the line. Fewer than 3 points, or points spanning under 30 minutes: insufficient data.

With a ceiling (set per connection and metric, else the kind's default: maxmemory for
usedMemory when the instance has one, 100 % for CPU, 1.5 for fragmentation; ops/sec has
none) the answer is a forecast: the time until the fitted line reaches the ceiling,
counted from now, with the band of fit.py. Without one it is a trend.

Ours, where the peer is odd: the time is measured from the fitted line, not from the last
raw sample (a single noisy sample does not move it); "already exceeded" needs the newest
sample at or over the ceiling; a ceiling is projected whenever the slope is positive by
more than two standard errors, not only when the line grew 5 % over the window (memory at
90 % of maxmemory growing 4 % in 6 h reaches it within a day, and a flat but noisy series
near its ceiling is not called rising); reading settings never writes a row (defaults follow the
environment until an admin saves); METRIC_FORECASTING_ENABLED=false turns every metric off.

Alerts (`metric_forecast.limit`, pro): `evaluate()` runs every 60 s over every connection
and metric that is enabled and has a ceiling. It fires once when the time to the limit
falls to the metric's alertThresholdMs or under, and re-arms only when the time is
comfortably above again: over alertThresholdMs x 1.1 (the webhooks' default 0.9
hysteresis turned around, as the peer does), or no longer projected at all (not rising).
Insufficient data keeps the state as it is. The state is in memory: after a restart a
limit still near fires once more.
"""

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, get_args

from svc_monitor.config import Settings
from svc_monitor.connections.service import ConnectionService
from svc_monitor.errors import AppError
from svc_monitor.event_types.detection import MetricForecastLimit
from svc_monitor.events import EventBus
from svc_monitor.forecast.fit import BAND_K, Fit, fit_line, human_duration
from svc_monitor.forecast.schemas import (
    ForecastPoint,
    ForecastRead,
    ForecastSettingsRead,
    ForecastSettingsUpdate,
    MetricKind,
)
from svc_monitor.forecast.store import ForecastStore
from svc_monitor.info_history.models import MemoryBucket
from svc_monitor.info_history.service import InfoHistoryService

logger = logging.getLogger(__name__)

KINDS: tuple[str, ...] = get_args(MetricKind)
MAX_POINTS = 720  # buckets per window: 30 s each over the default 6 h
MIN_POINTS = 3
MIN_SPAN_MS = 30 * 60_000
STABLE_PERCENT = 5.0  # |growth| over the window at or under this: stable
RECOVERY_FACTOR = 1.1  # re-arm above threshold x this
ALERT_EVERY_S = 60.0
FRAGMENTED_BYTES_WORTH_ALERTING = 10 * 1024 * 1024
INSUFFICIENT = "Data will be available shortly. At least 30 minutes of monitoring history required."
_DEFAULT_CEILINGS: dict[str, float | None] = {
    "usedMemory": None,  # the instance's maxmemory, when it has one
    "opsPerSec": None,
    "cpuTotal": 100.0,
    "memFragmentation": 1.5,
}
_VALUES: dict[str, Callable[[MemoryBucket], float | None]] = {
    "usedMemory": lambda b: b.used_memory,
    "opsPerSec": lambda b: b.ops_per_sec,
    "cpuTotal": lambda b: b.cpu_total,
    "memFragmentation": lambda b: b.mem_fragmentation_ratio,
}


class InvalidMetricKind(AppError):
    status_code = 400


@dataclass(frozen=True, slots=True)
class _Settings:
    enabled: bool
    ceiling: float | None
    rolling_window_ms: int
    alert_threshold_ms: int
    updated_at: int | None


@dataclass(eq=False)  # compared and hashed by identity, as a service is
class ForecastService:
    """Forecasts, their settings, the limit alerts and the latest projections (Prometheus)."""

    store: ForecastStore
    metrics: InfoHistoryService
    connections: ConnectionService
    settings: Settings
    bus: EventBus
    _: KW_ONLY
    clock: Callable[[], float] = time.time
    _fired: set[tuple[str, str]] = field(default_factory=set, init=False)
    # (connection id, kind) -> seconds to the limit, from the newest forecast with one.
    projections: dict[tuple[str, str], float] = field(default_factory=dict, init=False)
    passes: int = field(default=0, init=False)

    # --- settings ---

    @staticmethod
    def check_kind(kind: str) -> str:
        if kind not in KINDS:
            raise InvalidMetricKind(
                f"Invalid metric kind '{kind[:64]}'. Valid kinds: {', '.join(KINDS)}",
                field="metricKind",
            )
        return kind

    async def read_settings(self, connection_id: str, kind: str) -> ForecastSettingsRead:
        self.check_kind(kind)
        current = await self._load(connection_id, kind)
        return self._settings_view(connection_id, kind, current)

    async def update_settings(
        self, connection_id: str, kind: str, change: ForecastSettingsUpdate
    ) -> ForecastSettingsRead:
        self.check_kind(kind)
        current = await self._load(connection_id, kind)
        given = change.model_fields_set
        row: dict[str, Any] = {
            "connection_id": connection_id,
            "metric_kind": kind,
            "enabled": current.enabled if change.enabled is None else change.enabled,
            "ceiling": change.ceiling if "ceiling" in given else current.ceiling,
            "rolling_window_ms": change.rollingWindowMs or current.rolling_window_ms,
            "alert_threshold_ms": change.alertThresholdMs or current.alert_threshold_ms,
            "updated_at": self._now_ms(),
        }
        await self.store.save(row)
        return await self.read_settings(connection_id, kind)

    async def _load(self, connection_id: str, kind: str) -> _Settings:
        return self._settings_of(await self.store.get(connection_id, kind))

    async def _load_all(self, connection_id: str) -> dict[str, _Settings]:
        rows = {row.metric_kind: row for row in await self.store.all_of(connection_id)}
        return {kind: self._settings_of(rows.get(kind)) for kind in KINDS}

    def _settings_of(self, row: Any) -> _Settings:
        s = self.settings
        if row is None:
            return _Settings(
                enabled=True,
                ceiling=None,
                rolling_window_ms=s.METRIC_FORECASTING_DEFAULT_ROLLING_WINDOW_MS,
                alert_threshold_ms=s.METRIC_FORECASTING_DEFAULT_ALERT_THRESHOLD_MS,
                updated_at=None,
            )
        return _Settings(
            enabled=bool(row.enabled),
            ceiling=None if row.ceiling is None else float(row.ceiling),
            rolling_window_ms=int(row.rolling_window_ms),
            alert_threshold_ms=int(row.alert_threshold_ms),
            updated_at=int(row.updated_at),
        )

    def _settings_view(
        self, connection_id: str, kind: str, current: _Settings
    ) -> ForecastSettingsRead:
        return ForecastSettingsRead.model_validate(
            {
                "connectionId": connection_id,
                "metricKind": kind,
                "enabled": current.enabled and self.settings.METRIC_FORECASTING_ENABLED,
                "ceiling": current.ceiling,
                "defaultCeiling": _DEFAULT_CEILINGS[kind],
                "rollingWindowMs": current.rolling_window_ms,
                "alertThresholdMs": current.alert_threshold_ms,
                "updatedAt": current.updated_at,
            }
        )

    # --- forecasts ---

    async def forecast(self, connection_id: str, kind: str) -> ForecastRead:
        self.check_kind(kind)
        current = await self._load(connection_id, kind)
        answer = await self._forecast(connection_id, kind, current)
        self._remember(connection_id, kind, answer)
        return answer

    async def _forecast(
        self,
        connection_id: str,
        kind: str,
        current: _Settings,
        *,
        read: dict[int, list[MemoryBucket]] | None = None,
    ) -> ForecastRead:
        """`read`: the buckets already read for this connection, by window (one read serves
        every metric with the same window)."""
        enabled = current.enabled and self.settings.METRIC_FORECASTING_ENABLED
        now = self._now_ms()
        window = current.rolling_window_ms
        base: dict[str, Any] = {
            "connectionId": connection_id,
            "metricKind": kind,
            "windowMs": window,
            "enabled": enabled,
            "ceiling": current.ceiling,
            "mode": "trend" if current.ceiling is None and kind == "opsPerSec" else "forecast",
        }
        if not enabled:
            return _empty(base, human="Forecasting is disabled for this metric")
        buckets = None if read is None else read.get(window)
        if buckets is None:
            buckets = await self.metrics.memory_buckets(
                connection_id, since=now - window, until=now, max_points=MAX_POINTS
            )
            if read is not None:
                read[window] = buckets
        value_of = _VALUES[kind]
        points = [(b.t, v) for b in buckets if (v := value_of(b)) is not None]
        ceiling = (
            current.ceiling if current.ceiling is not None else _default_ceiling(kind, buckets)
        )
        base |= {"ceiling": ceiling, "mode": "trend" if ceiling is None else "forecast"}
        fit = fit_line(points)
        if fit is None or len(points) < MIN_POINTS or fit.span_ms < MIN_SPAN_MS:
            answer = _empty(base, human=INSUFFICIENT, insufficient=True)
            answer.points = [ForecastPoint(t=t, value=v) for t, v in points]
            answer.currentValue = points[-1][1] if points else None
            answer.dataPointCount = len(points)
            return answer
        return _answer(base, fit, points, ceiling=ceiling, now=now)

    def _remember(self, connection_id: str, kind: str, answer: ForecastRead) -> None:
        if answer.timeToLimitMs is None:
            self.projections.pop((connection_id, kind), None)
        else:
            self.projections[(connection_id, kind)] = answer.timeToLimitMs / 1000

    # --- alerts ---

    async def run(self) -> None:
        """`evaluate` every 60 s until cancelled (the first a minute after start, off the
        busy start-up)."""
        while True:
            await asyncio.sleep(ALERT_EVERY_S)
            try:
                await self.evaluate()
            except Exception:  # a storage hiccup: the next pass tries again
                logger.exception("evaluating the metric forecasts failed")

    async def evaluate(self) -> None:
        """One pass over every connection and metric: refresh the projections, publish
        `MetricForecastLimit` on each new crossing, re-arm the recovered ones."""
        if not self.settings.METRIC_FORECASTING_ENABLED:
            self.projections.clear()
            self._fired.clear()
            return
        connections = await self.connections.list()
        known = {c.id for c in connections}
        for key in [k for k in self.projections if k[0] not in known]:
            self.projections.pop(key, None)
        self._fired = {k for k in self._fired if k[0] in known}
        for connection in connections:
            read: dict[int, list[MemoryBucket]] = {}
            for kind, current in (await self._load_all(connection.id)).items():
                answer = await self._forecast(connection.id, kind, current, read=read)
                self._remember(connection.id, kind, answer)
                if kind == "memFragmentation" and _little_fragmented(read):
                    continue  # a ratio, not a problem: no alert either way (state kept)
                self._judge(connection.id, kind, answer, current.alert_threshold_ms)
        self.passes += 1

    def _judge(self, connection_id: str, kind: str, answer: ForecastRead, threshold: int) -> None:
        key = (connection_id, kind)
        if not answer.enabled or answer.ceiling is None:
            self._fired.discard(key)
            return
        if answer.insufficientData:
            return
        ttl = answer.timeToLimitMs
        if key in self._fired:
            if ttl is None or ttl > threshold * RECOVERY_FACTOR:
                self._fired.discard(key)
                logger.info("forecast of %s on %s recovered", kind, connection_id)
            return
        if ttl is not None and ttl <= threshold:
            self._fired.add(key)
            self.bus.publish(
                MetricForecastLimit(
                    connection_id=connection_id,
                    at_ms=self._now_ms(),
                    metric_kind=kind,
                    current_value=answer.currentValue or 0.0,
                    ceiling=answer.ceiling,
                    time_to_limit_ms=ttl,
                    growth_rate=answer.growthRate,
                    alert_threshold_ms=threshold,
                )
            )

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)


def _little_fragmented(read: dict[int, list[MemoryBucket]]) -> bool:
    """Whether the newest snapshot's fragmentation is under FRAGMENTED_BYTES_WORTH_ALERTING.

    A small dataset's ratio is routinely above 1.5 (an idle server: 1 MB used, 8 MB
    resident), so the ratio alone would alert on every such instance. Redis's MEMORY
    DOCTOR reports fragmentation only past the same 10 MB of fragmented bytes."""
    for buckets in read.values():
        for bucket in reversed(buckets):
            used, ratio = bucket.used_memory, bucket.mem_fragmentation_ratio
            if used is not None and ratio is not None:
                return used * (ratio - 1) < FRAGMENTED_BYTES_WORTH_ALERTING
    return False


def _default_ceiling(kind: str, buckets: list[MemoryBucket]) -> float | None:
    if kind != "usedMemory":
        return _DEFAULT_CEILINGS[kind]
    for bucket in reversed(buckets):  # the newest maxmemory the instance reported
        if bucket.maxmemory is not None:
            return bucket.maxmemory if bucket.maxmemory > 0 else None
    return None


def _empty(base: dict[str, Any], *, human: str, insufficient: bool = False) -> ForecastRead:
    return ForecastRead.model_validate(
        base
        | {
            "currentValue": None,
            "growthRate": 0.0,
            "growthRateStdErr": 0.0,
            "growthPercent": 0.0,
            "trendDirection": "stable",
            "dataPointCount": 0,
            "timeToLimitMs": None,
            "timeToLimitLowMs": None,
            "timeToLimitHighMs": None,
            "timeToLimitHuman": human,
            "insufficientData": insufficient,
            "insufficientDataMessage": human if insufficient else None,
            "points": [],
            "projection": [],
        }
    )


def _answer(
    base: dict[str, Any],
    fit: Fit,
    points: list[tuple[int, float]],
    *,
    ceiling: float | None,
    now: int,
) -> ForecastRead:
    growth = fit.growth_percent()
    direction = "stable" if abs(growth) <= STABLE_PERCENT else "rising" if growth > 0 else "falling"
    current = points[-1][1]
    ttl = low = high = None
    end = now + (now - fit.first_t)  # the line drawn as far ahead as the data goes back
    if ceiling is None:
        hours = fit.span_ms / 3_600_000
        human = f"{growth:+.1f}% over {hours:.1f}h, {direction}"
    elif current >= ceiling:
        ttl, human = 0, "Ceiling already exceeded"
    elif (crossing := fit.crossing(ceiling)) is None or fit.slope <= BAND_K * fit.slope_se:
        human = "Not projected to reach ceiling"
    else:
        ttl = max(0, math.ceil(crossing - now))
        human = f"{human_duration(ttl)} at current growth rate"
        band = BAND_K * fit.slope_se
        low = _until(fit.crossing(ceiling, slope=fit.slope + band), now)
        high = _until(fit.crossing(ceiling, slope=fit.slope - band), now)
        end = max(now, min(int(crossing), now + 10 * (now - fit.first_t)))
    if ttl == 0:
        low = high = 0
    projection = [(fit.first_t, fit.at(fit.first_t)), (end, fit.at(end))]
    return ForecastRead.model_validate(
        base
        | {
            "currentValue": current,
            "growthRate": fit.per_hour,
            "growthRateStdErr": fit.slope_se * 3_600_000,
            "growthPercent": round(growth, 4),
            "trendDirection": direction,
            "dataPointCount": fit.n,
            "timeToLimitMs": ttl,
            "timeToLimitLowMs": low,
            "timeToLimitHighMs": high,
            "timeToLimitHuman": human,
            "insufficientData": False,
            "points": [{"t": t, "value": v} for t, v in points],
            "projection": [{"t": int(t), "value": v} for t, v in projection],
        }
    )


def _until(crossing: float | None, now: int) -> int | None:
    return None if crossing is None else max(0, math.ceil(crossing - now))
