"""Runtime settings: environment defaults, overridden by what was saved through the API.

The retention window is different from the intervals: LOCAL_RETENTION_DAYS only seeds it.
The value in force when the settings row is created is written into the row, so from then
on a changed environment no longer moves it; only the API (or a reset) does.
"""

import time
from typing import Any

from pydantic import ValidationError

from svc_monitor.config import Settings
from svc_monitor.events import EventBus, RuntimeSettingsChanged
from svc_monitor.runtime_settings.schemas import (
    RuntimeSettingsRead,
    RuntimeSettingsUpdate,
    RuntimeSettingsValues,
)
from svc_monitor.runtime_settings.store import RuntimeSettingsStore

RETENTION = "retentionDays"


class RuntimeSettingsService:
    """Settings changeable without a restart; pollers read `current()` at every tick."""

    def __init__(self, store: RuntimeSettingsStore, settings: Settings, bus: EventBus) -> None:
        self._store = store
        self._settings = settings
        self._bus = bus

    def defaults(self) -> RuntimeSettingsValues:
        s = self._settings
        return RuntimeSettingsValues(
            auditPollIntervalMs=s.AUDIT_POLL_INTERVAL_MS,
            clientAnalyticsPollIntervalMs=s.CLIENT_ANALYTICS_POLL_INTERVAL_MS,
            anomalyPollIntervalMs=s.ANOMALY_POLL_INTERVAL_MS,
            anomalyCacheTtlMs=s.ANOMALY_CACHE_TTL_MS,
            anomalyPrometheusIntervalMs=s.ANOMALY_PROMETHEUS_INTERVAL_MS,
            fullInfoIntervalMs=s.FULL_INFO_INTERVAL_MS,
            vectorIndexPollIntervalMs=s.VECTOR_INDEX_POLL_INTERVAL_MS,
            searchSlaP99Us=s.SEARCH_SLA_P99_US,
            searchSlaByIndex={},
            retentionDays=s.LOCAL_RETENTION_DAYS,
        )

    async def read(self) -> RuntimeSettingsRead:
        stored = await self._store.load()
        if stored is None:
            return self._view(self.defaults(), source="environment", updated_at=None)
        values, updated_at = stored
        return self._view(self._merge(values), source="database", updated_at=updated_at)

    async def current(self) -> RuntimeSettingsValues:
        return (await self.read()).settings

    async def retention_days(self) -> int | None:
        """The history window the retention sweeps apply now; None keeps everything."""
        return (await self.current()).retentionDays

    async def seed_retention(self) -> None:
        """Give a row saved before the window was a setting the environment's window, once.

        Without it, such a row would follow LOCAL_RETENTION_DAYS at every start, which the
        setting does only until its row exists.
        """
        stored = await self._store.load()
        if stored is None or RETENTION in stored[0]:
            return
        values, updated_at = stored
        await self._store.save(
            {**values, RETENTION: self._settings.LOCAL_RETENTION_DAYS}, updated_at=updated_at
        )

    async def update(self, change: RuntimeSettingsUpdate) -> RuntimeSettingsRead:
        stored = await self._store.load()
        # The row is created here: the window comes from the environment unless sent.
        values: dict[str, Any] = (
            stored[0] if stored else {RETENTION: self._settings.LOCAL_RETENTION_DAYS}
        )
        values.update(change.changes())
        now = int(time.time() * 1000)
        await self._store.save(values, updated_at=now)
        self._bus.publish(RuntimeSettingsChanged())
        return self._view(self._merge(values), source="database", updated_at=now)

    async def reset(self) -> RuntimeSettingsRead:
        await self._store.clear()
        self._bus.publish(RuntimeSettingsChanged())
        return self._view(self.defaults(), source="environment", updated_at=None)

    def _merge(self, stored: dict[str, Any]) -> RuntimeSettingsValues:
        merged = self.defaults().model_dump() | stored
        try:
            return RuntimeSettingsValues.model_validate(merged)
        except ValidationError:
            # A row written by another version with names we no longer know: keep what fits.
            known = {k: v for k, v in merged.items() if k in RuntimeSettingsValues.model_fields}
            return RuntimeSettingsValues.model_validate(self.defaults().model_dump() | known)

    def _view(
        self, values: RuntimeSettingsValues, *, source: str, updated_at: int | None
    ) -> RuntimeSettingsRead:
        return RuntimeSettingsRead.model_validate(
            {
                "settings": values,
                "source": source,
                "persisted": self._store.persistent,
                "updatedAt": updated_at,
            }
        )
