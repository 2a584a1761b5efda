"""The copy of one batch of keys from a source server to the target.

Two methods (docs/features/migration.md#execution):

- `dump_restore`: PEXPIRETIME and DUMP pipelined on the source, RESTORE ... ABSTTL on
  the target. Exact for every type, module types included, when the target reads the
  source's payload version. The first "payload version" refusal switches the job to
  the type-aware copy for good (payload.py says which pairs that is).
- `type_aware`: TYPE and PEXPIRETIME pipelined, each key read whole (values.py) and
  written by its type's own commands to a temporary key in the key's slot, then RENAMEd
  over it: a reader of the target sees the old key or the new one, never half of one.
  A key of a module type is skipped and counted (the analysis blocks such a copy).

TTLs travel as absolute times (PEXPIRETIME; PTTL plus the clock on Redis 6.2, which has
none), so a key expires on the target at the same millisecond as on the source, however
long the copy took; a key whose time passes before it is written is not written, and is
counted as expired during the copy. A key gone between SCAN and its read is counted so
too. Nothing is ever written to the source.
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from valkey.crc import key_slot

from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.cluster import parse_cluster_nodes
from svc_monitor.engine.errors import EngineError
from svc_monitor.migration.values import CORE_TYPES, KeyValue, Reader, write_commands

Method = Literal["dump_restore", "type_aware"]
PAYLOAD_REFUSED = "payload version"  # RESTORE's "DUMP payload version or checksum are wrong"
TEMP_SUFFIX = b":svc-migrating"


class TargetRefused(Exception):
    """The target refused a write the copy cannot go on without (BUSYKEY, OOM ...)."""


@dataclass(slots=True)
class Counts:
    copied: int = 0
    bytes: int = 0
    expired: int = 0  # gone or expired between SCAN and the write
    skipped: int = 0  # module types in a type-aware copy
    skipped_keys: list[str] = field(default_factory=list)  # the first few, for the report

    def add(self, other: "Counts") -> None:
        self.copied += other.copied
        self.bytes += other.bytes
        self.expired += other.expired
        self.skipped += other.skipped
        self.skipped_keys = (self.skipped_keys + other.skipped_keys)[:20]


class Destination:
    """Where each key goes on the target: its database on a standalone server, the
    primary holding its slot on a cluster."""

    def __init__(
        self, seed: EngineClient, node_client: Callable[[EngineTarget], EngineClient]
    ) -> None:
        self._seed = seed
        self._node_client = node_client
        self._clients: dict[tuple[str, int], EngineClient] = {}
        self._slots: list[str] | None = None  # slot -> primary address, on a cluster
        self._targets: dict[str, EngineTarget] = {}
        self.cluster = False

    async def start(self) -> None:
        info = await self._seed.info()
        if info.get_int("cluster", "cluster_enabled") != 1:
            return
        self.cluster = True
        slots = [""] * 16384
        for node in parse_cluster_nodes(await self._seed.execute("CLUSTER", "NODES")):
            if "master" not in node.flags or "fail" in node.flags:
                continue
            self._targets[node.address] = self._seed.target.peer(node.host, node.port)
            for first, last in node.slots:
                for slot in range(first, last + 1):
                    slots[slot] = node.address
        self._slots = slots

    def client_for(self, key: bytes, db: int) -> EngineClient:
        if self._slots is None:
            return self._client_at(self._seed.target.address, db)
        address = self._slots[key_slot(key)]
        if not address:
            raise TargetRefused(f"no primary of the cluster holds slot {key_slot(key)}")
        return self._client_at(address, 0)

    def node_clients(self, db: int) -> list[EngineClient]:
        """A client per primary holding slots (a cluster, database 0 only), or the server's
        for database `db`."""
        if self._slots is None:
            return [self.client_for(b"", db)]
        return [self._client_at(address, 0) for address in sorted(self._targets)]

    def _client_at(self, address: str, db: int) -> EngineClient:
        if address == self._seed.target.address and db == self._seed.target.db:
            return self._seed
        client = self._clients.get((address, db))
        if client is None:
            target = replace(self._targets.get(address, self._seed.target), db=db)
            client = self._clients[(address, db)] = self._node_client(target)
        return client

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()


def temp_key(key: bytes, *, cluster: bool) -> bytes | None:
    """A temporary name in `key`'s slot, or None where none can be made (a cluster key
    holding a `}` but no hash tag): that key is then written in place."""
    if not cluster or _has_tag(key):
        return key + TEMP_SUFFIX
    if b"}" not in key:
        return b"{" + key + b"}" + TEMP_SUFFIX
    return None


def _has_tag(key: bytes) -> bool:
    start = key.find(b"{")
    if start < 0:
        return False
    end = key.find(b"}", start + 1)
    return end > start + 1


class Routed:
    """Commands naming one key each, sent to the server that holds the key (by slot on a
    cluster): what the copy reads the source through."""

    def __init__(self, routes: Destination, db: int) -> None:
        self._routes = routes
        self._db = db

    async def execute(self, *args: Any) -> Any:
        return await self._routes.client_for(_key_of(args), self._db).execute(*args)

    async def try_each(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        groups: dict[int, tuple[EngineClient, list[int]]] = {}
        for i, command in enumerate(commands):
            client = self._routes.client_for(_key_of(command), self._db)
            groups.setdefault(id(client), (client, []))[1].append(i)
        replies: list[Any] = [None] * len(commands)
        for client, indexes in groups.values():
            answered = await client.try_each([commands[i] for i in indexes])
            for i, reply in zip(indexes, answered, strict=True):
                replies[i] = reply
        return replies


def _key_of(command: Sequence[Any]) -> bytes:
    """The key a command names: after XINFO's subcommand, else its first argument."""
    name = _text(command[0]).upper()
    key = command[2] if name == "XINFO" else command[1]
    return key if isinstance(key, bytes) else str(key).encode()


