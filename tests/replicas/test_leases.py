"""Leases on real PostgreSQL and on a Turso (libSQL) file, round by round with a clock of
our own: shared out evenly, never taken from a holder that renews, taken over once
lapsed, handed back on a join and on a clean stop, and one winner when two replicas claim
the same row at once."""

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from svc_monitor.config import StorageType
from svc_monitor.replicas.lease_store import LeaseHolding, LeaseRound, LeaseStore
from svc_monitor.storage.database import Database

LEASE_MS = 10_000
CONNECTIONS = frozenset(f"conn-{n:02}" for n in range(30))


@pytest.fixture(params=["postgres", "turso"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[StorageType, str]:
    if request.param == "postgres":
        shared: dict[str, Any] = request.getfixturevalue("shared_postgres")
        return StorageType.POSTGRES, shared["STORAGE_URL"]
    return StorageType.TURSO, f"file:{tmp_path / 'leases.db'}"


@pytest.fixture
async def store(database: tuple[StorageType, str]) -> AsyncIterator[LeaseStore]:
    kind, url = database
    db = Database.open(kind, url=url)
    await db.migrate()
    try:
        yield LeaseStore(db)
    finally:
        await db.close()


def rank(replica: str, connection: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{replica}/{connection}".encode()).digest()[:8], "big")


async def round_of(
    store: LeaseStore,
    replica: str,
    now_ms: int,
    live: set[str],
    candidates: frozenset[str] = CONNECTIONS,
) -> LeaseHolding:
    return await store.settle(
        LeaseRound(
            replica_id=replica,
            now_ms=now_ms,
            lease_ms=LEASE_MS,
            candidates=candidates,
            live_replicas=frozenset(live),
            preference=lambda connection: rank(replica, connection),
            forget_after_ms=6 * LEASE_MS,
        )
    )


async def settle_all(store: LeaseStore, live: set[str], now_ms: int) -> dict[str, frozenset[str]]:
    """Two rounds of every live replica, as two heartbeats would run them."""
    held: dict[str, frozenset[str]] = {}
    for step in range(2):
        for replica in sorted(live):
            held[replica] = (await round_of(store, replica, now_ms + step, live)).held
    return held


def assert_each_held_once(held: dict[str, frozenset[str]]) -> None:
    everything = [c for connections in held.values() for c in connections]
    assert sorted(everything) == sorted(CONNECTIONS)


async def test_thirty_connections_are_shared_evenly_and_a_join_takes_its_share(
    store: LeaseStore,
) -> None:
    alone = await settle_all(store, {"a"}, 1_000)
    assert alone == {"a": CONNECTIONS}
    # b joins: a gives back what is over its share on its next round, b claims it.
    two = await settle_all(store, {"a", "b"}, 3_000)
    assert_each_held_once(two)
    assert sorted(len(v) for v in two.values()) == [15, 15]
    assert two["a"] < CONNECTIONS  # a kept what it held, less what it handed over
    three = await settle_all(store, {"a", "b", "c"}, 5_000)
    assert_each_held_once(three)
    assert sorted(len(v) for v in three.values()) == [10, 10, 10]
    assert await store.holders() == {k: sorted(v) for k, v in three.items()}


async def test_a_lease_is_not_taken_while_renewed_and_is_taken_over_once_lapsed(
    store: LeaseStore,
) -> None:
    held = await settle_all(store, {"a", "b"}, 1_000)
    # b is gone from the member list (its heartbeat row timed out, say) but has renewed
    # its leases: nobody may take them until they lapse.
    still = await round_of(store, "a", 1_000 + LEASE_MS - 1, {"a"})
    assert still.held == held["a"]
    assert still.next_lapse_ms == 1_001 + LEASE_MS  # b's last renewal plus the lease
    taken = await round_of(store, "a", 1_001 + LEASE_MS, {"a"})
    assert taken.held == CONNECTIONS
    # b comes back (a pause, not a death): it holds nothing it did not claim afresh.
    back = await round_of(store, "b", 1_002 + LEASE_MS, {"a", "b"})
    assert back.held == frozenset()


async def test_a_dead_replica_whose_row_still_looks_live_is_not_counted_in_the_share(
    store: LeaseStore,
) -> None:
    await settle_all(store, {"a", "b", "c"}, 1_000)
    for replica in ("a", "b"):  # they renew; c has died
        await round_of(store, replica, 1_000 + LEASE_MS // 2, {"a", "b", "c"})
    # c's leases lapsed; its heartbeat row, written apart, still reads live for a moment.
    after = 1_002 + LEASE_MS
    a = await round_of(store, "a", after, {"a", "b", "c"})
    b = await round_of(store, "b", after, {"a", "b", "c"})
    assert_each_held_once({"a": a.held, "b": b.held})
    # A heartbeat later c's row is too old to share in: nothing moves.
    a = await round_of(store, "a", after + 2_000, {"a", "b"})
    b = await round_of(store, "b", after + 2_000, {"a", "b"})
    assert_each_held_once({"a": a.held, "b": b.held})
    assert sorted([len(a.held), len(b.held)]) == [15, 15]


async def test_a_clean_stop_frees_every_lease_at_once(store: LeaseStore) -> None:
    await settle_all(store, {"a", "b"}, 1_000)
    assert await store.release_all("b") == 15
    taken = await round_of(store, "a", 1_010, {"a"})  # long before b's leases would lapse
    assert taken.held == CONNECTIONS


async def test_a_removed_connection_is_let_go_and_a_new_one_claimed(store: LeaseStore) -> None:
    await round_of(store, "a", 1_000, {"a"})
    changed = (CONNECTIONS - {"conn-00"}) | {"conn-new"}
    after = await round_of(store, "a", 1_100, {"a"}, candidates=changed)
    assert after.held == changed
    assert "conn-00" not in [c for v in (await store.holders()).values() for c in v]


async def test_two_replicas_claiming_at_once_never_both_win(store: LeaseStore) -> None:
    for attempt in range(5):
        now = 1_000 + attempt * 10 * LEASE_MS  # every lease of the last attempt has lapsed
        # Each believes it is alone (neither has seen the other's heartbeat yet).
        first, second = await asyncio.gather(
            round_of(store, f"x{attempt}", now, {f"x{attempt}"}),
            round_of(store, f"y{attempt}", now, {f"y{attempt}"}),
        )
        assert not first.held & second.held
        assert first.held | second.held == CONNECTIONS
