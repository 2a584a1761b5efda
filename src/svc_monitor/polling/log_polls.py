"""SLOWLOG and COMMANDLOG passes: read the newest entries, store the new ones, and hand
their facts (lengths, newest id, patterns) to the pipe: Prometheus reads them from live
state, the slowlog.threshold reading and anomaly detection judge them.

Each pass asks the lengths first and reads only the logs that are not empty: on a quiet
server most are, and a GET of an empty log was most of what these polls sent.

Where the engine has COMMANDLOG (Valkey 8.1+), SLOWLOG is another name for its `slow` log:
the same entries, ids and length. The slowlog pass then stores what it read as the
commandlog's `slow` log as well, and the commandlog pass asks only for the two size logs,
instead of asking the server for the same log twice a pass."""

import logging
from typing import Any

from svc_monitor.config import Settings
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.engine.slowlog import FETCH_COUNT, LOG_TYPES, LogEntry, LogType, parse_log_reply
from svc_monitor.events import now_ms
from svc_monitor.pipe.facts import CommandlogFacts, PatternCount, SlowlogFacts
from svc_monitor.pipe.live_view import LiveView
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.polling.size_log_gate import SizeLogGate
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues
from svc_monitor.slowlog.service import SlowlogService

logger = logging.getLogger(__name__)

SIZE_LOG_TYPES: tuple[LogType, ...] = ("large-request", "large-reply")
# The most one catch-up read asks for, whatever the server's ring holds: a burst longer
# than this between two polls keeps its newest entries only.
CATCH_UP_COUNT = 1024


