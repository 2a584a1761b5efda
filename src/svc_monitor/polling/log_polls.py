"""SLOWLOG and COMMANDLOG passes: read the newest entries, store the new ones."""

import logging

from svc_monitor.config import Settings
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.engine.slowlog import FETCH_COUNT, LOG_TYPES, parse_log_reply
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues
from svc_monitor.slowlog.service import SlowlogService

logger = logging.getLogger(__name__)


class LogPoller:
    """The `slowlog` and `commandlog` poll kinds of every connection."""

    def __init__(self, slowlog: SlowlogService) -> None:
        self._slowlog = slowlog

    async def poll_slowlog(self, target: PollTarget) -> None:
        try:
            reply = await target.client.execute("SLOWLOG", "GET", FETCH_COUNT)
        except EngineResponseError as exc:
            # Refused (NOPERM, renamed away on a managed service): nothing to keep, and
            # not the instance being down; the INFO poll decides that.
            logger.debug("SLOWLOG GET refused on %s: %s", target.connection.id, exc.message)
            return
        await self._slowlog.record(
            target.connection.id,
            node=target.client.target.address,
            log_type=None,
            entries=parse_log_reply(reply),
        )

    async def poll_commandlog(self, target: PollTarget) -> None:
        identity = target.identity
        if identity is None or not identity.capabilities.has_command_log:
            return
        replies = await target.client.try_each(
            [["COMMANDLOG", "GET", FETCH_COUNT, log_type] for log_type in LOG_TYPES]
        )
        failed: EngineError | None = None
        for log_type, reply in zip(LOG_TYPES, replies, strict=True):
            if isinstance(reply, EngineError):
                failed = failed or reply
                continue
            await self._slowlog.record(
                target.connection.id,
                node=target.client.target.address,
                log_type=log_type,
                entries=parse_log_reply(reply),
            )
        if failed is not None:
            raise failed  # the others are stored; the loop backs off and logs it

    async def forget(self, connection_id: str) -> None:
        # Removed or edited: the next poll seeds its high-water marks from storage again.
        self._slowlog.forget(connection_id)

    def kinds(self) -> list[PollKind]:
        return [
            PollKind(
                name="slowlog",
                interval_ms=_log_interval,
                poll=self.poll_slowlog,
                forget=self.forget,
            ),
            PollKind(
                name="commandlog",
                interval_ms=_log_interval,
                poll=self.poll_commandlog,
                forget=self.forget,
            ),
        ]


def _log_interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.SLOWLOG_POLL_INTERVAL_MS
