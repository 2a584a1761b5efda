"""The replicas' feature-phase part: their Prometheus family, with this replica's count of
polled connections (the registry and the ownership are core)."""

from svc_monitor.parts import Part, Registry, Watched
from svc_monitor.prometheus.families.replica import ReplicaCollector
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    replicas = registry.get(Services).replicas

    def collectors() -> list[ReplicaCollector]:
        watched = registry.get(Watched)
        return [ReplicaCollector(replicas, lambda: len(watched.polled()))]

    return Part(name="replicas", collectors=collectors)
