"""One analysis job: both ends read, the source's keys sampled, the report built.

Read-only on both ends (docs/features/migration.md#analysis). The order:

1. Both ends' INFO and their primaries (ends.py): a cluster is read on every primary
   holding slots.
2. Their profiles (ends.py): engine, version, databases, modules, functions, ACL users,
   settings.
3. The sample (sampling.py), paced like key analytics: on each source primary's fit
   replica when it has one (ConnectionService.fit_replica), else on the primary; split
   across the primaries and databases in proportion to their keys.
4. The commands the source's clients call (INFO commandstats of every primary, less the
   commands svc-monitor itself sends, counted by the connection's ledger), and whether
   the target has them (COMMAND INFO).
5. The baseline (baseline.py), the memory the data needs on the target, the copy rate
   and duration from the timed DUMPs, and the findings (findings.py).
"""

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from statistics import fmean, pstdev
from typing import Any

from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine import pacing
from svc_monitor.engine.client import EngineClient
from svc_monitor.migration import ends, payload
from svc_monitor.migration.baseline import BASELINE_WINDOW_MS, MemorySample, baseline
from svc_monitor.migration.copier import Method
from svc_monitor.migration.findings import Facts, findings, verdict
from svc_monitor.migration.models import Baseline, EndProfile
from svc_monitor.migration.sampling import Sample, SampledKey, Sampler, split
from svc_monitor.migration.schemas import (
    AnalysisReport,
    BaselineRead,
    CommandRead,
    EndRead,
    EstimateRead,
    MigrationFindingRead,
    SampleRead,
    TtlBucketRead,
    TypeRead,
)

MemorySamples = Callable[[str, int], Awaitable[Sequence[MemorySample]]]
Progress = Callable[[float], Awaitable[None]]
Z95 = 1.96
HOUR_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class MeasuredRate:
    """The copy rate of a completed execution, the estimate's first choice."""

    keys_per_s: float
    bytes_per_s: float | None
    basis: str


@dataclass(frozen=True, slots=True)
class Part:
    """One database of one source primary, as the sample reads it."""

    client: EngineClient
    db: int
    keys: int
    readonly: bool
    on_replica: bool


class Analysis:
    def __init__(
        self,
        connections: ConnectionService,
        memory_samples: MemorySamples,
        now_ms: Callable[[], int],
    ) -> None:
        self._connections = connections
        self._memory_samples = memory_samples
        self._now_ms = now_ms

    async def run(
        self,
        source: Connection,
        target: Connection,
        sample_size: int,
        *,
        progress: Progress,
        cancelled: asyncio.Event,
        rates: dict[str, MeasuredRate] | None = None,
    ) -> AnalysisReport:
        """`rates`: the newest completed execution's copy rate per method, preferred to
        the timed DUMPs for the estimate."""
        opened: list[EngineClient] = []
        try:
            return await self._run(
                source, target, sample_size, progress, cancelled, opened, rates or {}
            )
        finally:
            for client in opened:
                await client.close()

    async def _run(
        self,
        source: Connection,
        target: Connection,
        sample_size: int,
        progress: Progress,
        cancelled: asyncio.Event,
        opened: list[EngineClient],
        rates: dict[str, MeasuredRate],
    ) -> AnalysisReport:
        src, tgt = self._connections.client(source), self._connections.client(target)
        src_info, tgt_info = await src.info(), await tgt.info()
        node_client = self._connections.node_client
        src_nodes = await ends.primaries(src, src_info, node_client, opened)
        tgt_nodes = await ends.primaries(tgt, tgt_info, node_client, opened)
        src_end = await ends.profile(source.name, src, src_nodes)
        tgt_end = await ends.profile(target.name, tgt, tgt_nodes)
        await progress(10.0)

        parts = await self._parts(src_nodes, src_end.cluster, opened)
        sample = Sample()
        counts = split(sample_size, [p.keys for p in parts])
        done = 0
        for part, count in zip(parts, counts, strict=True):
            if count:
                await Sampler(part.client, part.db, sample, readonly=part.readonly).take(
                    count, cancelled=cancelled
                )
            done += count
            await progress(10.0 + 80.0 * done / max(1, sum(counts)))

        used = await self._used_commands(source, src_nodes)
        names = sorted(used)
        src_arity = await ends.known_commands(src, names)
        tgt_arity = await ends.known_commands(tgt, names)
        since = self._now_ms() - BASELINE_WINDOW_MS
        base = baseline(await self._memory_samples(source.id, since), since_ms=since)
        return _report(
            source.id,
            target.id,
            src_end,
            tgt_end,
            sample,
            sample_size,
            parts,
            base,
            used,
            src_arity,
            tgt_arity,
            rates,
            same_server=_run_id(src_info) is not None and _run_id(src_info) == _run_id(tgt_info),
        )

    async def _parts(
        self, nodes: Sequence[ends.Node], cluster: bool, opened: list[EngineClient]
    ) -> list[Part]:
        parts: list[Part] = []
        for node in nodes:
            replica = await self._connections.fit_replica(node.client, node.info, cluster=cluster)
            if replica is not None:
                opened.append(replica)
            reader = replica or node.client
            for section, values in sorted(node.info.sections.get("keyspace", {}).items()):
                if not section.startswith("db") or not isinstance(values, dict):
                    continue
                db = int(section[2:])
                client = reader
                if db != reader.target.db:
                    client = self._connections.node_client(replace(reader.target, db=db))
                    opened.append(client)
                keys = int(values.get("keys", 0))
                parts.append(
                    Part(client, db, keys, cluster and replica is not None, replica is not None)
                )
        return parts

    async def _used_commands(
        self, source: Connection, nodes: Sequence[ends.Node]
    ) -> dict[str, int]:
        """Calls per command by the source's clients (module docstring, step 4)."""
        own = {name.split(" ")[0].lower() for name in self._connections.ledger(source).costs()}
        own |= {"dump", "scan", "type", "pttl", "memory", "readonly", "select"}
        calls: dict[str, int] = {}
        for node in nodes:
            stats = (await node.client.info("commandstats")).sections.get("commandstats", {})
            for key, values in stats.items():
                if not key.startswith("cmdstat_") or not isinstance(values, dict):
                    continue
                name = key.removeprefix("cmdstat_").split("|")[0]
                if name not in own:
                    calls[name] = calls.get(name, 0) + int(values.get("calls", 0))
        return {name: n for name, n in calls.items() if n}


