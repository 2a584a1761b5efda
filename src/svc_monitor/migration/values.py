"""A key's whole value read type by type, written back by each type's own commands, and
compared: the type-aware copy, the catch-up pass and validation all stand on this.

Every command is named in bytes: valkey-py looks its reply callbacks up by the str name,
so a bytes name gets the reply as the server sent it (XRANGE's pairs, HSCAN's flat list),
which is what the copy writes back and compares.

Reads are read-only (GET, HSCAN, LRANGE, SSCAN, ZRANGE, XRANGE, XINFO, XPENDING,
HPEXPIRETIME); big values are read in chunks of CHUNK elements so no single reply holds
the source long. The write of one key is one MULTI/EXEC on the target: the key is
deleted, rebuilt, and given its expiry, so a reader of the target never sees half a key.

What a stream carries besides its entries is copied too: its last id, entries added
and largest deleted id (XSETID, Redis 7.0+/Valkey), every consumer group with its last
delivered id and entries read, its consumers, and each pending entry with its consumer
and delivery count (XCLAIM ... FORCE JUSTID RETRYCOUNT). The idle time of a pending entry
starts again at the copy.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from svc_monitor.engine.errors import EngineError

CHUNK = 1_000  # elements per read of a big value, and per write command
CORE_TYPES = frozenset({"string", "list", "set", "zset", "hash", "stream"})


@dataclass(frozen=True, slots=True)
class Group:
    name: bytes
    last_delivered: bytes
    entries_read: int | None
    consumers: tuple[bytes, ...]
    pending: tuple[tuple[bytes, bytes, int], ...]  # (entry id, consumer, deliveries)


@dataclass(slots=True)
class StreamMeta:
    last_id: bytes = b"0-0"
    entries_added: int | None = None
    max_deleted: bytes | None = None
    groups: tuple[Group, ...] = ()


@dataclass(slots=True)
class KeyValue:
    """One key as read: its type, its data, and its absolute expiry (epoch ms) if any."""

    type: str
    data: Any  # bytes, dict, list, set or (member, score) pairs, as the type has it
    expire_at_ms: int | None = None
    field_expiry: dict[bytes, int] = field(default_factory=dict)  # hash field -> epoch ms
    stream: StreamMeta | None = None

    def same_as(self, other: "KeyValue", *, ttl_tolerance_ms: int) -> str | None:
        """None when `other` holds the same; else what differs, for the report."""
        if self.type != other.type:
            return f"type {self.type} on the source, {other.type} on the target"
        if _canonical(self) != _canonical(other):
            return "value differs"
        if (self.expire_at_ms is None) != (other.expire_at_ms is None):
            return "TTL set on one end only"
        if self.expire_at_ms is not None and other.expire_at_ms is not None:
            off = abs(self.expire_at_ms - other.expire_at_ms)
            if off > ttl_tolerance_ms:
                return f"TTL differs by {off} ms"
        if set(self.field_expiry) != set(other.field_expiry):
            return "hash field TTLs differ"
        return None

    @property
    def size_bytes(self) -> int:
        """Bytes of data carried, for the copy's rate."""
        if isinstance(self.data, bytes):
            return len(self.data)
        if isinstance(self.data, dict):
            return sum(len(k) + len(v) for k, v in self.data.items())
        total = 0
        for item in self.data:
            if isinstance(item, bytes):
                total += len(item)
            else:
                total += sum(len(p) if isinstance(p, bytes) else len(str(p)) for p in _flat(item))
        return total


def _flat(item: Any) -> list[Any]:
    out: list[Any] = []
    for part in item:
        if isinstance(part, list | tuple):
            out.extend(_flat(part))
        else:
            out.append(part)
    return out


def _canonical(v: KeyValue) -> Any:
    if v.type == "zset":
        return {m: float(s) for m, s in v.data}
    if v.type == "set":
        return set(v.data)
    if v.type == "stream":
        meta = v.stream or StreamMeta()
        groups = {(g.name, g.last_delivered, g.consumers, g.pending) for g in meta.groups}
        return (tuple((i, tuple(f)) for i, f in v.data), meta.last_id, frozenset(groups))
    return v.data


