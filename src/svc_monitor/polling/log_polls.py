"""SLOWLOG and COMMANDLOG passes: read the newest entries, store the new ones."""

import logging

from svc_monitor.config import Settings
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.engine.slowlog import FETCH_COUNT, LOG_TYPES, parse_log_reply
from svc_monitor.events import EventBus, SlowlogLength, now_ms
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues
from svc_monitor.slowlog.service import SlowlogService

logger = logging.getLogger(__name__)


class LogPoller:
    """The `slowlog` and `commandlog` poll kinds of every connection."""

    def __init__(self, slowlog: SlowlogService, *, bus: EventBus | None = None) -> None:
        self._slowlog = slowlog
        self._bus = bus
        # Connections that refused SLOWLOG LEN: not asked again until forgotten, since
        # each refusal of a NOPERM user would add an entry to the ACL log we audit.
        self._length_refused: set[str] = set()

    async def poll_slowlog(self, target: PollTarget) -> None:
        try:
            reply = await target.client.execute("SLOWLOG", "GET", FETCH_COUNT)
        except EngineResponseError as exc:
            # Refused (NOPERM, renamed away on a managed service): nothing to keep, and
            # not the instance being down; the INFO poll decides that.
            logger.debug("SLOWLOG GET refused on %s: %s", target.connection.id, exc.message)
        else:
            await self._slowlog.record(
                target.connection.id,
                node=target.client.target.address,
                log_type=None,
                entries=parse_log_reply(reply),
            )
        if self._bus is not None and target.connection.id not in self._length_refused:
            await self._publish_length(target, self._bus)

    async def _publish_length(self, target: PollTarget, bus: EventBus) -> None:
        """SLOWLOG LEN for slowlog.threshold; a refusal degrades quietly like GET's."""
        try:
            length = await target.client.execute("SLOWLOG", "LEN")
        except EngineResponseError as exc:
            logger.debug("SLOWLOG LEN refused on %s: %s", target.connection.id, exc.message)
            self._length_refused.add(target.connection.id)
            return
        if isinstance(length, int):
            bus.publish(
                SlowlogLength(connection_id=target.connection.id, at_ms=now_ms(), length=length)
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
        self._length_refused.discard(connection_id)

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
