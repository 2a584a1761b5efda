"""Which replica polls which connection: each polled connection by exactly one live replica.

On PostgreSQL and Turso, several replicas share one storage, and each polled connection is
held by one of them under a lease in storage (lease_store.py). Leases rather than a hash
over the members: a hash lets two replicas whose member lists differ for a moment (one has
seen a join, the other not yet) both poll a connection, and nothing in storage would say
which of them is right; a lease row has one holder, and storage's row lock settles a race.

- Every heartbeat a replica renews its leases, gives back those over its fair share
  (ceil(connections / live replicas): a replica that joins gets its share as the others
  give theirs back, one heartbeat later), and claims free or lapsed ones up to its share,
  the ones it prefers first (rendezvous order, so two claimants mostly reach for
  different rows).
- A replica that stops cleanly deletes its leases: the others claim them on their next
  heartbeat. One that dies stops renewing: its leases lapse REPLICA_TIMEOUT_MS after its
  last renewal, and the others wake at that moment to claim them.
- Fencing: a replica trusts its leases only until its own monotonic clock passes the
  start of its last successful renewal plus the timeout less one heartbeat (slack for
  the wall clocks of two hosts to differ by that much). Past that (a long pause, storage
  out of reach) it starts no poll for them and the pipe refuses what its polls in flight
  bring back, so nothing it learned after the others may have taken over is written or
  published.

Memory and SQLite storage serve one process (storage/sqlite_lock.py): it owns everything.
"""

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Collection

from svc_monitor.config import Settings
from svc_monitor.kit.waiting import wait_quietly
from svc_monitor.replicas.lease_store import LeaseRound, LeaseStore
from svc_monitor.replicas.service import PRUNE_AFTER_TIMEOUTS, ReplicaRegistry

logger = logging.getLogger(__name__)

# However soon a lease lapses, a round is not run more often than this.
MIN_ROUND_GAP_S = 0.05


class SoleOwnership:
    """One process on this storage: it polls every polled connection."""

    def __init__(self, replica_id: str) -> None:
        self._replica_id = replica_id
        self._candidates: frozenset[str] = frozenset()

    def offer(self, candidates: frozenset[str]) -> None:
        self._candidates = candidates

    def owned(self, candidates: Collection[str]) -> set[str]:
        return set(candidates)

    def fenced(self, connection_id: str) -> bool:
        return False

    def polled_elsewhere(self, connection_id: str) -> bool:
        return False

    def on_change(self, callback: Callable[[], None]) -> None:
        pass  # never changes

    async def holders(self) -> dict[str, list[str]]:
        return {self._replica_id: sorted(self._candidates)}

    async def run(self) -> None:
        pass

    async def release(self) -> None:
        pass


