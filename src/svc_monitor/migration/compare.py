"""Keys compared between the ends, a batch at a time: the catch-up pass of an execution
and the sample of a validation both ask it.

Per batch: TYPE and the expiry pipelined on each end, the values read with
`Reader.read_many` on each end, and each pair compared (`KeyValue.same_as`). A key of a
module type is compared by its DUMP payload when both ends run the same engine release
(the payloads are then byte for byte the same), and is otherwise left unchecked.
"""

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from svc_monitor.migration.values import CORE_TYPES, Commands, Reader

Outcome = Literal["same", "differs", "gone", "unchecked"]


@dataclass(frozen=True, slots=True)
class End:
    """One end as the comparison reads it."""

    commands: Commands
    absolute_ttl: bool  # PEXPIRETIME (Redis 7.0+, Valkey); PTTL plus the clock otherwise
    engine_release: tuple[str, tuple[int, int]]


class Timed:
    """Commands, with the time their server took to answer them added up: what the pacing
    of the source counts (the target's time and our own are not the source's load)."""

    def __init__(self, commands: Commands) -> None:
        self._commands = commands
        self.busy_s = 0.0

    async def execute(self, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self._commands.execute(*args)
        finally:
            self.busy_s += time.perf_counter() - started

    async def try_each(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        started = time.perf_counter()
        try:
            return await self._commands.try_each(commands)
        finally:
            self.busy_s += time.perf_counter() - started


@dataclass(frozen=True, slots=True)
class Compared:
    key: bytes
    outcome: Outcome
    problem: str | None = None


async def compare(
    source: End, target: End, keys: Sequence[bytes], *, field_ttls: bool, tolerance_ms: int
) -> list[Compared]:
    src_meta = await _meta(source, keys)
    tgt_meta = await _meta(target, keys)
    out: dict[bytes, Compared] = {}
    plain_src: list[tuple[bytes, str, int | None]] = []
    plain_tgt: list[tuple[bytes, str, int | None]] = []
    for key in keys:
        (kind, at), (their_kind, their_at) = src_meta[key], tgt_meta[key]
        if kind == "none":
            out[key] = Compared(key, "gone")
        elif their_kind == "none":
            out[key] = Compared(key, "differs", "missing on the target")
        elif their_kind != kind:
            out[key] = Compared(
                key, "differs", f"type {kind} on the source, {their_kind} on the target"
            )
        elif kind not in CORE_TYPES:
            out[key] = await _module_key(source, target, key)
        else:
            plain_src.append((key, kind, at))
            plain_tgt.append((key, kind, their_at))
    mine = await Reader(source.commands, field_ttls=field_ttls).read_many(plain_src)
    theirs = await Reader(target.commands, field_ttls=field_ttls).read_many(plain_tgt)
    for key, _, _ in plain_src:
        a, b = mine.get(key), theirs.get(key)
        if a is None:
            out[key] = Compared(key, "gone")
        elif b is None:
            out[key] = Compared(key, "differs", "missing on the target")
        else:
            problem = a.same_as(b, ttl_tolerance_ms=tolerance_ms)
            out[key] = Compared(key, "same" if problem is None else "differs", problem)
    return [out[key] for key in keys]


async def _meta(end: End, keys: Sequence[bytes]) -> dict[bytes, tuple[str, int | None]]:
    expiry = b"PEXPIRETIME" if end.absolute_ttl else b"PTTL"
    read_at = int(time.time() * 1000)
    replies = await end.commands.try_each([c for k in keys for c in ([b"TYPE", k], [expiry, k])])
    found: dict[bytes, tuple[str, int | None]] = {}
    for i, key in enumerate(keys):
        kind, at = _text(replies[2 * i]), replies[2 * i + 1]
        expire_at = None
        if isinstance(at, int) and at >= 0:
            expire_at = at if end.absolute_ttl else read_at + at
        found[key] = (kind, expire_at)
    return found


async def _module_key(source: End, target: End, key: bytes) -> Compared:
    if source.engine_release != target.engine_release:
        return Compared(key, "unchecked")
    a = await source.commands.execute(b"DUMP", key)
    b = await target.commands.execute(b"DUMP", key)
    if a is None:
        return Compared(key, "gone")
    return Compared(key, "same" if a == b else "differs", None if a == b else "value differs")


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
