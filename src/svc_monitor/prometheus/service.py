"""The registry behind `GET /api/prometheus/metrics` and the OTLP metrics export.

The scrape is the source of truth and the export mirrors it, so both read the same
`families()`: the connection families built from live state at that moment
(prometheus/collector.py), then the process's own (process, garbage collector), then
the collectors the parts declare (features.py builds this service over them: the exporters'
own counters, the detectors' families under prometheus/families/).
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
from svc_monitor.pipe.live_view import LiveView

# The longest a scrape holds the event loop before letting requests and polls run, while
# they need little of it; when they need more, a slice may last as long as they just ran,
# up to MAX_SLICE_S (see _each_family).
SLICE_S = 0.01
MAX_SLICE_S = 0.05

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import Collector

    from svc_monitor.prometheus.collector import Rows


class PrometheusService:
    """Builds the families on demand; holds nothing between scrapes but the collectors."""

    def __init__(
        self,
        connections: Callable[[], Sequence[Connection]],
        live_state: LiveView,
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

        def keep(family: "Rows | Metric") -> Iterator[None]:
            built.append(family.metric() if isinstance(family, Rows) else family)
            return iter(())

        await self._each_family(keep)
        return built

    async def render(self) -> bytes:
        """The Prometheus text format (0.0.4) of one scrape."""
        from svc_monitor.prometheus.text import write_in_steps

        out: list[str] = []
        await self._each_family(lambda family: write_in_steps(family, out))
        return "".join(out).encode()

    async def _each_family(self, take: Callable[["Rows | Metric"], Iterator[None]]) -> None:
        """Hands `take` every family of one scrape, giving the loop back every SLICE_S.

        At a thousand connections a scrape takes most of a second; as one step of the loop
        it held every request and poll behind it that long. In slices, the families built
        after a pause read what the polls stored meanwhile: each is still one moment's
        values, as a scrape of any exporter is. Both the building and `take` (the text
        writer) pause between nodes or lines, so no slice runs far past its length.

        A slice is SLICE_S, or as long as the rest of the loop just ran if that was longer
        (up to MAX_SLICE_S): with a thousand connections' polls queued at every pause, 10 ms
        slices left a scrape a small share of the loop, and it took twice as long."""
        steps = self._steps(take)
        slice_s = SLICE_S
        with _collector_paused():
            while True:
                deadline = time.perf_counter() + slice_s
                for _ in steps:
                    if time.perf_counter() >= deadline:
                        break
                else:
                    return
                paused = time.perf_counter()
                await asyncio.sleep(0)
                slice_s = min(MAX_SLICE_S, max(SLICE_S, time.perf_counter() - paused))

    def _steps(self, take: Callable[["Rows | Metric"], Iterator[None]]) -> Iterator[None]:
        for family in self._collect():
            if family is not None:
                yield from take(family)
            yield None

    def _collect(self) -> Iterator["Rows | Metric | None"]:
        """Every family of one scrape, in the order the text shows them, built as taken;
        None between two of the collector's nodes (a point to pause at)."""
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
        yield from (f for f in collector.collect() if f is None or f.samples)
        for own in (*self._process_collectors(), *self._collectors):
            yield from own.collect()

    def _process_collectors(self) -> tuple["Collector", ...]:
        if self._process is None:
            from svc_monitor.prometheus.process import own_collectors

            self._process = tuple(own_collectors())
        return self._process


class _CollectorPause:
    """No cyclic garbage collection from the first scrape's start to the last one's end.

    Each row is a new tuple, and the rows of the family being built are alive: a young
    collection between two slices walked them, ~90,000 objects and 50-60 ms at 300
    connections (bench/prometheus.py), several times a scrape. Written rows die by
    reference counting as the scrape goes on, so when it ends the collector finds only
    what the polls kept meanwhile. Scrapes may overlap (the OTLP export reads the same
    families): the collector comes back when the last of them ends, or when a scrape
    starts after it has been off for MAX_PAUSE_S (scrapes that never stop overlapping
    must not keep it off for good), and is left alone if someone else had turned it off.
    """

    MAX_PAUSE_S = 2.0

    def __init__(self) -> None:
        self._depth = 0
        self._paused_it = False
        self._paused_at = 0.0

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        if self._depth == 0 and gc.isenabled():
            gc.disable()
            self._paused_it, self._paused_at = True, time.monotonic()
        elif self._paused_it and time.monotonic() - self._paused_at > self.MAX_PAUSE_S:
            self._paused_it = False
            gc.enable()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and self._paused_it:
                self._paused_it = False
                gc.enable()


_collector_paused = _CollectorPause()
