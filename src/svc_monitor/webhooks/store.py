"""Webhooks and their deliveries; the deliveries table is also the retry queue.

A delivery row is written before its first attempt, so no event is lost to a crash or
a restart: a queued row (pending or retrying) carries `next_retry_at`, and a row being
attempted has it pushed a lease ahead, so a replica (or this process after a restart)
picks it up again only if the attempt never finished. Claiming takes rows with
`FOR UPDATE SKIP LOCKED` on PostgreSQL (SQLite serialises writers on its own), so
replicas sharing one database never send the same row twice at once.

Deliveries of a state (instance.down and instance.up ...) follow states.py: a newer one
supersedes an older one not yet delivered, checked as rows are queued and claimed.

Secrets and custom headers rest sealed by the SecretBox (ENCRYPTION_KEY when set).
`captured_at` and the integer `id` let storage/retention.py sweep deliveries like any
other history; the delivery's own id is the uuid in `public_id`.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Index,
    Integer,
    Row,
    String,
    Table,
    Text,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    select,
    update,
)

from svc_monitor.detection.alerts.schemas import Thresholds
from svc_monitor.kit.secret_box import SecretBox
from svc_monitor.storage.columns import connection_id_column
from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata
from svc_monitor.webhooks.models import QUEUED, Delivery, DeliveryStatus, Outcome, Webhook
from svc_monitor.webhooks.schemas import AlertConfig, DeliveryConfig, RetryPolicy
from svc_monitor.webhooks.states import key_of, newer_than, settle_queued, supersede

webhooks = Table(
    "webhooks",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("name", String(100), nullable=False),
    Column("url", String(2048), nullable=False),
    Column("secret", Text, nullable=True),  # sealed
    Column("enabled", Boolean, nullable=False),
    Column("events", Text, nullable=False),  # JSON list
    Column("headers", Text, nullable=False),  # sealed JSON object
    Column("retry_policy", Text, nullable=False),
    Column("delivery_config", Text, nullable=False),
    Column("alert_config", Text, nullable=False),
    Column("thresholds", Text, nullable=False),
    connection_id_column(nullable=True, index=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("public_id", String(36), nullable=False, unique=True),
    Column("webhook_id", String(36), nullable=False),
    connection_id_column(nullable=True),
    Column("event_type", String(64), nullable=False),
    Column("payload", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("status_code", Integer, nullable=True),
    Column("response_body", Text, nullable=True),
    Column("error", String(500), nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("max_attempts", Integer, nullable=False),
    Column("duration_ms", Integer, nullable=True),
    Column("captured_at", BigInteger, nullable=False),  # created, epoch ms
    Column("completed_at", BigInteger, nullable=True),
    Column("next_retry_at", BigInteger, nullable=True),
    Column("event_at", BigInteger, nullable=True),  # when its event happened, epoch ms
    Column("superseded_by", String(36), nullable=True),  # the newer delivery's public_id
    Index("ix_webhook_deliveries_webhook", "webhook_id", "id"),
    Index("ix_webhook_deliveries_queue", "status", "next_retry_at"),
    Index("ix_webhook_deliveries_connection_time", "connection_id", "captured_at"),
)

HISTORY_TABLES = (webhook_deliveries,)
# The lease of a row whose webhook is gone: the longest timeout a webhook may set (it is
# closed as soon as it is claimed, so this only matters if that fails).
LEASE_MS = DeliveryConfig(timeoutMs=120_000).lease_ms


@dataclass(frozen=True, slots=True)
class QueueStats:
    pending: int
    next_due_at: int | None


class WebhookStore:
    """Reads and writes webhooks and deliveries."""

    def __init__(self, db: Database, secrets: SecretBox) -> None:
        self._db = db
        self._secrets = secrets

    # --- webhooks ---

    async def all(self) -> list[Webhook]:
        rows = await self._db.fetch_all(select(webhooks).order_by(webhooks.c.created_at.desc()))
        return [self._webhook(row) for row in rows]

    async def get(self, webhook_id: str) -> Webhook | None:
        row = await self._db.fetch_one(select(webhooks).where(webhooks.c.id == webhook_id))
        return self._webhook(row) if row is not None else None

    async def insert(self, webhook: Webhook) -> None:
        await self._db.execute(insert(webhooks).values(self._columns(webhook)))

    async def replace(self, webhook: Webhook) -> None:
        values = self._columns(webhook)
        await self._db.execute(update(webhooks).where(webhooks.c.id == webhook.id).values(values))

    async def delete(self, webhook_id: str) -> bool:
        def work(conn: Connection) -> bool:
            conn.execute(
                delete(webhook_deliveries).where(webhook_deliveries.c.webhook_id == webhook_id)
            )
            return conn.execute(delete(webhooks).where(webhooks.c.id == webhook_id)).rowcount > 0

        return await self._db.run(work)

    def _columns(self, webhook: Webhook) -> dict[str, Any]:
        context = f"webhook:{webhook.id}"
        return {
            "id": webhook.id,
            "name": webhook.name,
            "url": webhook.url,
            "secret": self._secrets.seal(webhook.secret, context=context)
            if webhook.secret is not None
            else None,
            "enabled": webhook.enabled,
            "events": json.dumps(list(webhook.events)),
            "headers": self._secrets.seal(json.dumps(webhook.headers), context=context),
            "retry_policy": webhook.retry_policy.model_dump_json(),
            "delivery_config": webhook.delivery_config.model_dump_json(),
            "alert_config": webhook.alert_config.model_dump_json(),
            "thresholds": webhook.thresholds.model_dump_json(),
            "connection_id": webhook.connection_id,
            "created_at": webhook.created_at,
            "updated_at": webhook.updated_at,
        }

    def _webhook(self, row: Row[Any]) -> Webhook:
        # SecretUndecryptable propagates: the service reports the webhook as unreadable.
        context = f"webhook:{row.id}"
        return Webhook(
            id=row.id,
            name=row.name,
            url=row.url,
            secret=self._secrets.open(row.secret, context=context) if row.secret else None,
            enabled=bool(row.enabled),
            events=tuple(json.loads(row.events)),
            headers=json.loads(self._secrets.open(row.headers, context=context)),
            retry_policy=RetryPolicy.model_validate_json(row.retry_policy),
            delivery_config=DeliveryConfig.model_validate_json(row.delivery_config),
            alert_config=AlertConfig.model_validate_json(row.alert_config),
            thresholds=Thresholds.model_validate_json(row.thresholds),
            connection_id=row.connection_id,
            created_at=int(row.created_at),
            updated_at=int(row.updated_at),
        )

    # --- deliveries ---

    async def add_deliveries(self, deliveries: Sequence[Delivery], *, now_ms: int) -> set[str]:
        """Write new deliveries in one transaction (one event's fan-out), superseding what
        they make stale (states.py). Returns the ids of those stored superseded, which a
        newer delivery stored already makes stale: they are never to be sent."""
        if not deliveries:
            return set()
        t = webhook_deliveries
        rows = [_delivery_columns(d) for d in deliveries]
        states = [d.id for d in deliveries if key_of(d) is not None]

        def work(conn: Connection) -> set[str]:
            conn.execute(insert(t), rows)
            if not states:
                return set()
            stored = conn.execute(select(t).where(t.c.public_id.in_(states))).all()
            return settle_queued(conn, t, stored, now_ms=now_ms)

        return await self._db.run(work)

    async def record(self, outcomes: Sequence[Outcome]) -> None:
        """Write the results of attempts, batched in one transaction (one executemany).

        A delivery superseded while its attempt was under way (states.py) keeps that
        status unless the attempt got through: it is not retried."""
        if not outcomes:
            return
        t = webhook_deliveries
        # Typed: inside CASE, PostgreSQL cannot infer a parameter's type from its column.
        status = bindparam("b_status", type_=t.c.status.type)
        stays = and_(
            t.c.status == DeliveryStatus.SUPERSEDED.value,
            status != DeliveryStatus.SUCCESS.value,
        )

        def unless_stays(column: Column[Any], param: str) -> Any:
            return case((stays, column), else_=bindparam(param, type_=column.type))

        statement = (
            update(t)
            .where(t.c.public_id == bindparam("b_id"))
            .values(
                status=case((stays, t.c.status), else_=status),
                attempts=bindparam("b_attempts"),
                status_code=bindparam("b_code"),
                response_body=bindparam("b_body"),
                error=bindparam("b_error"),
                duration_ms=bindparam("b_duration"),
                next_retry_at=case(
                    (stays, None), else_=bindparam("b_next", type_=t.c.next_retry_at.type)
                ),
                completed_at=unless_stays(t.c.completed_at, "b_completed"),
                superseded_by=unless_stays(t.c.superseded_by, "b_superseded"),
            )
        )
        rows = [
            {
                "b_id": o.delivery_id,
                "b_status": o.status.value,
                "b_attempts": o.attempts,
                "b_code": o.result.status_code,
                "b_body": o.result.response_body,
                "b_error": o.result.error[:500] if o.result.error else None,
                "b_duration": o.result.duration_ms,
                "b_next": o.next_retry_at,
                "b_completed": None if o.status is DeliveryStatus.RETRYING else o.finished_at,
                "b_superseded": o.superseded_by,
            }
            for o in outcomes
        ]
        await self._db.run(lambda conn: conn.execute(statement, rows))

    async def claim_due(self, *, now_ms: int, limit: int) -> list[Delivery]:
        """Queued rows due by now, each leased to this caller for its webhook's
        `deliveryConfig.lease_ms`; those a newer delivery of their state supersedes
        (states.py) are marked so instead, and not returned."""
        t = webhook_deliveries

        def work(conn: Connection) -> list[Delivery]:
            due = (
                select(t)
                .where(t.c.status.in_([s.value for s in QUEUED]), t.c.next_retry_at <= now_ms)
                .order_by(t.c.next_retry_at)
                .limit(limit)
                .with_for_update(skip_locked=True)
            )
            rows = conn.execute(due).all()
            stale = newer_than(conn, t, rows)
            supersede(conn, t, stale, now_ms=now_ms)
            claimed = [row for row in rows if row.id not in stale]
            by_lease: dict[int, list[int]] = {}
            leases = _leases(conn, {row.webhook_id for row in claimed})
            for row in claimed:
                by_lease.setdefault(leases.get(row.webhook_id, LEASE_MS), []).append(row.id)
            for lease_ms, ids in by_lease.items():
                # The attempt is counted as it begins: one a crash cuts off (never
                # recorded, sent again after the lease) still counts. The rows returned
                # keep the count before it, as the attempt's outcome is written from.
                conn.execute(
                    update(t)
                    .where(t.c.id.in_(ids))
                    .values(next_retry_at=now_ms + lease_ms, attempts=t.c.attempts + 1)
                )
            return [_delivery(row) for row in claimed]

        return await self._db.run(work)

    async def release(self, delivery_ids: Sequence[str], *, due_at: int) -> None:
        """Hand leased rows back to the queue, due at `due_at` (the webhook was busy): not
        attempted, so not counted."""
        t = webhook_deliveries
        await self._db.execute(
            update(t)
            .where(t.c.public_id.in_(list(delivery_ids)))
            .values(next_retry_at=due_at, attempts=t.c.attempts - 1)
        )

    async def get_delivery(self, delivery_id: str) -> Delivery | None:
        t = webhook_deliveries
        row = await self._db.fetch_one(select(t).where(t.c.public_id == delivery_id))
        return _delivery(row) if row is not None else None

    async def deliveries(self, webhook_id: str, *, limit: int, offset: int) -> list[Delivery]:
        t = webhook_deliveries
        query = (
            select(t)
            .where(t.c.webhook_id == webhook_id)
            .order_by(t.c.id.desc())
            .limit(limit)
            .offset(offset)
        )
        return [_delivery(row) for row in await self._db.fetch_all(query)]

    async def requeue(self, delivery_id: str, *, now_ms: int, max_attempts: int) -> bool:
        """Queue a finished delivery for one more attempt now; False unless it was
        dead_letter or failed (so two clicks cannot queue it twice)."""
        t = webhook_deliveries
        finished = (DeliveryStatus.DEAD_LETTER.value, DeliveryStatus.FAILED.value)
        count = await self._db.execute(
            update(t)
            .where(t.c.public_id == delivery_id, t.c.status.in_(finished))
            .values(
                status=DeliveryStatus.RETRYING.value,
                next_retry_at=now_ms,
                max_attempts=max_attempts,
                completed_at=None,
            )
        )
        return count > 0

    async def queue_stats(self) -> QueueStats:
        t = webhook_deliveries
        query = select(func.count().label("n"), func.min(t.c.next_retry_at).label("due")).where(
            t.c.status == DeliveryStatus.RETRYING.value
        )
        row = await self._db.fetch_one(query)
        assert row is not None
        due = row._mapping["due"]
        return QueueStats(int(row._mapping["n"]), int(due) if due is not None else None)

    async def next_due_at(self) -> int | None:
        t = webhook_deliveries
        query = select(func.min(t.c.next_retry_at)).where(t.c.status.in_([s.value for s in QUEUED]))
        row = await self._db.fetch_one(query)
        return int(row[0]) if row is not None and row[0] is not None else None

    async def trim(self, webhook_ids: Sequence[str], *, keep: int) -> int:
        """Delete all but the newest `keep` deliveries of each webhook (memory storage)."""
        t = webhook_deliveries

        def work(conn: Connection) -> int:
            deleted = 0
            for webhook_id in webhook_ids:
                boundary = conn.execute(
                    select(t.c.id)
                    .where(t.c.webhook_id == webhook_id)
                    .order_by(t.c.id.desc())
                    .offset(keep)
                    .limit(1)
                ).scalar()
                if boundary is not None:
                    query = delete(t).where(t.c.webhook_id == webhook_id, t.c.id <= boundary)
                    deleted += conn.execute(query).rowcount
            return deleted

        return await self._db.run(work)


def _delivery_columns(d: Delivery) -> dict[str, Any]:
    return {
        "public_id": d.id,
        "webhook_id": d.webhook_id,
        "connection_id": d.connection_id,
        "event_type": d.event_type,
        "payload": d.payload,
        "status": d.status.value,
        "status_code": d.status_code,
        "response_body": d.response_body,
        "error": d.error,
        "attempts": d.attempts,
        "max_attempts": d.max_attempts,
        "duration_ms": d.duration_ms,
        "captured_at": d.created_at,
        "completed_at": d.completed_at,
        "next_retry_at": d.next_retry_at,
        "event_at": d.happened_at,
        "superseded_by": d.superseded_by,
    }


def _leases(conn: Connection, webhook_ids: set[str]) -> dict[str, int]:
    """Each webhook's attempt lease (its timeout plus room to record the result)."""
    if not webhook_ids:
        return {}
    rows = conn.execute(
        select(webhooks.c.id, webhooks.c.delivery_config).where(webhooks.c.id.in_(webhook_ids))
    ).all()
    return {
        row.id: DeliveryConfig.model_validate_json(row.delivery_config).lease_ms for row in rows
    }


def _delivery(row: Row[Any]) -> Delivery:
    return Delivery(
        id=row.public_id,
        webhook_id=row.webhook_id,
        event_type=row.event_type,
        payload=row.payload,
        status=DeliveryStatus(row.status),
        attempts=int(row.attempts),
        max_attempts=int(row.max_attempts),
        created_at=int(row.captured_at),
        connection_id=row.connection_id,
        status_code=row.status_code,
        response_body=row.response_body,
        duration_ms=row.duration_ms,
        completed_at=row.completed_at,
        next_retry_at=row.next_retry_at,
        error=row.error,
        event_at=row.event_at,
        superseded_by=row.superseded_by,
    )
