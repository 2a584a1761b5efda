"""ACL LOG replies parsed into typed entries.

Each entry is a flat field/value list (a map under RESP3). `entry-id`,
`timestamp-created` and `timestamp-last-updated` exist from Redis 7.2 and on every
Valkey; Redis 6.2 and 7.0 send only count, reason, context, object, username,
age-seconds and client-info, so those three are None there. `age-seconds` is the
time since the entry was last updated (Redis/Valkey move it on every grouped denial),
as a decimal string with millisecond precision.
"""

from dataclasses import dataclass
from typing import Any

from svc_monitor.engine.clients import ClientInfo, client_info, parse_client_line


@dataclass(frozen=True, slots=True)
class AclLogEntry:
    """One ACL LOG entry; the server groups repeated denials into one, counting them."""

    count: int
    reason: str
    context: str
    object: str
    username: str
    age_seconds: float
    client_info: str
    entry_id: int | None = None
    timestamp_created: int | None = None  # epoch ms
    timestamp_last_updated: int | None = None  # epoch ms

    @property
    def client(self) -> ClientInfo:
        return client_info(parse_client_line(self.client_info))


def parse_acl_log(reply: Any) -> list[AclLogEntry]:
    """Entries newest first, as the server lists them; malformed entries are skipped."""
    if not isinstance(reply, list | tuple):
        return []
    entries = []
    for item in reply:
        fields = _fields(item)
        if fields is None:
            continue
        entry = _entry(fields)
        if entry is not None:
            entries.append(entry)
    return entries


def _fields(item: Any) -> dict[str, Any] | None:
    if isinstance(item, dict):
        return {_text(k): v for k, v in item.items()}
    if isinstance(item, list | tuple) and len(item) % 2 == 0:
        return {_text(item[i]): item[i + 1] for i in range(0, len(item), 2)}
    return None


def _entry(fields: dict[str, Any]) -> AclLogEntry | None:
    count = _int(fields.get("count"))
    reason = fields.get("reason")
    if count is None or reason is None:
        return None
    return AclLogEntry(
        count=count,
        reason=_text(reason),
        context=_text(fields.get("context", "")),
        object=_text(fields.get("object", "")),
        username=_text(fields.get("username", "")),
        age_seconds=_float(fields.get("age-seconds")) or 0.0,
        client_info=_text(fields.get("client-info", "")),
        entry_id=_int(fields.get("entry-id")),
        timestamp_created=_int(fields.get("timestamp-created")),
        timestamp_last_updated=_int(fields.get("timestamp-last-updated")),
    )


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(_text(value))
    except ValueError:
        return None


def _float(value: Any) -> float | None:
    try:
        return float(_text(value))
    except ValueError:
        return None
