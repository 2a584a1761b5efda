"""The replicas' parts: membership, connection leases and the change feed (core); and,
with the features, their Prometheus family, with this replica's count of polled
connections."""

from typing import TYPE_CHECKING

from svc_monitor.config import StorageType
from svc_monitor.parts import Core, Part, Registry, Task, Watched
from svc_monitor.replicas.api import router
from svc_monitor.replicas.change_feed import ChangeFeed
from svc_monitor.replicas.lease_store import LeaseStore
from svc_monitor.replicas.models import Ownership
from svc_monitor.replicas.ownership import LeasedOwnership, SoleOwnership
from svc_monitor.replicas.service import ReplicaRegistry
from svc_monitor.replicas.store import ReplicaStore
from svc_monitor.services import Services

if TYPE_CHECKING:
    from svc_monitor.prometheus.families.replica import ReplicaCollector


def part(registry: Registry) -> Part:
    core = registry.get(Core)
    db, settings = core.db, core.settings
    replicas = ReplicaRegistry(ReplicaStore(db), settings, clock=core.clock)
    registry.add(ReplicaRegistry, replicas)
    ownership: Ownership = (
        LeasedOwnership(LeaseStore(db), replicas, settings)
        if db.shared
        else SoleOwnership(replicas.id)  # one process per memory or SQLite store
    )
    registry.add(Ownership, ownership)  # type: ignore[type-abstract]
    # Changes made here reach the other replicas at once.
    changes = ChangeFeed(db, core.bus, replicas.id, shared=db.kind is StorageType.POSTGRES)
    registry.add(ChangeFeed, changes)

    async def stop() -> None:
        # Polling has stopped: the others take our connections on their next heartbeat,
        # and see a clean stop at once, not on timeout.
        await ownership.release()
        await replicas.leave()

    return Part(
        name="replicas",
        routers=(router,),
        tasks=(
            Task("replica-heartbeat", replicas.run),
            Task("connection-leases", ownership.run),
            Task("change-feed", changes.run),
        ),
        stop=stop,
    )


def feature(registry: Registry) -> Part:
    replicas = registry.get(Services).replicas
    # Its heartbeat row says how many connections it polls (the sources are built next).
    replicas.count_polled = lambda: len(registry.get(Watched).polled())

    def collectors() -> "list[ReplicaCollector]":
        # Imported with the features, as the other families are.
        from svc_monitor.prometheus.families.replica import ReplicaCollector

        watched = registry.get(Watched)
        return [ReplicaCollector(replicas, lambda: len(watched.polled()))]

    return Part(name="replicas family", collectors=collectors)
