"""One commandstats pass: read INFO commandstats, record what moved."""

from svc_monitor.commandstats.service import CommandstatsService
from svc_monitor.config import Settings
from svc_monitor.events import now_ms
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues


class CommandstatsPoller:
    """Reads INFO commandstats into commandstats history; failures only back off this loop."""

    def __init__(self, commandstats: CommandstatsService) -> None:
        self._commandstats = commandstats

    async def poll(self, target: PollTarget) -> None:
        info = await target.client.info("commandstats")
        await self._commandstats.record(target.connection.id, info, captured_at=now_ms())

    async def forget(self, connection_id: str) -> None:
        # Removed or edited (maybe to another server): the next poll is a new baseline.
        self._commandstats.forget(connection_id)

    def kind(self) -> PollKind:
        return PollKind(
            name="commandstats", interval_ms=_interval, poll=self.poll, forget=self.forget
        )


def _interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.COMMANDSTATS_POLL_INTERVAL_MS