class Copier:
    """Copies batches from one source server (one database) to the destination."""

    def __init__(
        self,
        source: "Routed | EngineClient",
        db: int,
        destination: Destination,
        *,
        method: Method,
        overwrite: bool,
        absolute_ttl: bool,
        field_ttls: bool,
        modern_streams: bool,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.source = source
        self.db = db
        self.destination = destination
        self.method: Method = method
        self._overwrite = overwrite
        self._absolute = absolute_ttl  # the source has PEXPIRETIME (Redis 7.0+, Valkey)
        self._field_ttls = field_ttls
        self._modern_streams = modern_streams
        self._clock = clock
        self._reader = Reader(source, field_ttls=field_ttls)
        self.source_busy_s = 0.0  # time the source spent answering us

    async def copy(self, keys: Sequence[bytes], *, replace_existing: bool = False) -> Counts:
        """Copy `keys`; `replace_existing` for the catch-up pass, which rewrites keys."""
        existing = replace_existing or self._overwrite
        if self.method == "dump_restore":
            counts, refused = await self._dump_restore(keys, existing)
            if not refused:
                return counts
            self.method = "type_aware"  # the target cannot read these payloads
            counts.add(await self._type_aware(refused, existing))
            return counts
        return await self._type_aware(keys, existing)

    async def _source(self, commands: list[list[Any]]) -> list[Any]:
        started = time.perf_counter()
        try:
            return await self.source.try_each(commands)
        finally:
            self.source_busy_s += time.perf_counter() - started

    def _expiry_command(self, key: bytes) -> list[Any]:
        return [b"PEXPIRETIME", key] if self._absolute else [b"PTTL", key]

    def _expire_at(self, reply: Any, read_at_ms: int) -> int | Literal["gone"] | None:
        if not isinstance(reply, int):
            return None
        if reply == -2:
            return "gone"
        if reply < 0:
            return None
        return reply if self._absolute else read_at_ms + reply

    async def _dump_restore(
        self, keys: Sequence[bytes], existing: bool
    ) -> tuple[Counts, list[bytes]]:
        counts = Counts()
        commands: list[list[Any]] = []
        for key in keys:
            commands += [self._expiry_command(key), [b"DUMP", key]]
        read_at = int(self._clock() * 1000)
        replies = await self._source(commands)
        writes: dict[int, tuple[EngineClient, list[list[Any]], list[tuple[bytes, int]]]] = {}
        now = int(self._clock() * 1000)
        for i, key in enumerate(keys):
            at, payload = self._expire_at(replies[2 * i], read_at), replies[2 * i + 1]
            if at == "gone" or not isinstance(payload, bytes) or (at is not None and at <= now):
                counts.expired += 1
                continue
            client = self.destination.client_for(key, self.db)
            restore: list[Any] = [b"RESTORE", key, at or 0, payload]
            if at is not None:
                restore.append("ABSTTL")
            if existing:
                restore.append("REPLACE")
            slot = writes.setdefault(id(client), (client, [], []))
            slot[1].append(restore)
            slot[2].append((key, len(payload)))
        refused: list[bytes] = []
        for client, batch, sent in writes.values():
            for (key, size), reply in zip(sent, await client.try_each(batch), strict=True):
                if isinstance(reply, EngineError):
                    if PAYLOAD_REFUSED in reply.message:
                        refused.append(key)
                        continue
                    raise TargetRefused(f"RESTORE of a key refused by the target: {reply.message}")
                counts.copied += 1
                counts.bytes += size
        return counts, refused

    async def _type_aware(self, keys: Sequence[bytes], existing: bool) -> Counts:
        counts = Counts()
        commands: list[list[Any]] = []
        for key in keys:
            commands += [[b"TYPE", key], self._expiry_command(key)]
        read_at = int(self._clock() * 1000)
        replies = await self._source(commands)
        wanted: list[tuple[bytes, str, int | None]] = []
        for i, key in enumerate(keys):
            kind = _text(replies[2 * i])
            at = self._expire_at(replies[2 * i + 1], read_at)
            if kind == "none" or at == "gone":
                counts.expired += 1
            elif kind not in CORE_TYPES:
                counts.skipped += 1
                if len(counts.skipped_keys) < 20:
                    counts.skipped_keys.append(f"{key.decode(errors='replace')} ({kind})")
            else:
                wanted.append((key, kind, at))
        started = time.perf_counter()
        try:
            values = await self._reader.read_many(wanted)
        finally:
            self.source_busy_s += time.perf_counter() - started
        now = int(self._clock() * 1000)
        writes: dict[int, tuple[EngineClient, list[list[Any]]]] = {}
        for key, _, _ in wanted:
            value = values.get(key)
            if value is None or (value.expire_at_ms is not None and value.expire_at_ms <= now):
                counts.expired += 1
                continue
            client = self.destination.client_for(key, self.db)
            temp = temp_key(key, cluster=self.destination.cluster)
            writes.setdefault(id(client), (client, []))[1].extend(
                self._rebuild(key, temp, value, existing)
            )
            counts.copied += 1
            counts.bytes += value.size_bytes
        for client, batch in writes.values():
            replies = await client.try_each(batch)
            for reply in replies:
                if isinstance(reply, EngineError):
                    raise TargetRefused(f"a write refused by the target: {reply.message}")
            await self._check_renames(client, batch, replies, existing)
        return counts

    def _rebuild(
        self, key: bytes, temp: bytes | None, value: KeyValue, existing: bool
    ) -> list[list[Any]]:
        """The commands that write `value` under `key` (module docstring)."""
        commands = write_commands(
            temp or key, value, modern_streams=self._modern_streams, field_ttls=self._field_ttls
        )
        if temp is not None:
            # RENAMENX leaves a key the target already holds alone (BUSYKEY, as RESTORE).
            commands.append([b"RENAME" if existing else b"RENAMENX", temp, key])
        return commands

    @staticmethod
    async def _check_renames(
        client: EngineClient, batch: list[list[Any]], replies: list[Any], existing: bool
    ) -> None:
        if existing:
            return
        for command, reply in zip(batch, replies, strict=True):
            if command[0] == b"RENAMENX" and reply == 0:
                await client.execute(b"DEL", command[1])
                raise TargetRefused("BUSYKEY: the target already holds a key of that name")


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
