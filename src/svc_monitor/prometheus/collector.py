"""The Prometheus families, built from live state at scrape time (never from an engine).

This is the first handful of the spec's families, the ones INFO alone answers; the rest
of the catalogue (slow logs, command logs, cluster slots, the service's own process) is
issue 8's. Each scrape builds its families afresh from the latest Observation of each
connection, so a removed connection leaves no series behind, and one not observed for
PROMETHEUS_STALENESS_MS drops out until it answers again.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.registry import Collector

from svc_monitor.polling.live_state import LiveState
from svc_monitor.polling.models import Observation


@dataclass(frozen=True, slots=True)
class ScrapedConnection:
    id: str
    address: str  # host:port, the `connection` label


@dataclass(frozen=True, slots=True)
class _Gauge:
    name: str
    help: str
    section: str
    field: str
    scale: float = 1.0


# INFO field -> family. Names carry their unit; values are converted to it.
GAUGES = (
    _Gauge(
        "svc_memory_used_bytes", "Memory used by the engine (used_memory).", "memory", "used_memory"
    ),
    _Gauge(
        "svc_connected_clients",
        "Client connections open (connected_clients).",
        "clients",
        "connected_clients",
    ),
    _Gauge(
        "svc_instantaneous_input_kbps",
        "Network input rate, KB/s, as the engine samples it.",
        "stats",
        "instantaneous_input_kbps",
    ),
    _Gauge(
        "svc_instantaneous_output_kbps",
        "Network output rate, KB/s, as the engine samples it.",
        "stats",
        "instantaneous_output_kbps",
    ),
)
COMMANDS = ("svc_commands_processed", "Commands the engine has processed since it started.")


class LiveStateCollector(Collector):
    """Yields the families for `connections` from what was last observed of each."""

    def __init__(
        self,
        live_state: LiveState,
        connections: Sequence[ScrapedConnection],
        *,
        now_ms: int,
        staleness_ms: int,
    ) -> None:
        self._live_state = live_state
        self._connections = connections
        self._oldest_ms = now_ms - staleness_ms

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily | InfoMetricFamily]:
        observed = [
            (c.address, o)
            for c in self._connections
            if (o := self._live_state.latest(c.id)) is not None
            and o.received_at_ms >= self._oldest_ms
        ]
        for gauge in GAUGES:
            family = GaugeMetricFamily(gauge.name, gauge.help, labels=["connection"])
            for address, observation in observed:
                value = observation.info.get_float(gauge.section, gauge.field)
                if value is not None:  # a field the engine lacks: no series, not 0
                    family.add_metric([address], value * gauge.scale)
            yield family
        commands = CounterMetricFamily(*COMMANDS, labels=["connection"])
        for address, observation in observed:
            total = observation.info.get_int("stats", "total_commands_processed")
            if total is not None:
                commands.add_metric([address], total)
        yield commands
        yield _instance_info(observed)


def _instance_info(observed: list[tuple[str, Observation]]) -> InfoMetricFamily:
    family = InfoMetricFamily(
        "svc_instance", "The engine behind each connection.", labels=["connection"]
    )
    for address, observation in observed:
        info = observation.info
        valkey = info.get_str("server", "valkey_version")
        version = valkey or info.get_str("server", "redis_version") or ""
        family.add_metric(
            [address],
            {
                "type": "valkey" if valkey else "redis",
                "version": version,
                "role": info.get_str("replication", "role") or "",
            },
        )
    return family
