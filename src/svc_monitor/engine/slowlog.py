"""SLOWLOG GET and COMMANDLOG GET replies as entries.

Both commands answer the same shape, newest first: one array per entry of
`[id, unix seconds, duration, [args...], client address, client name]`.
Redis before 4.0 sends only the first four fields. For COMMANDLOG types
`large-request` and `large-reply` (Valkey 8.1+) the third field is a size in
bytes, not microseconds. Entries that do not have this shape are skipped, never
fatal: one odd entry must not cost the whole batch.
"""

from dataclasses import dataclass
from typing import Any, Literal, get_args

from svc_monitor.engine.reply_values import integer, text

LogType = Literal["slow", "large-request", "large-reply"]
LOG_TYPES: tuple[LogType, ...] = get_args(LogType)

# How many entries one poll asks for; the servers' default ring size (slowlog-max-len,
# commandlog-*-max-len) is 128, so one read sees the whole log at default settings.
FETCH_COUNT = 128


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One slow-log or command-log entry as the server reported it."""

    id: int
    started_at_ms: int
    duration: int  # microseconds for slow entries, bytes for large-request/large-reply
    args: tuple[str, ...]
    client_address: str | None
    client_name: str | None

    @property
    def command(self) -> str:
        return self.args[0].upper() if self.args else ""


def parse_log_reply(reply: Any) -> list[LogEntry]:
    """Every well-formed entry of a SLOWLOG GET / COMMANDLOG GET reply, in reply order."""
    if not isinstance(reply, list | tuple):
        return []
    entries = (_entry(item) for item in reply)
    return [e for e in entries if e is not None]


def _entry(item: Any) -> LogEntry | None:
    if not isinstance(item, list | tuple) or len(item) < 4:
        return None
    entry_id, started_s, duration = (integer(v) for v in item[:3])
    raw_args = item[3]
    if entry_id is None or started_s is None or duration is None:
        return None
    if not isinstance(raw_args, list | tuple):
        return None
    return LogEntry(
        id=entry_id,
        started_at_ms=started_s * 1000,
        duration=duration,
        args=tuple(text(a) for a in raw_args),
        client_address=text(item[4]) if len(item) > 4 else None,
        client_name=text(item[5]) if len(item) > 5 else None,
    )
