"""The wire side of a key analytics run: SCAN, then TYPE, PTTL and MEMORY USAGE pipelined.

The pacing rule is engine/pacing.py's: after every round trip (a SCAN, or a pipeline of
at most PIPELINE_KEYS keys) the sampler pauses `pacing.pause_for` it. A
pipeline is cut at PIPELINE_KEYS because the server runs one client's pipelined commands
back to back, and another client's command waits behind them. Measured with
bench/key_analytics.py (100,000 keys, 2-core machine, PINGs from another process):
other clients' p99 / max / PINGs over 1 ms in 6 s were 0.37 ms / 4.5 ms / 52 at 1000
keys per pipeline and 0.40 ms / 1.8 ms / 5 at 50, so 50 it is.

The SCAN cursor is handed to `save_cursor` after every SCAN batch is read, so a run cut
short (restart, time budget) resumes where it stopped. A run stops at the sample size,
after the time budget, or when the keyspace has been read whole: a run from cursor 0
back to 0, or, from a stored cursor, a second return to 0. Keys SCAN returns twice
(it may, while the table rehashes) are counted once.

On a cluster replica (`readonly`), every pipeline starts with READONLY: without it the
replica answers a command naming a key with a MOVED redirect to its primary. READONLY
holds for one connection, and a pipeline runs on one, so it is sent with each; SCAN
names no key and needs none.
"""

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from svc_monitor.engine import pacing
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.errors import EngineError
from svc_monitor.key_analytics.models import KeySample

PIPELINE_KEYS = 50


@dataclass(slots=True)
class SampleRun:
    started_cursor: int
    next_cursor: int = 0
    samples: list[KeySample] = field(default_factory=list)
    whole_keyspace: bool = False
    round_trips: int = 0
    paused_s: float = 0.0


class Sampler:
    """Samples up to `sample_size` keys of one server, paced by its round trips."""

    def __init__(
        self,
        client: EngineClient,
        *,
        sample_size: int,
        batch_size: int,
        with_freq: bool,
        budget_s: float,
        save_cursor: Callable[[int], Awaitable[None]],
        readonly: bool = False,
    ) -> None:
        self._client = client
        self._sample_size = sample_size
        self._batch_size = batch_size
        self._with_freq = with_freq
        self._budget_s = budget_s
        self._save_cursor = save_cursor
        self._readonly = readonly

    async def run(self, cursor: int) -> SampleRun:
        run = SampleRun(started_cursor=cursor, next_cursor=cursor)
        seen: set[bytes] = set()
        returns_to_zero = 0
        deadline = time.perf_counter() + self._budget_s
        while len(run.samples) < self._sample_size and time.perf_counter() < deadline:
            reply = await self._timed(run, self._client.execute)(
                "SCAN", run.next_cursor, "COUNT", self._batch_size
            )
            run.next_cursor, keys = _scan_reply(reply)
            fresh = [k for k in dict.fromkeys(keys) if k not in seen]
            fresh = fresh[: self._sample_size - len(run.samples)]
            seen.update(fresh)
            for start in range(0, len(fresh), PIPELINE_KEYS):
                run.samples.extend(await self._describe(run, fresh[start : start + PIPELINE_KEYS]))
            await self._save_cursor(run.next_cursor)
            if run.next_cursor == 0:
                returns_to_zero += 1
                if run.started_cursor == 0 or returns_to_zero == 2:
                    run.whole_keyspace = True
                    break
        return run

    async def _describe(self, run: SampleRun, keys: Sequence[bytes]) -> list[KeySample]:
        per_key = 4 if self._with_freq else 3
        commands: list[list[Any]] = []
        for key in keys:
            commands += [["TYPE", key], ["PTTL", key], ["MEMORY", "USAGE", key]]
            if self._with_freq:
                commands.append(["OBJECT", "FREQ", key])
        replies = await self._timed(run, self._pipeline)(commands)
        samples = []
        for i, key in enumerate(keys):
            kind, ttl, memory, *freq = replies[i * per_key : (i + 1) * per_key]
            if isinstance(kind, EngineError) or _text(kind) == "none":
                continue  # expired or deleted since SCAN listed it
            samples.append(
                KeySample(
                    key=key,
                    type=_text(kind),
                    ttl_ms=ttl if isinstance(ttl, int) and ttl >= 0 else None,
                    memory_bytes=memory if isinstance(memory, int) else 0,
                    freq=freq[0] if freq and isinstance(freq[0], int) else None,
                )
            )
        return samples

    async def _pipeline(self, commands: list[list[Any]]) -> list[Any]:
        return await pipeline(self._client, commands, readonly=self._readonly)

    def _timed(self, run: SampleRun, call: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        async def paced(*args: Any) -> Any:
            started = time.perf_counter()
            result = await call(*args)
            pause = pacing.pause_for(time.perf_counter() - started)
            run.round_trips += 1
            run.paused_s += pause
            await asyncio.sleep(pause)
            return result

        return paced


async def pipeline(
    client: EngineClient, commands: list[list[Any]], *, readonly: bool = False
) -> list[Any]:
    """client.try_each, after READONLY on a cluster replica (module docstring)."""
    if not readonly:
        return await client.try_each(commands)
    replies = await client.try_each([["READONLY"], *commands])
    return replies[1:]


def _scan_reply(reply: Any) -> tuple[int, list[bytes]]:
    cursor, keys = reply
    return int(cursor), [k if isinstance(k, bytes) else str(k).encode() for k in keys]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
