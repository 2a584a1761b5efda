"""Client snapshots (written by the clients poll, read by the API) and live client reads.

The monitor's own connections (client name `svc-monitor`) are never stored and are
hidden from live lists unless asked for; they are never killed.
"""

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from svc_monitor.client_analytics import reports
from svc_monitor.client_analytics.models import SnapshotFilter
from svc_monitor.client_analytics.schemas import (
    ActivityTimeline,
    BufferAnomalies,
    BufferStats,
    ClientSnapshot,
    ClientStats,
    ClientType,
    CommandDistribution,
    CommandShare,
    ConnectionPoint,
    ConnectionSeries,
    Contributor,
    GroupBy,
    IdleConnection,
    IdleConnections,
    LiveClient,
    Spike,
    SpikeBaseline,
    SpikeDetection,
    TimeRange,
)
from svc_monitor.client_analytics.store import ANALYSIS_ROW_CAP, ClientSnapshotStore
from svc_monitor.engine.client import CLIENT_NAME, EngineClient
from svc_monitor.engine.clients import ClientInfo, parse_client_list
from svc_monitor.engine.errors import EngineError
from svc_monitor.errors import NotFound, Unavailable, Unprocessable
from svc_monitor.events import now_ms

_HOUR_MS = 3_600_000
_DAY_MS = 24 * _HOUR_MS
_MAX_BUCKETS = 10_000
_GROUP_COLUMNS = {"name": "name", "user": "username", "addr": "addr"}


def is_monitor(client: ClientInfo) -> bool:
    return client.name == CLIENT_NAME


def snapshot_row(connection_id: str, captured_at: int, c: ClientInfo) -> dict[str, Any]:
    return {
        "connection_id": connection_id,
        "captured_at": captured_at,
        "client_id": c.id,
        "addr": c.addr,
        "laddr": c.laddr,
        "name": c.name,
        "username": c.user,
        "db": c.db,
        "cmd": c.cmd,
        "age": c.age,
        "idle": c.idle,
        "flags": c.flags,
        "sub": c.sub,
        "psub": c.psub,
        "multi": c.multi,
        "qbuf": c.qbuf,
        "qbuf_free": c.qbuf_free,
        "obl": c.obl,
        "oll": c.oll,
        "omem": c.omem,
        "tot_mem": c.tot_mem,
        "lib_name": c.lib_name,
    }


