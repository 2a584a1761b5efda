"""This replica's families at scrape time: what it polls and how fresh its heartbeat is.
Read from the registry in memory, never from storage during a scrape."""

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from svc_monitor.prometheus import catalogue as c
from svc_monitor.replicas.service import ReplicaRegistry

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric


class ReplicaCollector:
    """A prometheus_client collector over ReplicaRegistry, labelled with its id."""

    def __init__(self, registry: ReplicaRegistry, polled: Callable[[], int]) -> None:
        self._registry = registry
        self._polled = polled

    def collect(self) -> Iterator["Metric"]:
        from prometheus_client.core import GaugeMetricFamily

        replica = [self._registry.id]
        polled = GaugeMetricFamily(c.REPLICA_POLLED.name, c.REPLICA_POLLED.help, labels=["replica"])
        polled.add_metric(replica, self._polled())
        yield polled
        age_ms = self._registry.heartbeat_age_ms()
        age = GaugeMetricFamily(
            c.REPLICA_HEARTBEAT_AGE.name, c.REPLICA_HEARTBEAT_AGE.help, labels=["replica"]
        )
        if age_ms is not None:
            age.add_metric(replica, age_ms / 1000)
        yield age
