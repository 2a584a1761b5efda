"""The config_watch poll kind: who changed a server's users or configuration
(detectors/config_watch.py), every CONFIG_WATCH_INTERVAL_MS. Where the engine allows it,
the INFO commandstats each check starts from is read along with INFO
(polling/info_rides.py), and the check runs in that INFO pass."""

from svc_monitor.config import Settings
from svc_monitor.detectors.config_watch import ConfigWatch
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.polling.info_rides import RECHECK_SHARE, InfoRider, InfoRides
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues

NAME = "config_watch"


def config_watch_kind(watch: ConfigWatch, rides: InfoRides) -> PollKind:
    async def poll(target: PollTarget) -> None:
        await watch.check(target.connection.id, target.client, target.identity)

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


def config_watch_rider(watch: ConfigWatch, settings: Settings) -> InfoRider:
    async def take(target: PollTarget, commandstats: ParsedInfo, _at_ms: int) -> None:
        await watch.check(
            target.connection.id, target.client, target.identity, commandstats=commandstats
        )

    return InfoRider(
        name=NAME,
        interval_s=lambda: settings.CONFIG_WATCH_INTERVAL_MS / 1000,
        take=take,
    )


def _interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.CONFIG_WATCH_INTERVAL_MS
