"""The registry behind `GET /api/prometheus/metrics` and the OTLP metrics export.

The scrape is the source of truth and the export mirrors it, so both read the same
`families()`: the connection families built from live state at that moment
(prometheus/collector.py), then the process's own (process, garbage collector), then
the collectors app.py lists when it builds this service (the exporters' own counters,
the detectors' families under prometheus/families/).
"""

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from svc_monitor.config import Settings
from svc_monitor.connections.models import Connection
from svc_monitor.events import now_ms
from svc_monitor.pipe.live_state import LiveState

# The longest a scrape holds the event loop before letting requests and polls run.
SLICE_S = 0.01

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import Collector

    from svc_monitor.prometheus.collector import Rows


class PrometheusService:
    """Builds the families on demand; holds nothing between scrapes but the collectors."""

    def __init__(
        self,
        connections: Callable[[], Sequence[Connection]],
        live_state: LiveState,
        settings: Settings,
        *,
        pushed_connections: Callable[[], Sequence[Connection]] = list,
        collectors: Sequence["Collector"] = (),
    ) -> None:
        self._connections = connections
        self._pushed_connections = pushed_connections
        self._live_state = live_state
        self._settings = settings
        self._collectors = tuple(collectors)
        self._process: tuple[Collector, ...] | None = None

    @property
    def full_profile(self) -> bool:
        return self._settings.METRICS_EXPORT_PROFILE == "full"

    async def families(self) -> list["Metric"]:
        """Every family of one scrape as prometheus_client families (the OTLP export)."""
        from svc_monitor.prometheus.collector import Rows

        built: list[Metric] = []
        await self._each_family(lambda f: built.append(f.metric() if isinstance(f, Rows) else f))
        return built

    async def render(self) -> bytes:
        """The Prometheus text format (0.0.4) of one scrape."""
        from svc_monitor.prometheus.text import write

        out: list[str] = []
        await self._each_family(lambda family: write(family, out))
        return "".join(out).encode()

    async def _each_family(self, take: Callable[["Rows | Metric"], None]) -> None:
        """Hands `take` every family of one scrape, giving the loop back every SLICE_S.

        At a thousand connections a scrape takes most of a second; as one step of the loop
        it held every request and poll behind it that long. In slices, the families built
        after a pause read what the polls stored meanwhile: each is still one moment's
        values, as a scrape of any exporter is."""
        families = self._collect()
        while True:
            with _collector_paused():
                deadline = time.perf_counter() + SLICE_S
                for family in families:
                    take(family)
                    if time.perf_counter() >= deadline:
                        break
                else:
                    return
            await asyncio.sleep(0)

    def _collect(self) -> Iterator["Rows | Metric"]:
        """Every family of one scrape, in the order the text shows them, built as taken."""
        # Imported on the first use: an install nobody scrapes keeps its ~0.6 MB.
        from svc_monitor.prometheus.collector import LiveStateCollector, ScrapedConnection

        connections = [ScrapedConnection(c.id, f"{c.host}:{c.port}") for c in self._connections()]
        connections += [
            ScrapedConnection(c.id, f"{c.host}:{c.port}", pushed=True)
            for c in self._pushed_connections()
        ]
        collector = LiveStateCollector(
            self._live_state,
            connections,
            now_ms=now_ms(),
            staleness_ms=self._settings.PROMETHEUS_STALENESS_MS,
            full=self.full_profile,
        )
        yield from (f for f in collector.collect() if f.samples)
        for own in (*self._process_collectors(), *self._collectors):
            yield from own.collect()

    def _process_collectors(self) -> tuple["Collector", ...]:
        if self._process is None:
            from svc_monitor.prometheus.process import own_collectors

            self._process = tuple(own_collectors())
        return self._process


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while one scrape builds its ~10,000 rows.

    Each row is a new tuple, so a scrape at 100 connections set off dozens of young
    collections, each walking the polls' freshly parsed INFO replies: 60% of the build
    (bench/prometheus.py). The rows die by reference counting when the scrape ends; any
    cyclic garbage waits for the next collection, milliseconds later.
    """
    if not gc.isenabled():  # someone else paused it: leave it to them
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
