"""One validation job: does the target hold what the source holds?
(docs/features/migration.md#validation)

1. Key counts per database and type on both ends: every primary SCANned, TYPE and the
   expiry read in paced pipelines. Counts are **net of keys that expire meanwhile**: a key
   whose time comes before both counts are done could be counted on one end and not the
   other (the copy gives it the same expiry on both), so keys expiring before the last
   count ends (plus the TTL tolerance) are left out of both and reported apart. Keys that
   expired before the copy reached them are the execution's `expiredKeys`.
2. A sample of the source's keys (reservoir-sampled from the count's SCAN), read whole on
   both ends (values.py) and compared value by value, the TTL within `ttlToleranceMs`.
3. The target's memory and fragmentation against the analysis's estimate and the
   source's baseline (baseline.py).

Every difference is listed (the first MAX_LISTED; the count is exact).
"""

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine import pacing
from svc_monitor.engine.client import EngineClient
from svc_monitor.migration import ends
from svc_monitor.migration.baseline import BASELINE_WINDOW_MS, MemorySample, baseline
from svc_monitor.migration.compare import End, Timed, compare
from svc_monitor.migration.copier import Destination, Routed
from svc_monitor.migration.execution import modern
from svc_monitor.migration.jobs import JobContext
from svc_monitor.migration.models import EndProfile

MAX_LISTED = 1_000
SCAN_COUNT = 500
BATCH_KEYS = 50
SHORT_TTL_MS = 3_600_000  # expiries nearer than this are kept one by one for the netting
ELEVATED = 1.2  # target memory over the baseline by this factor is elevated
HIGH = 1.5


@dataclass(slots=True)
class Tally:
    """Keys of one end per (db, type): those that outlive the check, and the expiry
    times of those that might not."""

    steady: dict[tuple[int, str], int] = field(default_factory=dict)
    short: dict[tuple[int, str], list[int]] = field(default_factory=dict)

    def count(self, db: int, kind: str, expire_at: int | None, now: int) -> None:
        if expire_at is not None and expire_at - now < SHORT_TTL_MS:
            self.short.setdefault((db, kind), []).append(expire_at)
        else:
            self.steady[(db, kind)] = self.steady.get((db, kind), 0) + 1

    def net(self, cutoff_ms: int) -> tuple[dict[tuple[int, str], int], int]:
        counts = dict(self.steady)
        left_out = 0
        for where, times in self.short.items():
            alive = sum(1 for t in times if t > cutoff_ms)
            left_out += len(times) - alive
            counts[where] = counts.get(where, 0) + alive
        return counts, left_out


