"""The `connection_leases` table: which replica polls which connection, until when.

A lease is one row per polled connection: its holder and the wall-clock millisecond it
lapses. Its holder renews all of its leases in one statement every heartbeat; another
replica may take a lease only once it has lapsed, and the row lock of that UPDATE decides
a race (PostgreSQL re-reads the WHERE of a row another transaction just changed), so a
lease never has two holders at once.
"""

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Column, Connection, String, Table, delete, select, update

from svc_monitor.storage.columns import CONNECTION_ID_LENGTH
from svc_monitor.storage.database import Database
from svc_monitor.storage.insert_batcher import insert_statement
from svc_monitor.storage.metadata import metadata

connection_leases = Table(
    "connection_leases",
    metadata,
    Column("connection_id", String(CONNECTION_ID_LENGTH), primary_key=True),
    Column("replica_id", String(120), nullable=False, index=True),
    Column("expires_at", BigInteger, nullable=False),
    Column("claimed_at", BigInteger, nullable=False),
)


@dataclass(frozen=True, slots=True)
class LeaseRound:
    """What one replica brings to a round: who it is, what is to be polled, how many share it."""

    replica_id: str
    now_ms: int
    lease_ms: int
    candidates: frozenset[str]  # the polled connections, as this replica last read them
    live_replicas: frozenset[str]  # by their heartbeats, counting itself
    # Higher first: the connections this replica prefers to hold (rendezvous order), so that
    # two replicas claiming at once mostly reach for different rows.
    preference: Callable[[str], int]
    # A lapsed lease is deleted this long after it lapsed (its connection is gone).
    forget_after_ms: int


@dataclass(frozen=True, slots=True)
class LeaseHolding:
    """What this replica holds after a round, and when the soonest foreign lease lapses."""

    held: frozenset[str]
    next_lapse_ms: int | None  # the soonest lapse among others' live leases on candidates
    held_elsewhere: frozenset[str] = frozenset()  # candidates other replicas hold now


class LeaseStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def settle(self, round_: LeaseRound) -> LeaseHolding:
        """Renew ours, give back what is gone or over our share, claim lapsed or free
        connections up to our share; one transaction."""
        return await self._db.run(lambda conn: _settle(conn, round_))

    async def release_all(self, replica_id: str) -> int:
        """A clean stop: every lease of ours is free for the others at once."""
        return await self._db.execute(
            delete(connection_leases).where(connection_leases.c.replica_id == replica_id)
        )

    async def holders(self) -> dict[str, list[str]]:
        """Replica id -> the connection ids it holds a lease on (lapsed or not), sorted."""
        rows = await self._db.fetch_all(
            select(connection_leases.c.replica_id, connection_leases.c.connection_id).order_by(
                connection_leases.c.connection_id
            )
        )
        held: dict[str, list[str]] = {}
        for row in rows:
            held.setdefault(row.replica_id, []).append(row.connection_id)
        return held


def _settle(conn: Connection, r: LeaseRound) -> LeaseHolding:
    leases = connection_leases.c
    expires = r.now_ms + r.lease_ms
    conn.execute(
        update(connection_leases)
        .where(leases.replica_id == r.replica_id)
        .values(expires_at=expires)
    )
    rows = conn.execute(select(leases.connection_id, leases.replica_id, leases.expires_at)).all()
    mine = {row.connection_id for row in rows if row.replica_id == r.replica_id}
    others_live = {
        row.connection_id: row.expires_at
        for row in rows
        if row.replica_id != r.replica_id and row.expires_at > r.now_ms
    }
    lapsed = {
        row.connection_id
        for row in rows
        if row.replica_id != r.replica_id and row.expires_at <= r.now_ms
    }
    # A replica whose leases lapsed is dead even if its heartbeat row looks fresh for a
    # moment longer (the two are written apart): its connections are shared among the rest.
    dead = {row.replica_id for row in rows if row.expires_at <= r.now_ms} - {r.replica_id}
    sharing = len(r.live_replicas - dead) or 1
    share = math.ceil(len(r.candidates) / sharing)
    keep = mine & r.candidates
    give_back = mine - r.candidates
    if len(keep) > share:
        # A replica joined (or the fleet shrank): hand over the ones we least prefer.
        surplus = sorted(keep, key=r.preference)[: len(keep) - share]
        give_back.update(surplus)
        keep.difference_update(surplus)
    if give_back:
        conn.execute(
            delete(connection_leases).where(
                leases.replica_id == r.replica_id, leases.connection_id.in_(give_back)
            )
        )
    wanted = share - len(keep)
    if wanted > 0:
        free = sorted(r.candidates - mine - others_live.keys(), key=r.preference, reverse=True)
        keep.update(_claim(conn, r, free[:wanted], lapsed, expires))
    conn.execute(delete(connection_leases).where(leases.expires_at < r.now_ms - r.forget_after_ms))
    elsewhere = frozenset(others_live.keys() & r.candidates)
    lapses = [others_live[cid] for cid in elsewhere]
    return LeaseHolding(frozenset(keep), min(lapses) if lapses else None, elsewhere)


def _claim(
    conn: Connection, r: LeaseRound, wanted: list[str], lapsed: Collection[str], expires: int
) -> set[str]:
    leases = connection_leases.c
    won: set[str] = set()
    taken_over = [cid for cid in wanted if cid in lapsed]
    if taken_over:
        # Only while still lapsed: a holder that renewed meanwhile keeps it.
        result = conn.execute(
            update(connection_leases)
            .where(leases.connection_id.in_(taken_over), leases.expires_at <= r.now_ms)
            .values(replica_id=r.replica_id, expires_at=expires, claimed_at=r.now_ms)
            .returning(leases.connection_id)
        )
        won.update(result.scalars())
    new = [cid for cid in wanted if cid not in lapsed]
    if new:
        rows: list[dict[str, Any]] = [
            {
                "connection_id": cid,
                "replica_id": r.replica_id,
                "expires_at": expires,
                "claimed_at": r.now_ms,
            }
            for cid in new
        ]
        # Another replica inserting the same row first wins it; ours is left out.
        statement = insert_statement(conn, connection_leases, skip_duplicates=True)
        result = conn.execute(statement.values(rows).returning(leases.connection_id))
        won.update(result.scalars())
    return won
