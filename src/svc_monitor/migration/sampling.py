"""The analysis's sample of the source's keys: SCAN, then TYPE, PTTL and MEMORY USAGE
pipelined, paced by engine/pacing.py; and a timed DUMP of a few of them, which gives the
copy rate the estimate stands on and the payload version the target must accept.

A sample is split across the source's primaries and databases in proportion to their
keys, so a small database is not drowned out by a big one. Every read is read-only and
names one key, so it is answered by a replica as well as by a primary.
"""

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from svc_monitor.engine import pacing
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.errors import EngineError

PIPELINE_KEYS = 50  # as key analytics: another client's command waits behind a pipeline
SCAN_COUNT = 500
DUMP_KEYS = 200  # keys DUMPed to time the copy rate and read the payload version


@dataclass(frozen=True, slots=True)
class SampledKey:
    db: int
    type: str
    ttl_ms: int | None
    memory_bytes: int


@dataclass(slots=True)
class DumpProbe:
    """What DUMPing a few sampled keys showed."""

    keys: int = 0
    bytes: int = 0
    busy_s: float = 0.0  # round trips, without the pauses
    payload_version: int | None = None  # the RDB version of the source's DUMP payloads


@dataclass(slots=True)
class Sample:
    keys: list[SampledKey] = field(default_factory=list)
    dump: DumpProbe = field(default_factory=DumpProbe)
    round_trips: int = 0
    paused_s: float = 0.0


def split(sample_size: int, parts: Sequence[int]) -> list[int]:
    """`sample_size` keys split across parts holding `parts` keys each, in proportion,
    each part at least one key when it holds any and never more than it holds."""
    total = sum(parts)
    if total == 0:
        return [0 for _ in parts]
    if total <= sample_size:
        return list(parts)
    return [min(p, max(1, round(sample_size * p / total))) if p else 0 for p in parts]


def payload_version(payload: bytes) -> int | None:
    """The RDB version a DUMP payload carries: two little-endian bytes before its CRC64."""
    if len(payload) < 10:
        return None
    return int.from_bytes(payload[-10:-8], "little")


class Sampler:
    """Samples keys of one database of one server, paced by its round trips."""

    def __init__(
        self, client: EngineClient, db: int, sample: Sample, *, readonly: bool = False
    ) -> None:
        self._client = client
        self._db = db
        # A cluster replica answers a command naming a key only after READONLY, which holds
        # for one connection: it is sent at the head of every pipeline.
        self._readonly = readonly
        self._sample = sample
        self._last_round_trip_s = 0.0

    async def take(self, count: int, *, cancelled: asyncio.Event) -> None:
        cursor = 0
        seen: set[bytes] = set()
        taken = 0
        while taken < count and not cancelled.is_set():
            reply = await self._paced(self._client.execute, "SCAN", cursor, "COUNT", SCAN_COUNT)
            cursor = int(reply[0])
            fresh = [k for k in dict.fromkeys(reply[1]) if k not in seen][: count - taken]
            seen.update(fresh)
            for start in range(0, len(fresh), PIPELINE_KEYS):
                batch = fresh[start : start + PIPELINE_KEYS]
                taken += await self._describe(batch)
                await self._dump(batch)
            if cursor == 0:
                break

    async def _describe(self, keys: Sequence[bytes]) -> int:
        commands: list[list[Any]] = []
        for key in keys:
            commands += [["TYPE", key], ["PTTL", key], ["MEMORY", "USAGE", key]]
        replies = await self._paced(self._pipeline, commands)
        taken = 0
        for i in range(len(keys)):
            kind, ttl, memory = replies[i * 3 : i * 3 + 3]
            if isinstance(kind, EngineError) or _text(kind) == "none":
                continue  # expired or deleted since SCAN listed it
            self._sample.keys.append(
                SampledKey(
                    db=self._db,
                    type=_text(kind),
                    ttl_ms=ttl if isinstance(ttl, int) and ttl >= 0 else None,
                    memory_bytes=memory if isinstance(memory, int) else 0,
                )
            )
            taken += 1
        return taken

    async def _dump(self, keys: Sequence[bytes]) -> None:
        probe = self._sample.dump
        if probe.keys >= DUMP_KEYS:
            return
        keys = keys[: DUMP_KEYS - probe.keys]
        replies = await self._paced(self._pipeline, [["DUMP", k] for k in keys])
        probe.busy_s += self._last_round_trip_s
        for reply in replies:
            if isinstance(reply, bytes):
                probe.keys += 1
                probe.bytes += len(reply)
                if probe.payload_version is None:
                    probe.payload_version = payload_version(reply)

    async def _pipeline(self, commands: list[list[Any]]) -> list[Any]:
        if not self._readonly:
            return await self._client.try_each(commands)
        replies = await self._client.try_each([["READONLY"], *commands])
        return replies[1:]

    async def _paced(self, call: Any, *args: Any) -> Any:
        started = time.perf_counter()
        result = await call(*args)
        self._last_round_trip_s = time.perf_counter() - started
        pause = pacing.pause_for(self._last_round_trip_s)
        self._sample.round_trips += 1
        self._sample.paused_s += pause
        await asyncio.sleep(pause)
        return result


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