class ClientAnalyticsService:
    """Stores CLIENT LIST snapshots and answers client analytics and live client reads."""

    def __init__(self, store: ClientSnapshotStore) -> None:
        self._store = store

    async def record(self, connection_id: str, clients: list[ClientInfo], *, at: int) -> int:
        rows = [snapshot_row(connection_id, at, c) for c in clients if not is_monitor(c)]
        await self._store.insert(rows)
        return len(rows)

    # --- history ---

    async def snapshots(
        self, where: SnapshotFilter, *, limit: int, offset: int
    ) -> list[ClientSnapshot]:
        rows = await self._store.snapshots(where, limit=limit, offset=offset)
        return [reports.snapshot(r) for r in rows]

    async def history(
        self, where: SnapshotFilter, *, limit: int, offset: int
    ) -> list[ClientSnapshot]:
        if where.name is None and where.user is None and where.addr is None:
            raise Unprocessable("Give one of name, user or addr to pick the client", field="name")
        return await self.snapshots(where, limit=limit, offset=offset)

    async def timeseries(
        self, connection_id: str, *, since: int | None, until: int | None, bucket_ms: int
    ) -> ConnectionSeries:
        since, until = _window(since, until, _HOUR_MS, bucket_ms)
        where = SnapshotFilter(connection_id, since, until)
        per_capture = await self._store.per_capture(where)
        buckets: dict[int, list[int]] = defaultdict(list)
        for row in per_capture:
            buckets[reports.bucket(row.captured_at, since, bucket_ms)].append(row.clients)
        by_name = reports.max_by_bucket(
            await self._store.per_capture_by(where, "name"), since, bucket_ms
        )
        by_user = reports.max_by_bucket(
            await self._store.per_capture_by(where, "username"), since, bucket_ms
        )
        points = [
            ConnectionPoint(
                t=t,
                captures=len(counts),
                maxConnections=max(counts),
                avgConnections=round(sum(counts) / len(counts), 2),
                byName=by_name.get(t, {}),
                byUser=by_user.get(t, {}),
            )
            for t, counts in sorted(buckets.items())
        ]
        return ConnectionSeries(from_=since, to=until, bucketMs=bucket_ms, points=points)

    async def stats(self, where: SnapshotFilter) -> ClientStats:
        per_capture = await self._store.per_capture(where)
        if not per_capture:
            return ClientStats(
                captures=0, currentConnections=0, latestCapturedAt=None, peakConnections=0,
                peakAt=None, uniqueNames=0, uniqueUsers=0, uniqueIps=0, byName=[], byUser=[],
                timeRange=None,
            )  # fmt: skip
        latest = per_capture[-1]
        peak = max(per_capture, key=lambda r: r.clients)
        names = await self._store.per_capture_by(where, "name")
        users = await self._store.per_capture_by(where, "username")
        addrs = await self._store.per_capture_by(where, "addr")
        ips = {reports.ip(r.key) for r in addrs if r.key}
        return ClientStats(
            captures=len(per_capture),
            currentConnections=latest.clients,
            latestCapturedAt=latest.captured_at,
            peakConnections=peak.clients,
            peakAt=peak.captured_at,
            uniqueNames=len({r.key for r in names if r.key}),
            uniqueUsers=len({r.key for r in users if r.key}),
            uniqueIps=len(ips),
            byName=reports.group_counts(names, latest.captured_at),
            byUser=reports.group_counts(users, latest.captured_at),
            timeRange=TimeRange(earliest=per_capture[0].captured_at, latest=latest.captured_at),
        )

    async def command_distribution(
        self, connection_id: str, *, since: int | None, until: int | None, group_by: GroupBy
    ) -> CommandDistribution:
        since, until = _window(since, until, _HOUR_MS, None)
        where = SnapshotFilter(connection_id, since, until)
        rows = await self._store.command_counts(where, _GROUP_COLUMNS[group_by])
        groups: dict[str, Counter[str]] = defaultdict(Counter)
        for row in rows:
            groups[row.key or ""][row.cmd or ""] += row.n
        total = sum(sum(c.values()) for c in groups.values())
        distribution = [
            CommandShare(
                identifier=key,
                commands=dict(commands.most_common()),
                totalCommands=sum(commands.values()),
                topCommand=commands.most_common(1)[0][0] if commands else None,
                sharePercent=round(100 * sum(commands.values()) / total, 2) if total else 0.0,
            )
            for key, commands in groups.items()
        ]
        distribution.sort(key=lambda d: (-d.totalCommands, d.identifier))
        return CommandDistribution(
            from_=since, to=until, groupBy=group_by, totalSnapshots=total, distribution=distribution
        )

    async def idle_connections(
        self, where: SnapshotFilter, *, threshold_s: int, min_occurrences: int, limit: int
    ) -> IdleConnections:
        rows = await self._store.idle(
            where, threshold_s=threshold_s, min_occurrences=min_occurrences, limit=limit
        )
        return IdleConnections(
            thresholdSeconds=threshold_s,
            connections=[
                IdleConnection(
                    clientId=r.client_id,
                    addr=r.addr,
                    name=r.name,
                    user=r.user,
                    avgIdleSeconds=round(float(r.avg_idle), 2),
                    maxIdleSeconds=r.max_idle,
                    occurrences=r.occurrences,
                    firstSeen=r.first_seen,
                    lastSeen=r.last_seen,
                    recommendation=reports.idle_advice(float(r.avg_idle), r.occurrences),
                )
                for r in rows
            ],
        )

    async def buffer_anomalies(
        self, where: SnapshotFilter, *, qbuf: int, omem: int, limit: int
    ) -> BufferAnomalies:
        rows = await self._store.over_buffers(where, qbuf=qbuf, omem=omem, limit=limit)
        totals = await self._store.buffer_totals(where)
        avg_q, max_q, avg_o, max_o = tuple(totals) if totals is not None else (None,) * 4
        return BufferAnomalies(
            qbufThreshold=qbuf,
            omemThreshold=omem,
            anomalies=[reports.buffer_anomaly(r, qbuf=qbuf, omem=omem) for r in rows],
            stats=BufferStats(
                avgQbuf=reports.rounded(avg_q),
                maxQbuf=max_q,
                avgOmem=reports.rounded(avg_o),
                maxOmem=max_o,
            ),
        )

    async def activity_timeline(self, where: SnapshotFilter, *, bucket_ms: int) -> ActivityTimeline:
        since, until = _window(where.since, where.until, _HOUR_MS, bucket_ms)
        scoped = SnapshotFilter(where.connection_id, since, until, where.name, where.user)
        rows = await self._store.snapshots(scoped, limit=ANALYSIS_ROW_CAP + 1, newest_first=False)
        truncated = len(rows) > ANALYSIS_ROW_CAP
        return ActivityTimeline(
            bucketMs=bucket_ms,
            buckets=reports.activity(rows[:ANALYSIS_ROW_CAP], since, bucket_ms),
            truncated=truncated,
        )

    async def spikes(
        self,
        connection_id: str,
        *,
        since: int | None,
        until: int | None,
        bucket_ms: int,
        sensitivity: float,
    ) -> SpikeDetection:
        since, until = _window(since, until, _DAY_MS, bucket_ms)
        where = SnapshotFilter(connection_id, since, until)
        peaks: dict[int, tuple[int, int]] = {}  # bucket -> (connections, captured_at)
        for row in await self._store.per_capture(where):
            t = reports.bucket(row.captured_at, since, bucket_ms)
            if t not in peaks or row.clients > peaks[t][0]:
                peaks[t] = (row.clients, row.captured_at)
        values = [v for v, _ in peaks.values()]
        mean = statistics.fmean(values) if values else 0.0
        std = statistics.pstdev(values) if len(values) > 1 else 0.0
        threshold = max(mean + sensitivity * std, 1.5 * mean)
        spikes = []
        for t, (value, at) in sorted(peaks.items()):
            if len(values) > 1 and value > threshold:
                names = await self._store.per_capture_by(
                    SnapshotFilter(connection_id, at, at), "name"
                )
                top = sorted(names, key=lambda r: -r.clients)[:10]
                spikes.append(
                    Spike(
                        t=t,
                        connections=value,
                        baseline=round(mean, 2),
                        deviation=round((value - mean) / std, 2) if std else 0.0,
                        topNames=[
                            Contributor(name=r.key or "", connections=r.clients) for r in top
                        ],
                    )
                )
        return SpikeDetection(
            bucketMs=bucket_ms,
            sensitivity=sensitivity,
            baseline=SpikeBaseline(mean=round(mean, 2), stdDev=round(std, 2), buckets=len(values)),
            spikes=spikes,
        )

    async def cleanup(self, connection_id: str, *, older_than: int | None) -> int:
        cutoff = older_than if older_than is not None else now_ms() - 30 * _DAY_MS
        return await self._store.prune(connection_id, older_than=cutoff)

    # --- live ---

    async def live_clients(
        self, client: EngineClient, *, include_monitor: bool, type: ClientType | None
    ) -> list[LiveClient]:
        clients = await _client_list(client, type)
        return [reports.live_client(c) for c in clients if include_monitor or not is_monitor(c)]

    async def live_client(self, client: EngineClient, client_id: int) -> LiveClient:
        missing = NotFound(f"Client {client_id} is not connected", field="id")
        # Client ids start at 1 on every engine, so 0 names no client. Redis 7.0 answers an
        # empty list for it, Valkey 9.1 an error ("client-id should be greater than 0"),
        # which would read as the instance failing; both answer the same 404 instead.
        if client_id < 1:
            raise missing
        found = parse_client_list(await _engine(client, "CLIENT", "LIST", "ID", client_id))
        if not found:
            raise missing
        return reports.live_client(found[0])

    async def kill(
        self, client: EngineClient, *, ids: Sequence[int], type: ClientType | None
    ) -> int:
        """Close the given connections (by id, or every one of a type), never the monitor's."""
        if not ids and type is None:
            raise Unprocessable("Give the client ids to kill (id) or a client type", field="id")
        candidates = [c for c in await _client_list(client, type) if not is_monitor(c)]
        if ids:
            wanted = set(ids)
            candidates = [c for c in candidates if c.id in wanted]
        if not candidates:
            return 0
        replies = await client.try_each([["CLIENT", "KILL", "ID", c.id] for c in candidates])
        # CLIENT KILL ID answers how many it closed; an error means it was gone already.
        return sum(r for r in replies if isinstance(r, int))


async def _client_list(client: EngineClient, type: ClientType | None) -> list[ClientInfo]:
    args: list[Any] = ["CLIENT", "LIST"] + (["TYPE", type] if type else [])
    return parse_client_list(await _engine(client, *args))


async def _engine(client: EngineClient, *args: Any) -> Any:
    try:
        return await client.execute(*args)
    except EngineError as exc:
        raise Unavailable(
            f"The instance did not answer {args[0]} {args[1]}: {exc.message}"
        ) from None


def _window(
    since: int | None, until: int | None, default_ms: int, bucket_ms: int | None
) -> tuple[int, int]:
    until = until if until is not None else now_ms()
    since = since if since is not None else max(0, until - default_ms)
    if since > until:
        raise Unprocessable("from must not be after to", field="from")
    if bucket_ms is not None and (until - since) // bucket_ms > _MAX_BUCKETS:
        raise Unprocessable(
            f"The window holds more than {_MAX_BUCKETS} buckets; use a larger bucketMs",
            field="bucketMs",
        )
    return since, until
