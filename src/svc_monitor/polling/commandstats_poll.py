"""One commandstats pass: read INFO commandstats, record what moved."""

from svc_monitor.commandstats.service import CommandstatsService
from svc_monitor.config import Settings
from svc_monitor.detectors.command_latency import LatencyDetector
from svc_monitor.events import now_ms
from svc_monitor.pipe.facts import CommandstatsFacts
from svc_monitor.pipe.live_state import LiveState
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues


class CommandstatsPoller:
    """Reads INFO commandstats into commandstats history and the mean latency reading;
    failures only back off this loop."""

    def __init__(
        self,
        commandstats: CommandstatsService,
        *,
        latency: LatencyDetector | None = None,
        live_state: LiveState | None = None,
    ) -> None:
        self._commandstats = commandstats
        self._latency = latency
        self._live_state = live_state

    async def poll(self, target: PollTarget) -> None:
        info = await target.client.info("commandstats")
        captured_at = now_ms()
        await self._commandstats.record(target.connection.id, info, captured_at=captured_at)
        if self._latency is not None:
            self._latency.record(target.connection.id, info, at_ms=captured_at)
        if self._live_state is not None:  # for svc_commandstats_* at scrape time
            self._live_state.put(target.connection.id, CommandstatsFacts(captured_at, info))

    async def forget(self, connection_id: str) -> None:
        # Removed or edited (maybe to another server): the next poll is a new baseline.
        self._commandstats.forget(connection_id)
        if self._latency is not None:
            self._latency.forget(connection_id)

    def kind(self) -> PollKind:
        return PollKind(
            name="commandstats", interval_ms=_interval, poll=self.poll, forget=self.forget
        )


def _interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.COMMANDSTATS_POLL_INTERVAL_MS