class Commands(Protocol):
    """What a Reader reads through: an EngineClient, or one routing by key (copier.py)."""

    async def execute(self, *args: Any) -> Any: ...

    async def try_each(self, commands: Sequence[Sequence[Any]]) -> list[Any]: ...


# The element count of each type, and the one command that reads a small value whole.
_SIZE = {"string": b"STRLEN", "hash": b"HLEN", "list": b"LLEN", "set": b"SCARD", "zset": b"ZCARD"}
_WHOLE: dict[str, list[Any]] = {
    "string": [b"GET"],
    "hash": [b"HGETALL"],
    "list": [b"LRANGE", 0, -1],
    "set": [b"SMEMBERS"],
    "zset": [b"ZRANGE", 0, -1, b"WITHSCORES"],
}


class Reader:
    """Reads whole keys of one server (module docstring)."""

    def __init__(self, client: Commands, *, field_ttls: bool) -> None:
        self._client = client
        self._field_ttls = field_ttls

    async def read_many(
        self, keys: Sequence[tuple[bytes, str, int | None]]
    ) -> dict[bytes, KeyValue | None]:
        """Many keys (key, type, expiry) in few round trips: their sizes pipelined, then
        every value of at most CHUNK elements read whole in one more pipeline (string
        sizes are bytes: a string under CHUNK KiB counts as small). Streams and the big
        ones are read one by one, in chunks (`read`)."""
        plain = [(k, t, at) for k, t, at in keys if t in _SIZE]
        sizes = await self._client.try_each([[_SIZE[t], k] for k, t, _ in plain])
        small = [
            (k, t, at)
            for (k, t, at), n in zip(plain, sizes, strict=True)
            if isinstance(n, int) and n <= (CHUNK * 1024 if t == "string" else CHUNK)
        ]
        commands: list[list[Any]] = [[*_WHOLE[t][:1], k, *_WHOLE[t][1:]] for k, t, _ in small]
        replies = await self._client.try_each(commands) if commands else []
        found: dict[bytes, KeyValue | None] = {}
        for (key, kind, at), reply in zip(small, replies, strict=True):
            found[key] = None if isinstance(reply, Exception) else _whole(kind, reply, at)
        if self._field_ttls:
            for key, kind, _ in small:
                value = found.get(key)
                if kind == "hash" and value is not None:
                    value.field_expiry = await self._field_expiry(key, list(value.data))
        streams = [(k, at) for k, t, at in keys if t == "stream"]
        heads = await self._client.try_each([c for k, _ in streams for c in _stream_head(k)])
        for i, (key, at) in enumerate(streams):
            found[key] = await self._stream(key, at, heads[3 * i : 3 * i + 3])
        for key, kind, at in keys:
            if key not in found:
                found[key] = await self.read(key, kind, at)
        return found

    async def read(self, key: bytes, kind: str, expire_at_ms: int | None) -> KeyValue | None:
        """The key's value; None when it is gone (expired or deleted meanwhile)."""
        c = self._client
        if kind == "string":
            data = await c.execute(b"GET", key)
            return None if data is None else KeyValue(kind, data, expire_at_ms)
        if kind == "hash":
            pairs = await self._scan(b"HSCAN", key)
            data = {pairs[i]: pairs[i + 1] for i in range(0, len(pairs), 2)}
            value = KeyValue(kind, data, expire_at_ms)
            if self._field_ttls and data:
                value.field_expiry = await self._field_expiry(key, list(data))
            return value if data else None
        if kind == "set":
            members = await self._scan(b"SSCAN", key)
            return KeyValue(kind, set(members), expire_at_ms) if members else None
        if kind == "list":
            items = await self._ranged(b"LRANGE", key)
            return KeyValue(kind, items, expire_at_ms) if items else None
        if kind == "zset":
            flat = await self._ranged(b"ZRANGE", key, "WITHSCORES", step=2)
            scored = [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
            return KeyValue(kind, scored, expire_at_ms) if scored else None
        if kind == "stream":
            return await self._stream(key, expire_at_ms)
        raise ValueError(f"no type-aware read for type {kind}")

    async def _scan(self, command: bytes, key: bytes) -> list[bytes]:
        found: list[bytes] = []
        cursor: Any = 0
        while True:
            cursor, page = await self._client.execute(command, key, cursor, "COUNT", CHUNK)
            found.extend(page)
            if int(cursor) == 0:
                return found

    async def _ranged(self, command: bytes, key: bytes, *extra: str, step: int = 1) -> list[bytes]:
        found: list[bytes] = []
        start = 0
        while True:
            page = await self._client.execute(command, key, start, start + CHUNK - 1, *extra)
            found.extend(page)
            if len(page) < CHUNK * step:
                return found
            start += CHUNK

    async def _field_expiry(self, key: bytes, fields: list[bytes]) -> dict[bytes, int]:
        expiry: dict[bytes, int] = {}
        for start in range(0, len(fields), CHUNK):
            chunk = fields[start : start + CHUNK]
            reply = await self._client.execute(b"HPEXPIRETIME", key, "FIELDS", len(chunk), *chunk)
            for name, at in zip(chunk, reply, strict=False):
                if isinstance(at, int) and at > 0:
                    expiry[name] = at
        return expiry

    async def _stream(
        self, key: bytes, expire_at_ms: int | None, first: list[Any] | None = None
    ) -> KeyValue | None:
        """A stream whole; `first` is the replies of _stream_head when a batch read them."""
        c = self._client
        head = first or await c.try_each(_stream_head(key))
        if isinstance(head[0], EngineError) or isinstance(head[1], EngineError):
            return None  # gone meanwhile
        info = _pairs(head[0])
        page = head[1]
        entries: list[tuple[bytes, list[bytes]]] = []
        while True:
            entries.extend((entry_id, list(fields)) for entry_id, fields in page)
            if len(page) < CHUNK:
                break
            page = await c.execute(b"XRANGE", key, b"(" + page[-1][0], "+", "COUNT", CHUNK)
        meta = StreamMeta(
            last_id=info.get(b"last-generated-id", b"0-0"),
            entries_added=_int(info.get(b"entries-added")),
            max_deleted=info.get(b"max-deleted-entry-id"),
        )
        groups = []
        listed = head[2] if not isinstance(head[2], EngineError) else []
        for raw in listed:
            g = _pairs(raw)
            name = g[b"name"]
            consumers = tuple(
                sorted(
                    _pairs(x)[b"name"] for x in await c.execute(b"XINFO", "CONSUMERS", key, name)
                )
            )
            pending: list[tuple[bytes, bytes, int]] = []
            begin = b"-"
            while True:
                page = await c.execute(b"XPENDING", key, name, begin, "+", CHUNK)
                pending.extend((p[0], p[1], int(p[3])) for p in page)
                if len(page) < CHUNK:
                    break
                begin = b"(" + page[-1][0]
            groups.append(
                Group(
                    name=name,
                    last_delivered=g.get(b"last-delivered-id", b"0-0"),
                    entries_read=_int(g.get(b"entries-read")),
                    consumers=consumers,
                    pending=tuple(pending),
                )
            )
        meta.groups = tuple(groups)
        return KeyValue("stream", entries, expire_at_ms, stream=meta)


def _stream_head(key: bytes) -> list[list[Any]]:
    """What a stream's read starts with: its info, its first entries, its groups."""
    return [
        [b"XINFO", b"STREAM", key],
        [b"XRANGE", key, b"-", b"+", b"COUNT", CHUNK],
        [b"XINFO", b"GROUPS", key],
    ]


def _whole(kind: str, reply: Any, at: int | None) -> KeyValue | None:
    """A small value as its whole-read command answered it; None when the key is gone."""
    if reply is None or (kind != "string" and not reply):
        return None
    if kind == "hash":
        return KeyValue(kind, {reply[i]: reply[i + 1] for i in range(0, len(reply), 2)}, at)
    if kind == "set":
        return KeyValue(kind, set(reply), at)
    if kind == "zset":
        return KeyValue(kind, [(reply[i], reply[i + 1]) for i in range(0, len(reply), 2)], at)
    return KeyValue(kind, reply if kind == "string" else list(reply), at)


def write_commands(
    key: bytes, value: KeyValue, *, modern_streams: bool, field_ttls: bool
) -> list[list[Any]]:
    """The commands that rebuild `key` on the target, for one MULTI/EXEC (module
    docstring). `modern_streams`: the target has XSETID ENTRIESADDED and XGROUP
    ENTRIESREAD (Redis 7.0+, Valkey)."""
    out: list[list[Any]] = [[b"DEL", key]]
    d = value.data
    if value.type == "string":
        out.append([b"SET", key, d])
    elif value.type == "hash":
        items = [x for pair in d.items() for x in pair]
        out += [[b"HSET", key, *items[i : i + 2 * CHUNK]] for i in range(0, len(items), 2 * CHUNK)]
        if field_ttls:
            by_time: dict[int, list[bytes]] = {}
            for name, at in value.field_expiry.items():
                by_time.setdefault(at, []).append(name)
            for at, names in by_time.items():
                out.append([b"HPEXPIREAT", key, at, "FIELDS", len(names), *names])
    elif value.type == "list":
        out += [[b"RPUSH", key, *d[i : i + CHUNK]] for i in range(0, len(d), CHUNK)]
    elif value.type == "set":
        members = sorted(d)
        out += [[b"SADD", key, *members[i : i + CHUNK]] for i in range(0, len(members), CHUNK)]
    elif value.type == "zset":
        flat = [x for member, score in d for x in (score, member)]
        out += [[b"ZADD", key, *flat[i : i + 2 * CHUNK]] for i in range(0, len(flat), 2 * CHUNK)]
    elif value.type == "stream":
        out += _stream_commands(key, value, modern=modern_streams)
    else:
        raise ValueError(f"no type-aware write for type {value.type}")
    if value.expire_at_ms is not None:
        out.append([b"PEXPIREAT", key, value.expire_at_ms])
    return out


def _stream_commands(key: bytes, value: KeyValue, *, modern: bool) -> list[list[Any]]:
    meta = value.stream or StreamMeta()
    out: list[list[Any]] = [[b"XADD", key, entry_id, *fields] for entry_id, fields in value.data]
    mkstream = not value.data and bool(meta.groups)
    if not value.data and not meta.groups:
        # An empty stream without groups: an entry at its last id, trimmed away at once.
        out.append([b"XADD", key, "MAXLEN", "0", meta.last_id, "_", "_"])
    setid: list[Any] = [b"XSETID", key, meta.last_id]
    if modern and meta.entries_added is not None:
        setid += ["ENTRIESADDED", meta.entries_added]
        if meta.max_deleted is not None:
            setid += ["MAXDELETEDID", meta.max_deleted]
    if not mkstream:
        out.append(setid)
    for i, g in enumerate(meta.groups):
        create: list[Any] = [b"XGROUP", "CREATE", key, g.name, g.last_delivered]
        if mkstream and i == 0:
            create.append("MKSTREAM")  # an empty stream held only by its groups
        if modern and g.entries_read is not None:
            create += ["ENTRIESREAD", g.entries_read]
        out.append(create)
        if mkstream and i == 0:
            out.append(setid)
        out += [[b"XGROUP", "CREATECONSUMER", key, g.name, c] for c in g.consumers]
        for entry_id, consumer, deliveries in g.pending:
            out.append(
                [
                    b"XCLAIM",
                    key,
                    g.name,
                    consumer,
                    0,
                    entry_id,
                    "RETRYCOUNT",
                    deliveries,
                    "FORCE",
                    "JUSTID",
                ]
            )
    return out


def _pairs(reply: Any) -> dict[bytes, Any]:
    if isinstance(reply, dict):
        return dict(reply)
    items: Sequence[Any] = reply or []
    return {items[i]: items[i + 1] for i in range(0, len(items) - 1, 2)}


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
