"""Key analytics every KEY_ANALYTICS_INTERVAL_MS on each polled connection (Pro).

Push connections have no poll loops (the supervisor never dials them), so they are never
scanned. A Community install runs nothing: the check is made on every pass, so a licence
installed or lost takes effect at the next one without a restart.
"""

from collections.abc import Callable

from svc_monitor.config import Settings
from svc_monitor.key_analytics.service import KeyAnalyticsService
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues


class KeyAnalyticsPoller:
    """One key analytics run per pass (see key_analytics/service.py)."""

    def __init__(self, analytics: KeyAnalyticsService, *, allowed: Callable[[], bool]) -> None:
        self._analytics = analytics
        self._allowed = allowed

    async def poll(self, target: PollTarget) -> None:
        if not self._allowed():
            return
        await self._analytics.run(target.connection)

    def kind(self) -> PollKind:
        return PollKind(
            name="key_analytics",
            interval_ms=_interval,
            poll=self.poll,
            forget=self._analytics.forget,
            takes_turns=False,  # a run may take a while: the quick polls must not wait it out
        )


def _interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.KEY_ANALYTICS_INTERVAL_MS