def _run_id(info: Any) -> str | None:
    value = info.get_str("server", "run_id")
    return str(value) if value else None


def _report(
    source_id: str,
    target_id: str,
    s: EndProfile,
    t: EndProfile,
    sample: Sample,
    requested: int,
    parts: Sequence[Part],
    base: Baseline,
    used: dict[str, int],
    src_arity: dict[str, int],
    tgt_arity: dict[str, int],
    rates: dict[str, MeasuredRate],
    *,
    same_server: bool,
) -> AnalysisReport:
    keys = sample.keys
    total = s.keys
    n = len(keys)
    scale = total / n if n else 0.0
    dump = sample.dump
    restores = dump.payload_version is None or payload.accepts(
        t.engine, t.release, dump.payload_version
    )
    method: Method = "dump_restore" if restores else "type_aware"
    busy = dump.busy_s * (1 + pacing.PACE_FACTOR)
    keys_s = dump.keys / busy if dump.keys and busy > 0 else None
    bytes_s = dump.bytes / busy if dump.bytes and busy > 0 else None
    basis = (
        f"the time the source took to DUMP {dump.keys} sampled keys, paced as the copy is; "
        "writing to the target is taken to cost the same"
    )
    measured = rates.get(method)
    if measured is not None:
        keys_s, bytes_s, basis = measured.keys_per_s, measured.bytes_per_s, measured.basis
    duration = total / keys_s if keys_s else None
    expiring = 0
    if duration is not None and n:
        soon = sum(1 for k in keys if k.ttl_ms is not None and k.ttl_ms < duration * 1000)
        expiring = round(soon * scale)
    used_base = base.used_memory if base.samples and base.used_memory else s.used_memory
    needed = max(0, round(used_base) - s.used_memory_startup) + t.used_memory_startup
    needed_basis = (
        f"the source's average used_memory over {base.samples} memory snapshots"
        if base.samples and base.used_memory
        else "the source's used_memory now (no stored memory snapshots yet)"
    )
    types = _types(keys)
    facts = Facts(
        source=s,
        target=t,
        same_server=same_server,
        needed_memory=needed,
        needed_basis=needed_basis,
        payload_version=dump.payload_version,
        used_commands=used,
        source_arity=src_arity,
        target_arity=tgt_arity,
        sampled_types={k: v[0] for k, v in types.items()},
        expiring_during_copy=expiring,
        duration_s=duration,
    )
    found = findings(facts)
    return AnalysisReport(
        verdict=verdict(found),
        source=_end(source_id, s),
        target=_end(target_id, t),
        sample=SampleRead(
            requested=requested,
            sampledKeys=n,
            totalKeys=total,
            readFrom=sorted({p.client.target.address for p in parts}),
            onReplica=bool(parts) and all(p.on_replica for p in parts),
            typeShareErrorPoints=round(100 * Z95 * math.sqrt(0.25 / n) * _fpc(n, total), 2)
            if n
            else 100.0,
            memoryErrorPercent=_memory_error(keys, total),
        ),
        types=[
            TypeRead(
                type=name,
                sampledKeys=count,
                share=count / n,
                estimatedKeys=round(count * scale),
                sampledMemoryBytes=memory,
                estimatedMemoryBytes=round(memory * scale),
            )
            for name, (count, memory) in sorted(types.items(), key=lambda i: -i[1][0])
        ],
        ttl=_ttl(keys),
        commands=[
            CommandRead(command=name, calls=calls, onTarget=name in tgt_arity)
            for name, calls in sorted(used.items(), key=lambda i: -i[1])
        ],
        baseline=BaselineRead(
            samples=base.samples,
            sinceMs=base.since_ms,
            usedMemory=base.used_memory,
            fragmentation=base.fragmentation,
            opsPerSec=base.ops_per_sec,
        ),
        estimate=EstimateRead(
            method=method,
            payloadVersion=dump.payload_version,
            neededMemoryBytes=needed,
            neededMemoryBasis=needed_basis,
            keysPerSecond=keys_s,
            bytesPerSecond=bytes_s,
            durationSeconds=duration,
            basis=basis,
        ),
        findings=[MigrationFindingRead.of(f) for f in found],
    )


