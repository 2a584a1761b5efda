"""Runtime settings: environment defaults, overridden by what was saved through the API.

The retention window is different from the intervals: LOCAL_RETENTION_DAYS only seeds it.
The value in force when the settings row is created is written into the row, so from then
on a changed environment no longer moves it; only the API (or a reset) does. In cloud
mode the window is the licence tier's (cloud_retention.py), read at each call, so a
licence applied at run time moves it for the next sweep; neither the environment nor the
API changes it then.
"""

import logging
import time
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from svc_monitor.config import Settings
from svc_monitor.errors import Conflict
from svc_monitor.events import EventBus, RuntimeSettingsChanged
from svc_monitor.licensing.models import Tier
from svc_monitor.runtime_settings.cloud_retention import CLOUD_RETENTION_DAYS, CLOUD_RETENTION_TEXT
from svc_monitor.runtime_settings.schemas import (
    RuntimeSettingsRead,
    RuntimeSettingsUpdate,
    RuntimeSettingsValues,
)
from svc_monitor.runtime_settings.store import RuntimeSettingsStore

logger = logging.getLogger(__name__)

RETENTION = "retentionDays"


class RetentionFollowsTier(Conflict):
    """In cloud mode the history window is the licence tier's, not a setting."""


class RuntimeSettingsService:
    """Settings changeable without a restart; pollers read `current()` at every tick."""

    def __init__(
        self,
        store: RuntimeSettingsStore,
        settings: Settings,
        bus: EventBus,
        *,
        tier: Callable[[], Tier] = lambda: Tier.COMMUNITY,
    ) -> None:
        """`tier` is the licence tier in force now, which sets the window in cloud mode."""
        self._store = store
        self._settings = settings
        self._bus = bus
        self._tier = tier

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
            retentionDays=self._cloud_window() if s.CLOUD_MODE else s.LOCAL_RETENTION_DAYS,
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
        setting does only until its row exists. In cloud mode there is nothing to seed:
        a LOCAL_RETENTION_DAYS given is said to be ignored, once, at startup.
        """
        if self._settings.CLOUD_MODE:
            if self._settings.LOCAL_RETENTION_DAYS is not None:
                logger.warning(
                    "LOCAL_RETENTION_DAYS=%d is ignored in cloud mode: history is kept for "
                    "the licence tier's window (%s; %d days now, %s)",
                    self._settings.LOCAL_RETENTION_DAYS,
                    CLOUD_RETENTION_TEXT,
                    self._cloud_window(),
                    self._tier().label,
                )
            return
        stored = await self._store.load()
        if stored is None or RETENTION in stored[0]:
            return
        values, updated_at = stored
        await self._store.save(
            {**values, RETENTION: self._settings.LOCAL_RETENTION_DAYS}, updated_at=updated_at
        )

    async def update(self, change: RuntimeSettingsUpdate) -> RuntimeSettingsRead:
        changes = change.changes()
        if self._settings.CLOUD_MODE and RETENTION in changes:
            self._refuse_cloud_retention(changes.pop(RETENTION))
        stored = await self._store.load()
        # The row is created here: the window comes from the environment unless sent.
        values: dict[str, Any] = (
            stored[0] if stored else {RETENTION: self._settings.LOCAL_RETENTION_DAYS}
        )
        values.update(changes)
        now = int(time.time() * 1000)
        await self._store.save(values, updated_at=now)
        self._bus.publish(RuntimeSettingsChanged())
        return self._view(self._merge(values), source="database", updated_at=now)

    async def reset(self) -> RuntimeSettingsRead:
        await self._store.clear()
        self._bus.publish(RuntimeSettingsChanged())
        return self._view(self.defaults(), source="environment", updated_at=None)

    def _cloud_window(self) -> int:
        return CLOUD_RETENTION_DAYS[self._tier()]

    def _refuse_cloud_retention(self, days: int | None) -> None:
        """The window in force may be sent back unchanged (a form saving every field);
        any other value is refused."""
        window = self._cloud_window()
        if days == window:
            return
        raise RetentionFollowsTier(
            f"retentionDays: in cloud mode history is kept for the licence tier's window "
            f"({CLOUD_RETENTION_TEXT}); this install is {self._tier().label}, so {window} "
            "days. It changes with the licence, not with this setting",
            field=RETENTION,
        )

    def _merge(self, stored: dict[str, Any]) -> RuntimeSettingsValues:
        # In cloud mode the tier's window stands over a stored one (defaults() has it).
        if self._settings.CLOUD_MODE:
            stored = {k: v for k, v in stored.items() if k != RETENTION}
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
