"""Key analytics (Pro): sample a polled server's keys, group them into patterns, store it.

One run, every KEY_ANALYTICS_INTERVAL_MS per polled connection (polling/key_analytics_poll.py):

1. Skipped while the server is under pressure (polling/pressure.py), and for push
   connections, which are never dialled (NeedsLiveConnection).
2. The source: a replica of the connection when INFO replication lists one online with
   its link up and it answers (probed with INFO replication on it, with the connection's
   credentials and TLS); otherwise the connection's own server. SCAN and MEMORY USAGE
   then cost the primary nothing. A cluster connection reads its seed node only.
3. The sample (analytics/sampler.py): SCAN from the stored cursor, TYPE, PTTL, MEMORY
   USAGE (and OBJECT FREQ under an LFU policy) pipelined, paced by the round trips.
4. The figures (analytics/summary.py), scaled to DBSIZE; the 20 largest keys' element
   counts in one more pipeline; stored as one run and its pattern rows.

Hot keys need LFU counters, which the server keeps only under an `*-lfu` maxmemory
policy; under any other policy the run says so (hot_keys_note) instead of guessing.
"""

import asyncio
import logging
import time
from dataclasses import replace
from typing import Any

from svc_monitor.analytics.models import KeySample, PatternStats, RankedKey, Snapshot
from svc_monitor.analytics.sampler import Sampler, SampleRun, pause_for
from svc_monitor.analytics.store import KeyAnalyticsStore, pattern_of
from svc_monitor.analytics.summary import ranked, summarise
from svc_monitor.config import Settings
from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService, NeedsLiveConnection
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.events import now_ms
from svc_monitor.polling.live_state import LiveState
from svc_monitor.polling.pressure import pressure_reason

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
# A replica this far behind (seconds since its last ack) is not read: its keys are stale.
MAX_REPLICA_LAG_S = 10


class KeyAnalyticsService:
    """Runs key analytics on polled connections and reads the stored runs."""

    def __init__(
        self,
        store: KeyAnalyticsStore,
        connections: ConnectionService,
        live_state: LiveState,
        settings: Settings,
    ) -> None:
        self._store = store
        self._connections = connections
        self._live_state = live_state
        self._settings = settings
        self._locks: dict[str, asyncio.Lock] = {}
        self._under_pressure: set[str] = set()
        # The newest run of each connection this process made: Prometheus reads it.
        self.latest: dict[str, Snapshot] = {}

    # --- runs ---

    async def run(
        self, connection: Connection, *, budget_s: float | None = None
    ) -> Snapshot | None:
        """One run on the connection; None when skipped (server under pressure).

        `budget_s` bounds the sampling (default: the engine deadline, half of a poll pass's).
        """
        client = self._connections.client(connection)  # NeedsLiveConnection when pushed
        reason = pressure_reason(self._live_state, connection.id)
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
        # INFO's default sections hold both replication and memory; naming two sections
        # is Redis 7+ only (Redis 6.2 answers a syntax error).
        info = await client.info()
        replica = await self._replica(client, info)
        source = replica or client
        try:
            snapshot = await self._sample(connection, source, info, budget_s, started)
        finally:
            if replica is not None:
                await replica.close()
        snapshot = replace(snapshot, on_replica=replica is not None)
        await self._store.insert(snapshot)
        self.latest[connection.id] = snapshot
        return snapshot

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
        lfu = policy is not None and "lfu" in policy
        cursor = await self._start_cursor(connection.id, address)

        async def save_cursor(value: int) -> None:
            await self._store.save_cursor(connection.id, address, value, at=now_ms())

        sampler = Sampler(
            source,
            sample_size=self._settings.KEY_ANALYTICS_SAMPLE_SIZE,
            batch_size=self._settings.KEY_ANALYTICS_SCAN_BATCH_SIZE,
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
            or len(run.samples) >= self._settings.KEY_ANALYTICS_SAMPLE_SIZE,
            eviction_policy=policy,
            hot_keys_note=_hot_keys_note(policy, lfu, figures.hottest),
            patterns=figures.patterns,
            size_buckets=figures.size_buckets,
            hot_keys=tuple(ranked(s) for s in figures.hottest),
            largest_keys=largest,
        )

    async def _start_cursor(self, connection_id: str, address: str) -> int:
        stored = await self._store.cursor(connection_id)
        # A cursor means nothing on another server (the replica changed, or the primary).
        return stored[1] if stored is not None and stored[0] == address else 0

    async def _replica(self, client: EngineClient, info: ParsedInfo) -> EngineClient | None:
        """A client to an online replica that answers with its link up, or None."""
        if info.get_str("replication", "role") != "master":
            return None
        for i in range(info.get_int("replication", "connected_slaves") or 0):
            fields = _replica_fields(info.get_str("replication", f"slave{i}"))
            if fields.get("state") != "online" or int(fields.get("lag", "0")) > MAX_REPLICA_LAG_S:
                continue
            try:
                target = replace(client.target, host=fields["ip"], port=int(fields["port"]))
            except (KeyError, ValueError):
                continue
            replica = self._connections.node_client(target)
            try:
                probe = await replica.info("replication")
            except EngineError as exc:
                logger.debug("replica %s not reachable (%s): reading the primary", target, exc)
                await replica.close()
                continue
            if probe.get_str("replication", "master_link_status") == "up":
                return replica
            await replica.close()
        return None

    async def _with_cardinality(
        self, source: EngineClient, run: SampleRun, largest: tuple[KeySample, ...]
    ) -> tuple[RankedKey, ...]:
        counted = [s for s in largest if s.type in CARDINALITY]
        commands: list[list[Any]] = [[CARDINALITY[s.type], s.key] for s in counted]
        replies: list[Any] = []
        if commands:
            began = time.perf_counter()
            replies = await source.try_each(commands)
            pause = pause_for(time.perf_counter() - began)
            run.paused_s += pause
            await asyncio.sleep(pause)
        found = {s.key: r for s, r in zip(counted, replies, strict=True) if isinstance(r, int)}
        return tuple(ranked(s, cardinality=found.get(s.key)) for s in largest)

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
        if connection.pushed:
            raise NeedsLiveConnection(connection)
        return await self._store.latest(connection.id)

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
        if connection.pushed:
            raise NeedsLiveConnection(connection)
        captured_at = None
        if since is None and until is None:
            row = await self._store.latest_run(connection.id)
            if row is None:
                return []
            captured_at = int(row.captured_at)
        rows = await self._store.patterns(
            connection.id,
            captured_at=captured_at,
            since=since,
            until=until,
            pattern=pattern,
            limit=limit,
        )
        return [(int(r.captured_at), pattern_of(r)) for r in rows]


def _replica_fields(text: str | None) -> dict[str, str]:
    """`ip=10.0.0.2,port=6380,state=online,offset=..,lag=0` as a dict."""
    if not text:
        return {}
    return dict(part.split("=", 1) for part in text.split(",") if "=" in part)


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