class Validation:
    def __init__(
        self,
        connections: ConnectionService,
        memory_samples: Callable[[str, int], Awaitable[Sequence[MemorySample]]],
        now_ms: Callable[[], int],
    ) -> None:
        self._connections = connections
        self._memory_samples = memory_samples
        self._now_ms = now_ms

    async def run(
        self,
        context: JobContext,
        source: Connection,
        target: Connection,
        *,
        sample_size: int,
        ttl_tolerance_ms: int,
        estimate_bytes: int | None,
        expired_during_copy: int | None,
    ) -> dict[str, object]:
        opened: list[EngineClient] = []
        src, tgt = self._connections.client(source), self._connections.client(target)
        nodes = self._connections.node_client
        s = await ends.profile(
            source.name, src, await ends.primaries(src, await src.info(), nodes, opened)
        )
        t = await ends.profile(
            target.name, tgt, await ends.primaries(tgt, await tgt.info(), nodes, opened)
        )
        src_routes, tgt_routes = Destination(src, nodes), Destination(tgt, nodes)
        try:
            await src_routes.start()
            await tgt_routes.start()
            sample: list[tuple[int, bytes]] = []
            src_tally = await self._tally(context, s, src_routes, sample, sample_size, 0.0)
            tgt_tally = await self._tally(context, t, tgt_routes, None, 0, 40.0)
            cutoff = self._now_ms() + ttl_tolerance_ms
            src_counts, src_left = src_tally.net(cutoff)
            tgt_counts, tgt_left = tgt_tally.net(cutoff)
            compared = await self._compare(
                context, s, t, src_routes, tgt_routes, sample, ttl_tolerance_ms
            )
            memory = await self._memory(source, t, estimate_bytes)
        finally:
            await src_routes.close()
            await tgt_routes.close()
            for client in opened:
                await client.close()
        counts = []
        differences: list[dict[str, object]] = []
        for db, kind in sorted(set(src_counts) | set(tgt_counts)):
            a, b = src_counts.get((db, kind), 0), tgt_counts.get((db, kind), 0)
            counts.append({"db": db, "type": kind, "source": a, "target": b, "difference": b - a})
            if a != b:
                differences.append(
                    {
                        "kind": "count",
                        "db": db,
                        "key": None,
                        "problem": f"{kind}: {a} on the source, {b} on the target",
                    }
                )
        differences += compared["differences"]
        return {
            "differenceCount": len(differences),
            "differences": differences[:MAX_LISTED],
            "counts": counts,
            "expiredDuringCopy": expired_during_copy,
            "expiringDuringCheck": {"source": src_left, "target": tgt_left},
            "sample": {k: v for k, v in compared.items() if k != "differences"},
            "memory": memory,
        }

    async def _tally(
        self,
        context: JobContext,
        end: EndProfile,
        routes: Destination,
        sample: list[tuple[int, bytes]] | None,
        sample_size: int,
        progress_from: float,
    ) -> Tally:
        tally = Tally()
        seen = 0
        total = max(1, end.keys)
        expiry = "PEXPIRETIME" if modern(end) else "PTTL"
        for db in sorted(end.databases) or [0]:
            for client in routes.node_clients(db):
                cursor: Any = 0
                while not context.cancelled.is_set():
                    started = time.perf_counter()
                    cursor, keys = await client.execute("SCAN", cursor, "COUNT", SCAN_COUNT)
                    for start in range(0, len(keys), BATCH_KEYS):
                        batch = keys[start : start + BATCH_KEYS]
                        read_at = self._now_ms()
                        replies = await client.try_each(
                            [c for k in batch for c in (["TYPE", k], [expiry, k])]
                        )
                        for i, key in enumerate(batch):
                            kind = _text(replies[2 * i])
                            if kind == "none":
                                continue
                            at = replies[2 * i + 1]
                            expire_at = None
                            if isinstance(at, int) and at >= 0:
                                expire_at = at if modern(end) else read_at + at
                            tally.count(db, kind, expire_at, read_at)
                            seen += 1
                            if sample is not None:
                                _reservoir(sample, sample_size, seen, (db, key))
                    await asyncio.sleep(pacing.pause_for(time.perf_counter() - started))
                    await context.report(progress_from + 40.0 * min(1.0, seen / total))
                    if int(cursor) == 0:
                        break
        return tally

    async def _compare(
        self,
        context: JobContext,
        s: EndProfile,
        t: EndProfile,
        src_routes: Destination,
        tgt_routes: Destination,
        sample: list[tuple[int, bytes]],
        tolerance_ms: int,
    ) -> dict[str, Any]:
        field_ttls = s.hash_field_expiry and t.hash_field_expiry
        checked = matched = gone = unchecked = 0
        differences: list[dict[str, object]] = []
        by_db: dict[int, list[bytes]] = {}
        for db, key in sample:
            by_db.setdefault(db, []).append(key)
        done = 0
        for db, keys in sorted(by_db.items()):
            for start in range(0, len(keys), BATCH_KEYS):
                if context.cancelled.is_set():
                    break
                source = Timed(Routed(src_routes, db))
                found = await compare(
                    End(source, modern(s), (s.engine, s.release[:2])),
                    End(Routed(tgt_routes, db), modern(t), (t.engine, t.release[:2])),
                    keys[start : start + BATCH_KEYS],
                    field_ttls=field_ttls,
                    tolerance_ms=tolerance_ms,
                )
                for c in found:
                    if c.outcome == "gone":
                        gone += 1
                    elif c.outcome == "unchecked":
                        unchecked += 1
                    else:
                        checked += 1
                        matched += c.outcome == "same"
                        if c.outcome == "differs":
                            differences.append(
                                {
                                    "kind": "value",
                                    "db": db,
                                    "key": c.key.decode(errors="replace"),
                                    "problem": c.problem or "value differs",
                                }
                            )
                done += len(found)
                await asyncio.sleep(pacing.pause_for(source.busy_s))
                await context.report(80.0 + 19.0 * done / max(1, len(sample)))
        return {
            "checked": checked,
            "matched": matched,
            "goneMeanwhile": gone,
            "unchecked": unchecked,
            "differences": differences,
        }

    async def _memory(
        self, source: Connection, t: EndProfile, estimate: int | None
    ) -> dict[str, object]:
        since = self._now_ms() - BASELINE_WINDOW_MS
        base = baseline(await self._memory_samples(source.id, since), since_ms=since)
        ratio = t.used_memory / base.used_memory if base.used_memory else None
        status = "unavailable"
        if ratio is not None:
            status = "normal" if ratio <= ELEVATED else "elevated" if ratio <= HIGH else "high"
        return {
            "targetUsedMemory": t.used_memory,
            "targetFragmentation": t.fragmentation,
            "estimatedBytes": estimate,
            "baselineUsedMemory": base.used_memory,
            "baselineFragmentation": base.fragmentation,
            "baselineSamples": base.samples,
            "ratioToBaseline": ratio,
            "status": status,
        }


def _reservoir(
    sample: list[tuple[int, bytes]], size: int, seen: int, item: tuple[int, bytes]
) -> None:
    """Algorithm R: every key so far had the same chance to be in the sample."""
    if len(sample) < size:
        sample.append(item)
        return
    slot = random.randrange(seen)
    if slot < size:
        sample[slot] = item


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
