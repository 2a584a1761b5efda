"""The config_watch poll kind: who changed a server's users or configuration
(detectors/config_watch.py), every CONFIG_WATCH_INTERVAL_MS."""

from svc_monitor.config import Settings
from svc_monitor.detectors.config_watch import ConfigWatch
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues


def config_watch_kind(watch: ConfigWatch) -> PollKind:
    async def poll(target: PollTarget) -> None:
        await watch.check(target.connection.id, target.client, target.identity)

    async def forget(connection_id: str) -> None:
        watch.forget(connection_id)

    return PollKind(name="config_watch", interval_ms=_interval, poll=poll, forget=forget)


def _interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.CONFIG_WATCH_INTERVAL_MS
