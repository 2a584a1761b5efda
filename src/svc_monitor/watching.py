"""What watches the instances: the pipe with every consumer it feeds, and its sources.

Composed here from the parts (parts.py) and nowhere else: `build_pipe` tells who takes an
Observation or a fact, polled or pushed, and in which order (live state, then the parts'
consumers in part order); the sources are built after it, with the pipe as an argument:
the poll supervisor with every poll kind (INFO here, the parts' after it) and the OTLP
metrics receiver (otlp/ingest/). Built with the feature domains (features.py), right
after the server listens.
"""

from collections.abc import Sequence

from svc_monitor.detection.alerts.service import AlertStates
from svc_monitor.otlp.ingest.counts import IngestCounts
from svc_monitor.otlp.ingest.receiver import MetricsReceiver
from svc_monitor.parts import Part, Registry, Task, Watched
from svc_monitor.pipe.health import InstanceHealth
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.info_poll import InfoPoller
from svc_monitor.polling.info_rides import InfoRides
from svc_monitor.polling.supervisor import PollSupervisor
from svc_monitor.services import Services


def build_pipe(services: Services, parts: Sequence[Part]) -> Pipe:
    """Who takes what the instances say, in order: live state first (what is true now),
    then the parts' consumers in part order: the detectors and domains that judge or keep
    it (features.py lists them)."""
    live_state = services.live_state
    return Pipe(
        observation_consumers=(live_state, *(c for p in parts for c in p.observation_consumers)),
        facts_consumers=(live_state, *(c for p in parts for c in p.facts_consumers)),
        # What a poll brings back after this replica lost its lease goes no further.
        fenced=services.ownership.fenced,
        # Every consumer has read it: the values none of them could keep are counted.
        judged=live_state.judged,
    )


def build_sources(registry: Registry, parts: Sequence[Part]) -> Part:
    """The poll supervisor with the INFO poll (carrying the parts' INFO riders) and the
    parts' poll kinds, and the OTLP metrics receiver; registered, and returned as the part
    that runs them (its tasks first of the features', its collectors first of the scrape)."""
    services, pipe = registry.get(Services), registry.get(Pipe)
    settings, connections = services.settings, services.connections
    rides = registry.add(InfoRides, InfoRides([r for p in parts for r in p.info_riders()]))
    kinds = [k for p in parts for k in p.poll_kinds()]
    shared = services.shared_alerts
    health = registry.add(
        InstanceHealth, InstanceHealth(services.bus, on_change=shared.health_changed)
    )
    webhook_alerts = services.webhook_dispatcher.alerts
    exporter = services.event_exporter
    takeovers = [p.takeover for p in parts if p.takeover is not None]

    def alerts_of(consumer: str) -> AlertStates:
        if exporter is not None and consumer == exporter.consumer:
            return exporter.alerts
        return webhook_alerts

    async def carry_on(connection_ids: list[str]) -> None:
        await shared.restore(connection_ids, down=health.restore_down, alerts=alerts_of)
        for takeover in takeovers:
            await takeover(connection_ids)

    supervisor = PollSupervisor(
        connections=connections,
        runtime_settings=services.runtime_settings,
        settings=settings,
        bus=services.bus,
        health=health,
        pipe=pipe,
        live_state=services.live_state,
        ownership=services.ownership,
        # Taken over from another replica, or polled again after a restart on lasting
        # storage: carry on from the alerts sent before.
        carry_on=carry_on if shared.enabled else None,
        kinds=[InfoPoller(connections, pipe, rides).kind(), *kinds],
    )
    receiver = MetricsReceiver(
        connections=connections,
        pipe=pipe,
        health=health,
        discovery=services.discovery,
        counts=IngestCounts(full_profile=settings.METRICS_EXPORT_PROFILE == "full"),
        bus=services.bus,
        stale_after_ms=settings.OTEL_METRICS_STALE_AFTER_MS,
        clock=services.clock,
    )
    registry.add(PollSupervisor, supervisor)
    registry.add(MetricsReceiver, receiver)
    registry.add(Watched, Watched(supervisor.polled_connections, receiver.push_connections))
    return Part(
        name="watching",
        # What watches the instances: every poll of every connection, and the push
        # receiver's registry refresh and staleness sweep.
        tasks=(
            Task("poll-supervisor", supervisor.run),
            Task("otlp-metrics-receiver", receiver.run),
        ),
        collectors=lambda: [services.otlp_stats, receiver.counts],
        stop_request=supervisor.request_stop,  # before the cancel: see PollLoop.stop
    )
