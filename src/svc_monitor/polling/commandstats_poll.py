"""One commandstats pass: read INFO commandstats and hand it to the pipe as facts."""

from svc_monitor.config import Settings
from svc_monitor.events import now_ms
from svc_monitor.pipe.facts import CommandstatsFacts
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues


class CommandstatsPoller:
    """Reads INFO commandstats into the pipe, where commandstats history, the mean latency
    reading and anomaly detection take it as they take pushed commandstats; failures only
    back off this loop."""

    def __init__(self, pipe: Pipe) -> None:
        self._pipe = pipe

    async def poll(self, target: PollTarget) -> None:
        info = await target.client.info("commandstats")
        await self._pipe.put_facts(target.connection.id, CommandstatsFacts(now_ms(), info))

    def kind(self) -> PollKind:
        return PollKind(name="commandstats", interval_ms=_interval, poll=self.poll)


def _interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.COMMANDSTATS_POLL_INTERVAL_MS
