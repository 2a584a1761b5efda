"""The config_watch poll kind: who changed a server's users or configuration
(detection/config_watch.py), every CONFIG_WATCH_INTERVAL_MS. Where the engine allows it,
the INFO commandstats each check starts from is read along with INFO
(polling/info_rides.py), and the check runs in that INFO pass. The replica buffer limit a
check returns goes into the pipe as a fact, for live state (and the scrape) to keep."""

from svc_monitor.config import Settings
from svc_monitor.detection.config_watch import ConfigWatch
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.pipe.facts import ReplicaBufferLimitFacts
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.info_rides import RECHECK_SHARE, InfoRider, InfoRides
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues

NAME = "config_watch"


def config_watch_kind(watch: ConfigWatch, pipe: Pipe, rides: InfoRides) -> PollKind:
    async def poll(target: PollTarget) -> None:
        facts = await watch.check(target.connection.id, target.client, target.identity)
        await _put(pipe, target, facts)

    async def forget(connection_id: str) -> None:
        watch.forget(connection_id)

    return PollKind(
        name=NAME,
        interval_ms=_interval,
        poll=poll,
        forget=forget,
        applies=lambda target: not rides.carried(target, NAME),
        idle_recheck_share=RECHECK_SHARE,
    )


def config_watch_rider(watch: ConfigWatch, pipe: Pipe, settings: Settings) -> InfoRider:
    async def take(target: PollTarget, commandstats: ParsedInfo, _at_ms: int) -> None:
        facts = await watch.check(
            target.connection.id, target.client, target.identity, commandstats=commandstats
        )
        await _put(pipe, target, facts)

    return InfoRider(
        name=NAME,
        interval_s=lambda: settings.CONFIG_WATCH_INTERVAL_MS / 1000,
        take=take,
    )


async def _put(pipe: Pipe, target: PollTarget, facts: ReplicaBufferLimitFacts | None) -> None:
    if facts is not None:
        await pipe.put_facts(target.connection.id, facts)


def _interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.CONFIG_WATCH_INTERVAL_MS
