"""Key analytics (Pro): sample a polled server's keys, group them into patterns, store it.

One run, every KEY_ANALYTICS_INTERVAL_MS per polled connection (polling/key_analytics_poll.py):

1. Skipped while the server is under pressure (pipe/pressure.py), and for push
   connections, which are never dialled (NeedsLiveConnection).
2. The source (key_analytics/sources.py): a replica of the connection when INFO
   replication lists one online (lag at most MAX_REPLICA_LAG_S of
   connections/replica_reads.py) and it answers with its link up (probed with INFO
   replication on it, with the connection's credentials and TLS); otherwise the
   connection's own server. SCAN and MEMORY USAGE then cost the primary nothing.
3. The sample (key_analytics/sampler.py): SCAN from the stored cursor, TYPE, PTTL, MEMORY
   USAGE (and OBJECT FREQ under an LFU policy) pipelined, paced by the round trips.
4. The figures (key_analytics/summary.py), scaled to DBSIZE; the 20 largest keys' element
   counts in one more pipeline; stored as one run and its pattern rows.

A cluster connection (its INFO says cluster_enabled:1) covers the whole keyspace, not
only its seed node:

- The shards are the primaries holding slots in the seed's CLUSTER NODES (parsed by
  engine/cluster.py, as the cluster poll does), each reached directly at its announced
  address with the seed's credentials and TLS (ConnectionService.node_client). When the
  seed refuses CLUSTER NODES, or no primary holds slots, the seed is read alone as above.
- Each shard is read like a single server: on a replica by step 2's rule applied to its
  primary's INFO (and only if it accepts READONLY, which reads on a cluster replica
  need), else on the primary; with its own cursor (store.cursor_key: one row per shard,
  no new table) and its own pacing. Up to SHARD_CONCURRENCY shards are read at once, all
  within the run's one time budget.
- KEY_ANALYTICS_SAMPLE_SIZE is the whole cluster's, split across the shards in
  proportion to their DBSIZE (key_analytics/shards.py says why).
- The samples merge into one run: patterns and size buckets summed over the shards,
  each shard's scaled to its own DBSIZE; keyspace_keys the sum of the DBSIZEs; the
  largest and hottest keys of all shards (element counts asked of each key's shard).
  `source` lists the nodes read (Snapshot.nodes_read counts them, the API's nodesRead),
  and `on_replica` means every shard was read on a replica.
- A shard that fails (down, refused, timed out) is logged as a warning and left out: the
  run is stored without it and is not complete. Only when every shard fails does the
  run fail.

Hot keys need LFU counters, which the server keeps only under an `*-lfu` maxmemory
policy; under any other policy the run says so (hot_keys_note) instead of guessing.
"""

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from svc_monitor.config import Settings
from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine import pacing
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.cluster import ClusterNode
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.events import now_ms
from svc_monitor.key_analytics.models import (
    CURSORS_PER_SHARD,
    KeySample,
    PatternStats,
    RankedKey,
    Snapshot,
)
from svc_monitor.key_analytics.sampler import Sampler, SampleRun, pipeline
from svc_monitor.key_analytics.shards import join_sources, split_sample
from svc_monitor.key_analytics.sources import Shard, open_shard, shard_primaries
from svc_monitor.key_analytics.store import KeyAnalyticsStore, pattern_of
from svc_monitor.key_analytics.summary import ranked, summarise, summarise_parts
from svc_monitor.pipe.live_view import LiveView
from svc_monitor.pipe.pressure import pressure_reason

logger = logging.getLogger(__name__)

# Commands giving a key's element count; other types (modules, vector sets) have none.
CARDINALITY = {
    "string": "STRLEN",
    "list": "LLEN",
    "set": "SCARD",
    "zset": "ZCARD",
    "hash": "HLEN",
    "stream": "XLEN",
}
# Shards of one cluster read at once (the cluster poll's NODE_CONCURRENCY): each server
# is still paced by its own round trips, and one big cluster cannot take every socket.
SHARD_CONCURRENCY = 8


