"""Commandstats history from INFO commandstats polls, and the latest counters.

The first poll of a connection is a baseline and stores nothing. From then on a command's
row is written whenever its `calls` moved since the previous poll. A counter that went
down (server restart, CONFIG RESETSTAT) starts a new baseline for that command instead of
storing a negative delta. A command absent from the previous poll counts from zero: it
has not been called since the server's last reset.

The latest poll's counters (the summary) live in memory per connection; they are a live
view, refreshed every poll, so nothing is lost by not storing them.

A push of a wide instance carries up to 1,024 commands, and each request that touches the
connection records them (a third of such a request's time when every entry was read
anew). Most commands do not move between two reads, so an entry equal to the previous
read's keeps the counters read then: only changed entries are read again.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from svc_monitor.commandstats.schemas import CommandStatRead, CommandStatSample
from svc_monitor.commandstats.store import CommandstatsStore
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.info import FieldValue, ParsedInfo
from svc_monitor.events import now_ms
from svc_monitor.kit.records import from_attributes
from svc_monitor.pipe.facts import CommandstatsFacts, Facts

_PREFIX = "cmdstat_"


@dataclass(frozen=True, slots=True)
class _Counters:
    calls: int
    usec: int | None  # None: pushed `cmd.calls` without `cmd.usec`
    usec_per_call: float | None
    rejected_calls: int | None
    failed_calls: int | None


@dataclass(frozen=True, slots=True)
class _Poll:
    captured_at: int
    counters: dict[str, _Counters]  # by command
    # What the counters were read from: the INFO section, and each entry's command and
    # counters by INFO name (`cmdstat_get`), for the next read to reuse. Bounded by the
    # section, which the poll or push already holds.
    section: Mapping[str, FieldValue]
    read: dict[str, tuple[str, _Counters]]


class CommandstatsService:
    """Records commandstats polls and answers the summary and history routes."""

    def __init__(self, store: CommandstatsStore) -> None:
        self._store = store
        self._latest: dict[str, _Poll] = {}

    def observe_facts(self, connection_id: str, facts: Facts) -> None:
        """As a facts consumer of the pipe: INFO commandstats, polled or pushed."""
        if isinstance(facts, CommandstatsFacts):
            self.record(connection_id, facts.info, captured_at=facts.at_ms)

    def record(self, connection_id: str, info: ParsedInfo, *, captured_at: int) -> None:
        """Keep this read as the baseline of the next; queue a row for each command that
        moved since the last (written within a second: storage/insert_batcher.py)."""
        previous = self._latest.get(connection_id)
        current = _read(info.sections.get("commandstats", {}), captured_at, previous)
        self._latest[connection_id] = current
        if previous is None:
            return  # the baseline
        interval = max(0, captured_at - previous.captured_at)
        rows = []
        for command, now in current.counters.items():
            before = previous.counters.get(command)
            if now is before:
                continue  # an entry equal to the previous read's: unmoved
            base_calls, base_usec = (before.calls, before.usec) if before else (0, 0)
            usec_went_down = now.usec is not None and base_usec is not None and now.usec < base_usec
            if now.calls <= base_calls or usec_went_down:
                continue  # unmoved, or reset since: this poll is the new baseline
            rows.append(
                {
                    "connection_id": connection_id,
                    "captured_at": captured_at,
                    "command": command,
                    "calls": now.calls,
                    "usec": now.usec,
                    "usec_per_call": now.usec_per_call,
                    "rejected_calls": now.rejected_calls,
                    "failed_calls": now.failed_calls,
                    "calls_delta": now.calls - base_calls,
                    "usec_delta": None
                    if now.usec is None or base_usec is None
                    else now.usec - base_usec,
                    "interval_ms": interval,
                }
            )
        self._store.add(rows)

    def summary(self, connection_id: str, *, pushed: bool = False) -> list[CommandStatRead]:
        """The latest poll's counters, most called first; empty before the first poll.
        A push connection's rows leave out rejected/failed calls (never pushed), so with
        exclude_unset they are absent rather than a misleading null or 0."""
        poll = self._latest.get(connection_id)
        if poll is None:
            return []
        return _summary_of(poll, pushed=pushed)

    async def live_summary(self, client: EngineClient) -> list[CommandStatRead]:
        """The same, read from the server now: for a connection another replica polls,
        whose latest poll this replica never saw."""
        info = await client.info("commandstats")
        return _summary_of(_read(info.sections.get("commandstats", {}), now_ms(), None))

    async def history(
        self, connection_id: str, command: str, *, since: int | None, until: int | None, limit: int
    ) -> list[CommandStatSample]:
        rows = await self._store.history(
            connection_id, command.lower(), since=since, until=until, limit=limit
        )
        return [from_attributes(CommandStatSample, r) for r in rows]

    def forget(self, connection_id: str) -> None:
        self._latest.pop(connection_id, None)


def _summary_of(poll: _Poll, *, pushed: bool = False) -> list[CommandStatRead]:
    stats = [
        CommandStatRead(
            command=command,
            calls=c.calls,
            usec=c.usec,
            usecPerCall=c.usec_per_call,
            capturedAt=poll.captured_at,
        )
        if pushed
        else CommandStatRead(
            command=command,
            calls=c.calls,
            usec=c.usec,
            usecPerCall=c.usec_per_call,
            rejectedCalls=c.rejected_calls,
            failedCalls=c.failed_calls,
            capturedAt=poll.captured_at,
        )
        for command, c in poll.counters.items()
    ]
    return sorted(stats, key=lambda s: (-s.calls, s.command))


def _read(section: Mapping[str, FieldValue], captured_at: int, previous: _Poll | None) -> _Poll:
    """The counters of a commandstats section, reusing the previous read's for every entry
    that is unchanged since."""
    if previous is not None and section is previous.section:
        # The same section again (a push connection's is kept while nothing in it changes).
        return _Poll(captured_at, previous.counters, section, previous.read)
    before_section = previous.section if previous is not None else {}
    before = previous.read if previous is not None else {}
    counters: dict[str, _Counters] = {}
    read: dict[str, tuple[str, _Counters]] = {}
    for name, value in section.items():
        entry = before.get(name)
        if entry is None or before_section.get(name) != value:
            entry = _entry(name, value)
            if entry is None:
                continue
        read[name] = entry
        counters[entry[0]] = entry[1]
    return _Poll(captured_at, counters, section, read)


def _entry(name: str, value: FieldValue) -> tuple[str, _Counters] | None:
    """(command, counters) of one `cmdstat_*` entry; None when it is not one or has no
    calls."""
    if not name.startswith(_PREFIX) or not isinstance(value, dict):
        return None
    calls, usec = _int(value.get("calls")), _int(value.get("usec"))
    if calls is None:
        return None
    per_call = value.get("usec_per_call")
    if isinstance(per_call, int | float):
        usec_per_call: float | None = float(per_call)
    elif usec is None:  # pushed without cmd.usec: the time is unknown, not 0
        usec_per_call = None
    else:
        usec_per_call = usec / calls if calls else 0.0
    counters = _Counters(
        calls=calls,
        usec=usec,
        usec_per_call=usec_per_call,
        rejected_calls=_int(value.get("rejected_calls")),
        failed_calls=_int(value.get("failed_calls")),
    )
    return name.removeprefix(_PREFIX).lower(), counters


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