class LogPoller:
    """The `slowlog` and `commandlog` poll kinds of every connection."""

    def __init__(
        self, slowlog: SlowlogService, *, pipe: Pipe, live_state: LiveView, gate: SizeLogGate
    ) -> None:
        self._slowlog = slowlog
        self._pipe = pipe
        # The last commandlog facts: what a size log left out of a pass still holds.
        self._live_state = live_state
        self._gate = gate
        # Connections that refused SLOWLOG LEN: not asked again until forgotten, since
        # each refusal of a NOPERM user would add an entry to the ACL log we audit.
        self._length_refused: set[str] = set()

    async def poll_slowlog(self, target: PollTarget) -> None:
        identity = target.identity
        if identity is None or not identity.capabilities.has_slow_log:
            # Not detected yet (or down), or detection found SLOWLOG missing: renamed,
            # disabled by the provider, denied. Not asked until a reconnect probes afresh,
            # so a NOPERM user's refusals never pile up in the ACL log we audit.
            return
        connection_id = target.connection.id
        length: int | None = None
        if connection_id not in self._length_refused:
            (reply,) = await target.client.try_each([["SLOWLOG", "LEN"]])
            length = self._length(reply, connection_id)
        entries: list[LogEntry] | None = []
        if length != 0:  # an empty log has nothing to read: no GET, and no reply to parse
            (reply,) = await target.client.try_each([["SLOWLOG", "GET", FETCH_COUNT]])
            # A refusal (NOPERM, renamed away on a managed service) leaves nothing to keep,
            # and is not the instance being down; the INFO poll decides that.
            entries = None
            if not _refused(reply, "SLOWLOG GET", connection_id):
                entries = await self._caught_up(target, None, parse_log_reply(reply), length)
                for log_type in (
                    (None, "slow") if identity.capabilities.has_command_log else (None,)
                ):
                    await self._slowlog.record(
                        connection_id,
                        node=target.client.target.address,
                        log_type=log_type,
                        entries=entries,
                    )
        if entries is None and length is None:
            return
        await self._pipe.put_facts(
            connection_id,
            SlowlogFacts(
                at_ms=now_ms(),
                length=length,
                last_id=max((e.id for e in entries or ()), default=None),
                patterns=self._slowlog.pattern_counts(connection_id, None, entries or []),
            ),
        )

    def _length(self, reply: Any, connection_id: str) -> int | None:
        """SLOWLOG LEN for slowlog.threshold and the facts; a refusal degrades quietly."""
        if _refused(reply, "SLOWLOG LEN", connection_id):
            self._length_refused.add(connection_id)
            return None
        return reply if isinstance(reply, int) else None

    async def poll_commandlog(self, target: PollTarget) -> None:
        identity = target.identity
        if identity is None or not identity.capabilities.has_command_log:
            return
        connection_id = target.connection.id
        last = self._live_state.facts(connection_id, CommandlogFacts)
        # The slowlog pass reads `slow` under its other name, where the server allows it; a
        # size log whose byte counter has not grown by its threshold has nothing new.
        log_types = [
            t
            for t in (SIZE_LOG_TYPES if identity.capabilities.has_slow_log else LOG_TYPES)
            if t == "slow" or last is None or self._gate.may_have_grown(connection_id, t)
        ]
        for log_type in log_types:
            self._gate.asking(connection_id, log_type)
        lengths = (
            await target.client.try_each(
                [["COMMANDLOG", "LEN", log_type] for log_type in log_types]
            )
            if log_types
            else []
        )
        # An empty log has nothing to read: GET only the others (a LEN that failed too).
        wanted = [t for t, length in zip(log_types, lengths, strict=True) if length != 0]
        replies = (
            await target.client.try_each(
                [["COMMANDLOG", "GET", FETCH_COUNT, log_type] for log_type in wanted]
            )
            if wanted
            else []
        )
        gets = dict(zip(wanted, replies, strict=True))
        failed = next((r for r in (*lengths, *gets.values()) if isinstance(r, EngineError)), None)
        read: dict[LogType, list[LogEntry]] = {t: [] for t in log_types if t not in gets}
        for log_type, length in zip(log_types, lengths, strict=True):
            reply = gets.get(log_type)
            if isinstance(length, EngineError) or isinstance(reply, EngineError):
                self._gate.forget_log(connection_id, log_type)  # asked again next pass
            if reply is None or isinstance(reply, EngineError):
                continue
            read[log_type] = await self._caught_up(
                target,
                log_type,
                parse_log_reply(reply),
                length if isinstance(length, int) else None,
            )
            await self._slowlog.record(
                connection_id,
                node=target.client.target.address,
                log_type=log_type,
                entries=read[log_type],
            )
        answered = dict(zip(log_types, lengths, strict=True))
        facts = self._commandlog_facts(connection_id, answered, read, last)
        if facts is not None:
            await self._pipe.put_facts(connection_id, facts)
        if failed is not None:
            raise failed  # the others are stored; the loop backs off and logs it

    def _commandlog_facts(
        self,
        connection_id: str,
        answered: dict[LogType, Any],
        read: dict[LogType, list[LogEntry]],
        last: CommandlogFacts | None,
    ) -> CommandlogFacts | None:
        """This pass's facts: what a size log answered, or what it held when last asked
        if it was left out (it cannot have grown since)."""
        large_request = answered.get("large-request", last.large_request if last else None)
        large_reply = answered.get("large-reply", last.large_reply if last else None)
        if not isinstance(large_request, int) or not isinstance(large_reply, int):
            return None

        def patterns(log_type: LogType) -> tuple[PatternCount, ...]:
            if log_type not in answered and last is not None:
                if log_type == "large-request":
                    return last.large_request_patterns
                return last.large_reply_patterns
            return self._slowlog.pattern_counts(connection_id, log_type, read.get(log_type, []))

        return CommandlogFacts(
            at_ms=now_ms(),
            large_request=large_request,
            large_reply=large_reply,
            large_request_patterns=patterns("large-request"),
            large_reply_patterns=patterns("large-reply"),
        )

    async def _caught_up(
        self,
        target: PollTarget,
        log_type: LogType | None,
        entries: list[LogEntry],
        length: int | None,
    ) -> list[LogEntry]:
        """`entries`, or a longer read when a burst between two polls pushed entries not
        yet stored out of the newest FETCH_COUNT while the server still holds them (its
        ring is longer than one read). Costs one more round trip, only after such a burst."""
        if len(entries) < FETCH_COUNT or length is None or length <= len(entries):
            return entries
        if not await self._slowlog.missed_some(
            target.connection.id,
            node=target.client.target.address,
            log_type=log_type,
            entries=entries,
        ):
            return entries
        count = min(length, CATCH_UP_COUNT)
        command: list[Any] = (
            ["SLOWLOG", "GET", count]
            if log_type is None
            else ["COMMANDLOG", "GET", count, log_type]
        )
        (reply,) = await target.client.try_each([command])
        if isinstance(reply, EngineError):
            return entries  # the first read still counts; the loop's next pass tries again
        longer = parse_log_reply(reply)
        return longer if len(longer) > len(entries) else entries

    async def forget(self, connection_id: str) -> None:
        # Removed or edited: the next poll seeds its high-water marks from storage again.
        self._slowlog.forget(connection_id)
        self._length_refused.discard(connection_id)
        self._gate.forget(connection_id)

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


def _refused(reply: Any, command: str, connection_id: str) -> bool:
    """True for a refusal (logged at debug); any other failure is raised for the loop."""
    if isinstance(reply, EngineResponseError):
        logger.debug("%s refused on %s: %s", command, connection_id, reply.message)
        return True
    if isinstance(reply, EngineError):
        raise reply
    return False


def _log_interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.SLOWLOG_POLL_INTERVAL_MS
