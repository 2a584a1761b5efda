"""`anomaly_groups` and `anomaly_events`: every correlated group and its detections.

Both are history tables (id, connection_id, captured_at = the detection time, epoch
ms), so the retention window and the memory row cap apply to them like to other history.
A row is resolved when `resolved_at` is set.
"""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Connection,
    Float,
    Integer,
    Row,
    String,
    Table,
    Text,
    select,
    update,
)

from svc_monitor.anomaly.models import Pattern
from svc_monitor.detection.anomaly.models import Detection
from svc_monitor.storage.database import Database
from svc_monitor.storage.history import history_table, in_window

anomaly_groups = history_table(
    "anomaly_groups",
    Column("pattern", String(32), nullable=False),
    Column("severity", String(16), nullable=False),
    Column("diagnosis", Text, nullable=False),
    Column("recommendation", Text, nullable=False),
    Column("metrics", JSON, nullable=False),  # the members' metric names, in order
    Column("event_count", Integer, nullable=False),
    Column("resolved_at", BigInteger, nullable=True),
)

anomaly_events = history_table(
    "anomaly_events",
    Column("group_id", Integer, nullable=True),
    Column("metric", String(32), nullable=False),
    Column("kind", String(8), nullable=False),
    Column("severity", String(16), nullable=False),
    Column("value", Float, nullable=False),
    Column("baseline", Float, nullable=False),
    Column("stddev", Float, nullable=False),
    Column("z_score", Float, nullable=False),
    Column("threshold", Float, nullable=False),
    Column("message", Text, nullable=False),
    Column("resolved_at", BigInteger, nullable=True),
)

HISTORY_TABLES = (anomaly_groups, anomaly_events)


class AnomalyStore:
    """Writes groups with their events; reads and resolves them per connection."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def save_group(
        self, detections: list[Detection], *, pattern: Pattern, severity: str
    ) -> int:
        """Insert the group and its events in one transaction; the group's id."""
        first = detections[0]

        def work(conn: Connection) -> int:
            result = conn.execute(
                anomaly_groups.insert().values(
                    connection_id=first.connection_id,
                    captured_at=first.at_ms,
                    pattern=pattern.name,
                    severity=severity,
                    diagnosis=pattern.diagnosis,
                    recommendation=pattern.recommendation,
                    metrics=[d.metric for d in detections],
                    event_count=len(detections),
                )
            )
            key = result.inserted_primary_key
            assert key is not None
            group_id = int(key[0])
            conn.execute(
                anomaly_events.insert(),
                [
                    {
                        "connection_id": d.connection_id,
                        "captured_at": d.at_ms,
                        "group_id": group_id,
                        "metric": d.metric,
                        "kind": d.kind,
                        "severity": d.severity,
                        "value": d.value,
                        "baseline": d.baseline,
                        "stddev": d.stddev,
                        "z_score": d.z_score,
                        "threshold": d.threshold,
                        "message": d.message,
                    }
                    for d in detections
                ],
            )
            return group_id

        return await self._db.run(work)

    async def events(
        self,
        connection_id: str,
        *,
        since: int | None,
        until: int | None,
        metric: str | None,
        severity: str | None,
        resolved: bool | None,
        limit: int,
    ) -> Sequence[Row[Any]]:
        t = anomaly_events
        query = in_window(select(t), t, connection_id, since=since, until=until)
        if metric is not None:
            query = query.where(t.c.metric == metric)
        if severity is not None:
            query = query.where(t.c.severity == severity)
        query = _resolved(query, t, resolved)
        return await self._db.fetch_all(query.order_by(t.c.id.desc()).limit(limit))

    async def groups(
        self,
        connection_id: str,
        *,
        since: int | None,
        until: int | None,
        pattern: str | None,
        resolved: bool | None,
        limit: int,
    ) -> Sequence[Row[Any]]:
        t = anomaly_groups
        query = in_window(select(t), t, connection_id, since=since, until=until)
        if pattern is not None:
            query = query.where(t.c.pattern == pattern)
        query = _resolved(query, t, resolved)
        return await self._db.fetch_all(query.order_by(t.c.id.desc()).limit(limit))

    async def resolve_event(self, connection_id: str, event_id: int, *, at_ms: int) -> bool | None:
        """Mark the event resolved: True when it was open, False when it already was (its
        first resolved time is kept), None when it is not there."""
        t = anomaly_events.c
        found = await self._db.fetch_one(
            select(t.resolved_at).where(t.connection_id == connection_id, t.id == event_id)
        )
        if found is None:
            return None
        if found.resolved_at is not None:
            return False
        await self._db.execute(
            update(anomaly_events)
            .where(t.id == event_id, t.resolved_at.is_(None))
            .values(resolved_at=at_ms)
        )
        return True

    async def resolve_group(self, connection_id: str, group_id: int, *, at_ms: int) -> bool | None:
        """Mark the group and every event of it resolved: True when the group was open,
        False when it already was, None when it is not there."""
        g, e = anomaly_groups.c, anomaly_events.c

        def work(conn: Connection) -> bool | None:
            found = conn.execute(
                select(g.resolved_at).where(g.connection_id == connection_id, g.id == group_id)
            ).first()
            if found is None:
                return None
            conn.execute(
                update(anomaly_groups)
                .where(g.id == group_id, g.resolved_at.is_(None))
                .values(resolved_at=at_ms)
            )
            conn.execute(
                update(anomaly_events)
                .where(e.group_id == group_id, e.resolved_at.is_(None))
                .values(resolved_at=at_ms)
            )
            return found.resolved_at is None

        return await self._db.run(work)


def _resolved(query: Any, table: Table, resolved: bool | None) -> Any:
    if resolved is None:
        return query
    column = table.c.resolved_at
    return query.where(column.is_not(None) if resolved else column.is_(None))