@dataclass(eq=False)  # compared and hashed by identity, as a service is
class KeyAnalyticsService:
    """Runs key analytics on polled connections and reads the stored runs."""

    store: KeyAnalyticsStore
    connections: ConnectionService
    live_state: LiveView
    settings: Settings
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict, init=False)
    _under_pressure: set[str] = field(default_factory=set, init=False)
    # The newest run of each connection this process made: Prometheus reads it.
    latest: dict[str, Snapshot] = field(default_factory=dict, init=False)

    # --- runs ---

    async def run(
        self, connection: Connection, *, budget_s: float | None = None
    ) -> Snapshot | None:
        """One run on the connection; None when skipped (server under pressure).

        `budget_s` bounds the sampling (default: the engine deadline, half of a poll pass's).
        """
        client = self.connections.client(connection)  # NeedsLiveConnection when pushed
        reason = pressure_reason(self.live_state, connection.id)
        if reason is not None:
            if connection.id not in self._under_pressure:
                self._under_pressure.add(connection.id)
                logger.info("%s under pressure (%s): key analytics waits", connection.id, reason)
            return None
        self._under_pressure.discard(connection.id)
        lock = self._locks.setdefault(connection.id, asyncio.Lock())
        async with lock:
            return await self._run(connection, client, budget_s or client.deadline_s)

    async def _run(self, connection: Connection, client: EngineClient, budget_s: float) -> Snapshot:
        started = time.perf_counter()
        # INFO's default sections hold replication, memory and cluster; naming several
        # sections is Redis 7+ only (Redis 6.2 answers a syntax error).
        info = await client.info()
        snapshot = None
        if info.get_int("cluster", "cluster_enabled") == 1:
            snapshot = await self._run_cluster(connection, client, info, budget_s, started)
        if snapshot is None:
            snapshot = await self._run_server(connection, client, info, budget_s, started)
        await self.store.insert(snapshot)
        self.latest[connection.id] = snapshot
        return snapshot

    async def _run_server(
        self,
        connection: Connection,
        client: EngineClient,
        info: ParsedInfo,
        budget_s: float,
        started: float,
    ) -> Snapshot:
        replica = await self.connections.fit_replica(client, info)
        source = replica or client
        try:
            snapshot = await self._sample(connection, source, info, budget_s, started)
        finally:
            if replica is not None:
                await replica.close()
        return replace(snapshot, on_replica=replica is not None)

    async def _sample(
        self,
        connection: Connection,
        source: EngineClient,
        info: ParsedInfo,
        budget_s: float,
        started: float,
    ) -> Snapshot:
        address = source.target.address
        policy = info.get_str("memory", "maxmemory_policy")
        lfu = _lfu(policy)
        cursor = await self._start_cursor(connection.id, address)

        async def save_cursor(value: int) -> None:
            await self.store.save_cursor(connection.id, address, value, at=now_ms())

        sampler = Sampler(
            source,
            sample_size=self.settings.KEY_ANALYTICS_SAMPLE_SIZE,
            batch_size=self.settings.KEY_ANALYTICS_SCAN_BATCH_SIZE,
            with_freq=lfu,
            budget_s=budget_s,
            save_cursor=save_cursor,
        )
        run = await sampler.run(cursor)
        keyspace = int(await source.execute("DBSIZE"))
        figures = summarise(run.samples, keyspace_keys=keyspace)
        largest = await self._with_cardinality(source, run, figures.largest)
        return Snapshot(
            connection_id=connection.id,
            captured_at=now_ms(),
            source=address,
            on_replica=False,
            started_cursor=str(run.started_cursor),
            next_cursor=str(run.next_cursor),
            sampled_keys=len(run.samples),
            keyspace_keys=keyspace,
            duration_ms=round((time.perf_counter() - started) * 1000),
            paused_ms=round(run.paused_s * 1000),
            complete=run.whole_keyspace
            or len(run.samples) >= self.settings.KEY_ANALYTICS_SAMPLE_SIZE,
            eviction_policy=policy,
            hot_keys_note=_hot_keys_note(policy, lfu, figures.hottest),
            patterns=figures.patterns,
            size_buckets=figures.size_buckets,
            hot_keys=tuple(ranked(s) for s in figures.hottest),
            largest_keys=largest,
        )

    async def _start_cursor(
        self, connection_id: str, address: str, *, shard: str | None = None
    ) -> int:
        stored = await self.store.cursor(connection_id, shard=shard)
        # A cursor means nothing on another server (the replica changed, or the primary).
        return stored[1] if stored is not None and stored[0] == address else 0

    # --- cluster runs (module docstring) ---

    async def _run_cluster(
        self,
        connection: Connection,
        seed: EngineClient,
        info: ParsedInfo,
        budget_s: float,
        started: float,
    ) -> Snapshot | None:
        """The run over every shard; None when the shards cannot be listed (CLUSTER NODES
        refused, or no primary holds slots yet): the seed is then read as one server."""
        primaries = await shard_primaries(connection.id, seed)
        if not primaries:
            return None
        deadline = started + budget_s
        limit = asyncio.Semaphore(SHARD_CONCURRENCY)
        opened: list[EngineClient] = []

        async def open_one(node: ClusterNode) -> Shard | EngineError:
            async with limit:
                return await open_shard(self.connections, connection.id, (seed, info), node, opened)

        async def read_one(shard: Shard, share: int) -> SampleRun | EngineError:
            async with limit:
                return await self._read_shard(connection, shard, share, deadline)

        try:
            found = await asyncio.gather(*(open_one(n) for n in primaries))
            shards = [s for s in found if isinstance(s, Shard)]
            if not shards:
                raise next(e for e in found if isinstance(e, EngineError))
            shares = split_sample(self.settings.KEY_ANALYTICS_SAMPLE_SIZE, [s.keys for s in shards])
            runs = await asyncio.gather(
                *(read_one(s, n) for s, n in zip(shards, shares, strict=True))
            )
            read = [
                (shard, run, share)
                for shard, run, share in zip(shards, runs, shares, strict=True)
                if isinstance(run, SampleRun)
            ]
            if not read:
                raise next(r for r in runs if isinstance(r, EngineError))
            figures = summarise_parts([(run.samples, shard.keys) for shard, run, _ in read])
            largest = await self._largest_across(read, figures.largest)
        finally:
            await asyncio.gather(*(c.close() for c in opened), return_exceptions=True)
        policy = info.get_str("memory", "maxmemory_policy")
        return Snapshot(
            connection_id=connection.id,
            captured_at=now_ms(),
            source=join_sources([shard.source.target.address for shard, _, _ in read]),
            on_replica=all(shard.on_replica for shard, _, _ in read),
            started_cursor=_cursors([run.started_cursor for _, run, _ in read]),
            next_cursor=_cursors([run.next_cursor for _, run, _ in read]),
            sampled_keys=sum(len(run.samples) for _, run, _ in read),
            keyspace_keys=sum(shard.keys for shard, _, _ in read),
            duration_ms=round((time.perf_counter() - started) * 1000),
            # Shards are read at once: the longest any of them paused fits the duration.
            paused_ms=round(max(run.paused_s for _, run, _ in read) * 1000),
            complete=len(read) == len(primaries)
            and all(run.whole_keyspace or len(run.samples) >= share for _, run, share in read),
            eviction_policy=policy,
            hot_keys_note=_hot_keys_note(
                policy, any(_lfu(shard.policy) for shard, _, _ in read), figures.hottest
            ),
            patterns=figures.patterns,
            size_buckets=figures.size_buckets,
            hot_keys=tuple(ranked(s) for s in figures.hottest),
            largest_keys=largest,
        )

    async def _read_shard(
        self, connection: Connection, shard: Shard, share: int, deadline: float
    ) -> SampleRun | EngineError:
        """Up to `share` keys of the shard within the run's deadline (its own cursor and
        pacing); its EngineError when it fails, logged."""
        if shard.keys == 0:
            return SampleRun(started_cursor=0, whole_keyspace=True)
        address = shard.source.target.address
        cursor = await self._start_cursor(connection.id, address, shard=shard.primary)

        async def save_cursor(value: int) -> None:
            await self.store.save_cursor(
                connection.id, address, value, at=now_ms(), shard=shard.primary
            )

        sampler = Sampler(
            shard.source,
            sample_size=share,
            batch_size=self.settings.KEY_ANALYTICS_SCAN_BATCH_SIZE,
            with_freq=_lfu(shard.policy),
            budget_s=max(0.0, deadline - time.perf_counter()),
            save_cursor=save_cursor,
            readonly=shard.on_replica,
        )
        try:
            return await sampler.run(cursor)
        except EngineError as exc:
            logger.warning(
                "key analytics on %s: shard %s (read on %s) left out (%s)",
                connection.id,
                shard.primary,
                address,
                exc.message,
            )
            return exc

    async def _largest_across(
        self,
        read: list[tuple[Shard, SampleRun, int]],
        largest: tuple[KeySample, ...],
    ) -> tuple[RankedKey, ...]:
        """The cluster's largest keys with their element counts, each asked of its shard."""
        owner = {id(s): i for i, (_, run, _) in enumerate(read) for s in run.samples}
        counts: dict[bytes, int] = {}

        async def count(i: int) -> None:
            shard, run, _ = read[i]
            mine = [s for s in largest if owner.get(id(s)) == i]
            try:
                counts.update(await self._cardinality(shard.source, run, mine, shard.on_replica))
            except EngineError as exc:
                logger.debug("element counts on %s failed: %s", shard.primary, exc.message)

        await asyncio.gather(*(count(i) for i in sorted({owner[id(s)] for s in largest})))
        return tuple(ranked(s, cardinality=counts.get(s.key)) for s in largest)

    # --- shared by both ---

    async def _with_cardinality(
        self, source: EngineClient, run: SampleRun, largest: tuple[KeySample, ...]
    ) -> tuple[RankedKey, ...]:
        found = await self._cardinality(source, run, largest)
        return tuple(ranked(s, cardinality=found.get(s.key)) for s in largest)

    async def _cardinality(
        self,
        source: EngineClient,
        run: SampleRun,
        samples: Sequence[KeySample],
        readonly: bool = False,
    ) -> dict[bytes, int]:
        """Element counts of the samples that have one, in one paced round trip."""
        counted = [s for s in samples if s.type in CARDINALITY]
        commands: list[list[Any]] = [[CARDINALITY[s.type], s.key] for s in counted]
        replies: list[Any] = []
        if commands:
            began = time.perf_counter()
            replies = await pipeline(source, commands, readonly=readonly)
            pause = pacing.pause_for(time.perf_counter() - began)
            run.paused_s += pause
            await asyncio.sleep(pause)
        return {s.key: r for s, r in zip(counted, replies, strict=True) if isinstance(r, int)}

    async def forget(self, connection_id: str) -> None:
        """The connection stopped being polled (removed, edited, or the service stopping).

        The stored cursor stays: on a restart the next run resumes from it, and after an
        edit to another server it no longer matches the source, so that run starts at 0.
        """
        self.latest.pop(connection_id, None)
        self._under_pressure.discard(connection_id)

    # --- reads ---

    async def latest_snapshot(self, connection: Connection) -> Snapshot | None:
        """The connection's newest stored run with its patterns; None before the first."""
        return await self.store.latest(connection.id)

    async def patterns(
        self,
        connection: Connection,
        *,
        since: int | None,
        until: int | None,
        pattern: str | None,
        limit: int,
    ) -> list[tuple[int, PatternStats]]:
        """(run time, pattern) pairs: the newest run's without a window, else the window's,
        newest run first and most memory first within a run."""
        captured_at = None
        if since is None and until is None:
            row = await self.store.latest_run(connection.id)
            if row is None:
                return []
            captured_at = int(row.captured_at)
        rows = await self.store.patterns(
            connection.id,
            captured_at=captured_at,
            since=since,
            until=until,
            pattern=pattern,
            limit=limit,
        )
        return [(int(r.captured_at), pattern_of(r)) for r in rows]


def _lfu(policy: str | None) -> bool:
    return policy is not None and "lfu" in policy


def _cursors(values: Sequence[int]) -> str:
    """A cluster run's start or next cursor for its run row: "0" when every shard's is 0
    (a walk from the start, or back at it), the one cursor of a one-shard cluster, else
    CURSORS_PER_SHARD (each shard's own is in the cursor table)."""
    if all(v == 0 for v in values):
        return "0"
    return str(values[0]) if len(values) == 1 else CURSORS_PER_SHARD


def _hot_keys_note(policy: str | None, lfu: bool, hottest: tuple[KeySample, ...]) -> str | None:
    if not lfu:
        shown = policy or "unknown"
        return (
            f"Hot keys need LFU access counters, which the server keeps only under an LFU "
            f"eviction policy (allkeys-lfu or volatile-lfu); its maxmemory-policy is {shown}."
        )
    if not hottest:
        return "No sampled key has been read or written since the LFU counters last decayed."
    return None
