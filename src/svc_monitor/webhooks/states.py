"""Deliveries of a state: a newer one supersedes an older one not yet delivered.

Some event types report a state rather than an occurrence (event_types: `EventType.state`):
instance.down and instance.up whether an instance answers, failover.started and
failover.completed a node's role, cluster.failover the cluster's state. A receiver keeps
the last one it got, so an older state arriving after a newer one leaves it wrong, and
at-least-once delivery (a retry, an attempt a crash cut off and sent again by a replica)
could do exactly that. The rule:

- A delivery's state key is (its webhook, its connection, the state its type reports).
- Of two deliveries with the same key, the newer is the one whose event happened later
  (`event_at`, the envelope's timestamp), then the one queued later (the row id).
- A delivery is superseded once a newer one of its key is stored, whatever that one's
  status. A superseded delivery is never attempted again: its status is `superseded`,
  `superseded_by` names the newer one, and nothing else of it changes (its attempts and
  last answer stay, and it stays in the history).
- Storage checks it when a delivery is queued (older queued ones of its key are marked,
  and a new one older than one already stored is stored superseded, never sent) and
  when a queued one is claimed for an attempt (a retry, a cut-off attempt picked up after
  its lease, a manual retry). The worker checks it again just before each attempt, and
  runs one attempt of a key at a time (worker.py).
- An attempt already under way when its delivery is superseded is not recalled: it began
  before the newer one was queued. Its result is kept if it got through (`success`);
  otherwise the delivery ends superseded instead of being retried.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, Table, select, update

from svc_monitor.event_types.table import STATES, state_of
from svc_monitor.webhooks.models import QUEUED, Delivery, DeliveryStatus

StateKey = tuple[str, str, str]  # webhook id, connection id, state


@dataclass(frozen=True, order=True, slots=True)
class Stamp:
    """Where a delivery stands in the order of its key (newer compares greater)."""

    event_at: int
    created_at: int  # then the order queued: storage uses the row id, which the worker lacks
    delivery_id: str


def key_of(delivery: Delivery) -> StateKey | None:
    """The delivery's state key; None for an occurrence, which nothing supersedes."""
    state = state_of(delivery.event_type)
    if state is None or delivery.connection_id is None:
        return None
    return (delivery.webhook_id, delivery.connection_id, state)


def _groups(rows: Iterable[Row[Any]]) -> dict[tuple[str, str], list[Row[Any]]]:
    """State rows by (connection, state): one query each (one event's fan-out is one)."""
    found: dict[tuple[str, str], list[Row[Any]]] = {}
    for row in rows:
        state = state_of(row.event_type)
        if state is not None and row.connection_id is not None:
            found.setdefault((row.connection_id, state), []).append(row)
    return found


def _order(row: Any) -> tuple[int, int]:  # any row with event_at and id
    return (int(row.event_at), int(row.id))


def newer_than(conn: Connection, t: Table, rows: Sequence[Row[Any]]) -> dict[int, str]:
    """For each of `rows` that a newer delivery of its key supersedes: its row id and the
    public id of the newest one."""
    found: dict[int, str] = {}
    for (connection_id, state), group in _groups(rows).items():
        since = min(int(row.event_at) for row in group)
        candidates = conn.execute(
            select(t.c.id, t.c.public_id, t.c.webhook_id, t.c.event_at).where(
                t.c.connection_id == connection_id,
                # A delivery is created after its event, on the clock that stamped both:
                # a newer one was created after this one's event (the index on
                # connection and time bounds the search).
                t.c.captured_at >= since,
                t.c.event_at >= since,
                t.c.webhook_id.in_(sorted({row.webhook_id for row in group})),
                t.c.event_type.in_(STATES[state]),
            )
        ).all()
        for row in group:
            newer = [
                c for c in candidates if c.webhook_id == row.webhook_id and _order(c) > _order(row)
            ]
            if newer:
                found[row.id] = str(max(newer, key=_order).public_id)
    return found


def older_queued(conn: Connection, t: Table, rows: Sequence[Row[Any]]) -> dict[int, str]:
    """The queued deliveries (not among `rows`) that the newest of `rows` of their key
    supersedes: their row ids, and its public id. One being attempted elsewhere is queued
    too, under its lease: store.record keeps it superseded unless it gets through."""
    found: dict[int, str] = {}
    mine = {row.id for row in rows}
    for (connection_id, state), group in _groups(rows).items():
        newest: dict[str, Row[Any]] = {}
        for row in group:
            if row.webhook_id not in newest or _order(row) > _order(newest[row.webhook_id]):
                newest[row.webhook_id] = row
        candidates = conn.execute(
            select(t.c.id, t.c.webhook_id, t.c.event_at).where(
                t.c.status.in_([s.value for s in QUEUED]),
                t.c.connection_id == connection_id,
                t.c.webhook_id.in_(sorted(newest)),
                t.c.event_type.in_(STATES[state]),
                t.c.event_at <= max(int(row.event_at) for row in group),
            )
        ).all()
        for c in candidates:
            by = newest[c.webhook_id]
            if c.id not in mine and _order(c) < _order(by):
                found[c.id] = str(by.public_id)
    return found


def supersede(conn: Connection, t: Table, marks: dict[int, str], *, now_ms: int) -> None:
    """Mark rows superseded (row id -> the public id of the delivery that supersedes it),
    as of `now_ms`."""
    by_newer: dict[str, list[int]] = {}
    for row_id, by in marks.items():
        by_newer.setdefault(by, []).append(row_id)
    for by, ids in by_newer.items():
        conn.execute(
            update(t)
            .where(t.c.id.in_(ids))
            .values(
                status=DeliveryStatus.SUPERSEDED.value,
                superseded_by=by,
                next_retry_at=None,
                completed_at=now_ms,
            )
        )


def settle_queued(conn: Connection, t: Table, rows: Sequence[Row[Any]], *, now_ms: int) -> set[str]:
    """Rows just inserted, in that transaction: each state delivery supersedes the older
    queued ones of its key, or is itself superseded when a newer one is stored already
    (an event handled late, after the replica taking over had sent a newer state).
    Returns the public ids of the new rows that are superseded (never to be sent)."""
    stale = newer_than(conn, t, rows)
    live = [row for row in rows if row.id not in stale]
    supersede(conn, t, {**stale, **older_queued(conn, t, live)}, now_ms=now_ms)
    return {row.public_id for row in rows if row.id in stale}
