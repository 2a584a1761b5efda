"""Commandstats into the pipe as facts: read along with INFO where the engine allows it
(polling/info_rides.py), else by a pass of its own reading INFO commandstats."""

from svc_monitor.config import Settings
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.events import now_ms
from svc_monitor.pipe.facts import CommandstatsFacts
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.info_rides import COMMANDSTATS, RECHECK_SHARE, InfoRider, InfoRides
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues

NAME = "commandstats"


class CommandstatsPoller:
    """Reads INFO commandstats into the pipe, where commandstats history, the mean latency
    reading and anomaly detection take it as they take pushed commandstats; failures only
    back off this loop."""

    def __init__(self, pipe: Pipe, settings: Settings) -> None:
        self._pipe = pipe
        self._settings = settings

    async def poll(self, target: PollTarget) -> None:
        info = await target.client.info(COMMANDSTATS)
        await self._take(target, info, now_ms())

    async def _take(self, target: PollTarget, info: ParsedInfo, at_ms: int) -> None:
        await self._pipe.put_facts(target.connection.id, CommandstatsFacts(at_ms, info))

    def rider(self) -> InfoRider:
        return InfoRider(
            name=NAME,
            interval_s=lambda: self._settings.COMMANDSTATS_POLL_INTERVAL_MS / 1000,
            take=self._take,
        )

    def kind(self, rides: InfoRides) -> PollKind:
        return PollKind(
            name=NAME,
            interval_ms=_interval,
            poll=self.poll,
            applies=lambda target: not rides.carried(target, NAME),
            idle_recheck_share=RECHECK_SHARE,
        )


def _interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.COMMANDSTATS_POLL_INTERVAL_MS
