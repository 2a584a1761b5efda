"""The detectors' parts: small pipe consumers without a service of their own, each at its
place in the pipe (features.py lists them), and the config watch's poll and INFO rider."""

from svc_monitor.detection.cluster_state import ClusterStateDetector
from svc_monitor.detection.command_latency import LatencyDetector
from svc_monitor.detection.config_watch import ConfigWatch
from svc_monitor.detection.readings import ReadingsDetector
from svc_monitor.parts import Part, Registry
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.config_watch_poll import config_watch_kind, config_watch_rider
from svc_monitor.polling.info_rides import InfoRider, InfoRides
from svc_monitor.polling.models import PollKind
from svc_monitor.services import Services


def readings(registry: Registry) -> Part:
    """Memory, clients, replication and slow log length: their threshold events."""
    detector = ReadingsDetector(registry.get(Services).bus)
    return Part(name="readings", observation_consumers=(detector,), facts_consumers=(detector,))


def cluster_state(registry: Registry) -> Part:
    """The CLUSTER INFO state's events."""
    detector = ClusterStateDetector(registry.get(Services).bus)
    return Part(name="cluster state", facts_consumers=(detector,))


def command_latency(registry: Registry) -> Part:
    """The mean command latency's events."""
    detector = LatencyDetector(registry.get(Services).bus)
    return Part(name="command latency", facts_consumers=(detector,))


def config_watch(registry: Registry) -> Part:
    """CONFIG GET polled (and INFO commandstats ridden) for changes of the configuration."""
    services = registry.get(Services)
    watch = registry.add(ConfigWatch, ConfigWatch(services.bus, services.live_state))

    def info_riders() -> list[InfoRider]:
        return [config_watch_rider(watch, registry.get(Pipe), services.settings)]

    def poll_kinds() -> list[PollKind]:
        return [config_watch_kind(watch, registry.get(Pipe), registry.get(InfoRides))]

    return Part(name="config watch", info_riders=info_riders, poll_kinds=poll_kinds)