class LeasedOwnership:
    """Replicas sharing PostgreSQL or Turso: a lease in storage per polled connection."""

    def __init__(
        self,
        store: LeaseStore,
        registry: ReplicaRegistry,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._registry = registry
        self._clock = clock
        self._monotonic = monotonic
        self._heartbeat_s = settings.REPLICA_HEARTBEAT_MS / 1000
        self._lease_ms = settings.REPLICA_TIMEOUT_MS
        # Trusted for the lease less one heartbeat: see the module's fencing note.
        self._trust_s = (settings.REPLICA_TIMEOUT_MS - settings.REPLICA_HEARTBEAT_MS) / 1000
        self._candidates: frozenset[str] | None = None
        self._held: frozenset[str] = frozenset()
        self._elsewhere: frozenset[str] = frozenset()
        self._trusted_until = float("-inf")
        self._wake = asyncio.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._storage_failing = False

    def offer(self, candidates: frozenset[str]) -> None:
        if candidates != self._candidates:
            self._candidates = candidates
            self._wake.set()  # a new connection is claimed now, not a heartbeat later

    def owned(self, candidates: Collection[str]) -> set[str]:
        if not self._trusted():
            return set()
        return set(self._held.intersection(candidates))

    def fenced(self, connection_id: str) -> bool:
        candidates = self._candidates
        if candidates is None or connection_id not in candidates:
            return False  # pushed, or not polled by anyone: not ours to fence
        return connection_id not in self._held or not self._trusted()

    def polled_elsewhere(self, connection_id: str) -> bool:
        return connection_id in self._elsewhere

    def on_change(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    async def holders(self) -> dict[str, list[str]]:
        return await self._store.holders()

    async def run(self) -> None:
        """Settle leases every heartbeat, on a change of the polled connections, and the
        moment another replica's lease lapses; storage failures are retried."""
        while True:
            self._wake.clear()
            delay = self._heartbeat_s
            try:
                delay = await self._round()
                if self._storage_failing:
                    logger.info("replica %s: leases reach storage again", self._registry.id)
                self._storage_failing = False
            except Exception as exc:  # storage down: our leases lapse; retry next beat
                if not self._storage_failing:
                    logger.warning("replica %s: lease round failed: %s", self._registry.id, exc)
                self._storage_failing = True
                delay = self._after_failure()
            await wait_quietly(self._wake.wait(), delay)

    async def release(self) -> None:
        was_holding = bool(self._held)
        self._held = frozenset()
        if not was_holding:
            return
        try:
            await self._store.release_all(self._registry.id)
        except Exception as exc:  # storage already down: our leases lapse instead
            logger.warning("replica %s: could not hand over its leases: %s", self._registry.id, exc)

    # --- internals ---

    def _trusted(self) -> bool:
        return self._monotonic() < self._trusted_until

    async def _round(self) -> float:
        candidates = self._candidates
        if candidates is None:
            return self._heartbeat_s  # the poll supervisor has not read the connections yet
        started = self._monotonic()
        # Sharing: a heartbeat within the timeout less one beat. A replica's leases and its
        # heartbeat row are renewed apart, up to a beat from each other; by this cutoff one
        # whose leases have lapsed is never counted, so its share is not left unclaimed.
        sharing_ms = self._lease_ms - self._heartbeat_s * 1000
        live = {
            r.record.id for r in await self._registry.list() if r.heartbeat_age_ms <= sharing_ms
        }
        now_ms = int(self._clock() * 1000)
        me = self._registry.id
        holding = await self._store.settle(
            LeaseRound(
                replica_id=me,
                now_ms=now_ms,
                lease_ms=self._lease_ms,
                candidates=candidates,
                live_replicas=frozenset(live | {me}),
                preference=lambda connection_id: _preference(me, connection_id),
                forget_after_ms=PRUNE_AFTER_TIMEOUTS * self._lease_ms,
            )
        )
        was_trusted = self._trusted()
        before = self._held
        self._held = holding.held
        self._elsewhere = holding.held_elsewhere
        self._trusted_until = started + self._trust_s
        if holding.held != before or not was_trusted:
            self._notify()
        if holding.next_lapse_ms is None:
            return self._heartbeat_s
        until_lapse = (holding.next_lapse_ms - now_ms) / 1000 + MIN_ROUND_GAP_S
        return max(MIN_ROUND_GAP_S, min(self._heartbeat_s, until_lapse))

    def _after_failure(self) -> float:
        """How long until the next try; once our leases can no longer be trusted, we
        hold nothing, and the poll supervisor stops polling it at once."""
        left = self._trusted_until - self._monotonic()
        if left <= 0:
            if self._held:
                self._held = frozenset()
                self._notify()
            return self._heartbeat_s
        return max(MIN_ROUND_GAP_S, min(self._heartbeat_s, left))

    def _notify(self) -> None:
        for callback in self._callbacks:
            callback()


def _preference(replica_id: str, connection_id: str) -> int:
    """Rendezvous weight: each replica ranks the connections in its own random order."""
    digest = hashlib.blake2b(f"{replica_id}\0{connection_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")