def _types(keys: Sequence[SampledKey]) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for k in keys:
        count, memory = found.get(k.type, (0, 0))
        found[k.type] = (count + 1, memory + k.memory_bytes)
    return found


def _ttl(keys: Sequence[SampledKey]) -> list[TtlBucketRead]:
    buckets = {"none": 0, "<1h": 0, "1h-24h": 0, "1d-7d": 0, ">7d": 0}
    for k in keys:
        if k.ttl_ms is None:
            buckets["none"] += 1
        elif k.ttl_ms < HOUR_MS:
            buckets["<1h"] += 1
        elif k.ttl_ms < 24 * HOUR_MS:
            buckets["1h-24h"] += 1
        elif k.ttl_ms < 7 * 24 * HOUR_MS:
            buckets["1d-7d"] += 1
        else:
            buckets[">7d"] += 1
    n = max(1, len(keys))
    return [
        TtlBucketRead(bucket=name, sampledKeys=count, share=count / n)  # type: ignore[arg-type]
        for name, count in buckets.items()
    ]


def _fpc(n: int, total: int) -> float:
    """The finite population correction: a sample of the whole keyspace has no error."""
    if total <= 1 or n >= total:
        return 0.0
    return math.sqrt((total - n) / (total - 1))


def _memory_error(keys: Sequence[SampledKey], total: int) -> float | None:
    if len(keys) < 2:
        return None
    sizes = [k.memory_bytes for k in keys]
    mean = fmean(sizes)
    if mean <= 0:
        return None
    return round(
        100 * Z95 * pstdev(sizes) / mean / math.sqrt(len(sizes)) * _fpc(len(sizes), total), 2
    )


def _end(connection_id: str, e: EndProfile) -> EndRead:
    return EndRead(
        connectionId=connection_id,
        name=e.name,
        address=e.address,
        engine=e.engine,
        version=e.version,
        cluster=e.cluster,
        primaries=e.primaries,
        databases={str(db): keys for db, keys in sorted(e.databases.items())},
        keys=e.keys,
        expires=e.expires,
        volatileHashKeys=e.volatile_hash_keys,
        hashFieldExpiry=e.hash_field_expiry,
        functions=e.has_functions,
        modules=e.modules,
        functionLibraries=[lib.name for lib in e.libraries],
        cachedScripts=e.cached_scripts,
        aclUsers=list(e.acl_users) if e.acl_users is not None else None,
        searchIndexes=list(e.search_indexes),
        maxmemory=e.maxmemory,
        maxmemoryPolicy=e.maxmemory_policy,
        appendonly=e.aof,
        save=e.rdb_save,
        usedMemory=e.used_memory,
        fragmentation=e.fragmentation,
    )
