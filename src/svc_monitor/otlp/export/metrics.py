"""Pushes the Prometheus registry to `${OTEL_EXPORTER_OTLP_ENDPOINT}/v1/metrics` (or to
OTEL_EXPORTER_OTLP_METRICS_ENDPOINT as it is).

Every OTEL_METRICS_EXPORT_INTERVAL_MS: read `families()` (what a scrape would show at that
moment), build the requests (semconv.py: one in mode mirror; one per node plus one for
the monitor in mode semconv), send them at most eight at a time.

Timing, so that a slow or hanging collector never holds the export back:
- The schedule is fixed: a push starts on its tick whatever the previous one is doing;
  ticks missed while the loop was busy are skipped, not made up.
- A request that answers within its interval records its outcome then. One still
  running when the next push starts is not cancelled: it continues, outside the next
  push's eight, until two intervals after its own push began, and its outcome (often a
  timeout) is recorded when it ends, during the next push. A request that never got one
  of its push's eight slots before the next push is dropped (newer values replace it)
  and counted as a failure then.
- So at most 16 requests are ever open: eight of this push and eight stragglers.
"""

import asyncio
import logging
import math
import time
from dataclasses import dataclass, field

from svc_monitor.config import ExportMode, Settings
from svc_monitor.otlp.export.semconv import build_requests
from svc_monitor.otlp.export.series_memory import SeriesMemory
from svc_monitor.otlp.export.stats import ExportStats
from svc_monitor.otlp.export.transport import OtlpTransport, PostResult
from svc_monitor.prometheus.service import PrometheusService

logger = logging.getLogger(__name__)

PATH = "/v1/metrics"
# Concurrent export requests of one push (docs/features/otlp-export.md#timing).
MAX_IN_FLIGHT = 8


@dataclass(eq=False, slots=True)
class _Request:
    resource: str
    body: bytes
    started: bool = False
    task: "asyncio.Task[None] | None" = field(default=None, repr=False)


class MetricsExporter:
    """The periodic OTLP metrics push (one per app; built only when export is on)."""

    def __init__(
        self,
        prometheus: PrometheusService,
        transport: OtlpTransport,
        stats: ExportStats,
        *,
        mode: ExportMode,
        interval_ms: int,
        staleness_ms: int,
        instance: str | None = None,
    ) -> None:
        self._prometheus = prometheus
        # The replica's id where several share the storage: their own series (process,
        # replica, exports) must not collide at the backend (service.instance.id).
        self._instance = instance
        self._transport = transport
        self._stats = stats
        # Read once at startup (docs/features/otlp-export.md#otlp-export-metrics-and-events).
        self.mode = mode
        self.interval_s = interval_ms / 1000
        # A series that left the registry is still sent for this long (series_memory.py).
        bound_ms = max(staleness_ms, 2 * interval_ms)
        self._memory = SeriesMemory(bound_ns=bound_ms * 1_000_000)
        self._waiting: list[_Request] = []  # the last push's requests not yet sent
        self._tasks: set[asyncio.Task[None]] = set()
        self._build_failing = False
        self._rejections: str | None = None
        stats.track("metrics")

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        prometheus: PrometheusService,
        transport: OtlpTransport,
        stats: ExportStats,
        *,
        instance: str | None = None,
    ) -> "MetricsExporter":
        return cls(
            prometheus,
            transport,
            stats,
            mode=settings.OTEL_METRICS_EXPORT_MODE,
            interval_ms=settings.OTEL_METRICS_EXPORT_INTERVAL_MS,
            staleness_ms=settings.PROMETHEUS_STALENESS_MS,
            instance=instance,
        )

    async def run(self) -> None:
        """Push every interval until cancelled; the first push is one interval after start."""
        loop = asyncio.get_running_loop()
        logger.info(
            "OTLP metrics export to %s every %g s (mode %s)",
            self._transport.target_of(PATH),
            self.interval_s,
            self.mode.value,
        )
        next_at = loop.time() + self.interval_s
        try:
            while True:
                await asyncio.sleep(max(0.0, next_at - loop.time()))
                await self.push_once()
                next_at += self.interval_s
                behind = loop.time() - next_at
                if behind > 0:  # the loop was held up: skip the ticks already missed
                    next_at += math.ceil(behind / self.interval_s) * self.interval_s
        finally:
            await self.close()

    async def push_once(self) -> int:
        """Start one push; returns the number of requests it sends (they finish later)."""
        self._drop_unsent()
        try:
            families = await self._prometheus.families()
            requests = build_requests(
                families,
                mode=self.mode,
                now_ns=time.time_ns(),
                series_memory=self._memory,
                monitor_instance=self._instance,
            )
            bodies = [(key, message.SerializeToString()) for key, message in requests]
        except Exception:  # a bug in a collector must not end the export loop
            if not self._build_failing:
                logger.exception("OTLP metrics export: building the push failed")
            self._build_failing = True
            return 0
        self._build_failing = False
        deadline = asyncio.get_running_loop().time() + 2 * self.interval_s
        slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._waiting = [_Request(key, body) for key, body in bodies]
        for request in self._waiting:
            request.task = asyncio.create_task(
                self._send(request, slots, deadline), name=f"otlp-metrics {request.resource}"
            )
            self._tasks.add(request.task)
            request.task.add_done_callback(self._tasks.discard)
        return len(bodies)

    async def close(self) -> None:
        """Cancel what is still open (shutdown); the transport belongs to the caller."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _send(self, request: _Request, slots: asyncio.Semaphore, deadline: float) -> None:
        async with slots:
            request.started = True
            left = deadline - asyncio.get_running_loop().time()
            result = await self._transport.post(PATH, request.body, timeout_s=max(left, 0.001))
        self._stats.record("metrics", result, target=self._transport.target_of(PATH))
        if result.ok:
            self._note_rejections(result.body)

    def _drop_unsent(self) -> None:
        for request in self._waiting:
            if request.started or request.task is None or request.task.done():
                continue
            request.task.cancel()
            self._stats.record(
                "metrics",
                PostResult(
                    False,
                    None,
                    f"not sent within the export interval ({MAX_IN_FLIGHT} requests "
                    "to the collector were still open)",
                    0.0,
                ),
                target=self._transport.target_of(PATH),
            )
        self._waiting = []

    def _note_rejections(self, body: bytes) -> None:
        """A 200 may still reject points (partial success); say so once per new message."""
        if not body:
            return
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceResponse,
        )

        response = ExportMetricsServiceResponse()
        try:
            response.ParseFromString(body)
        except Exception:  # a 2xx body that is not ours to read: the push still succeeded
            return
        rejected = response.partial_success.rejected_data_points
        message = response.partial_success.error_message
        if rejected and message != self._rejections:
            logger.warning(
                "OTLP metrics export: the collector rejected %d points: %s", rejected, message
            )
        self._rejections = message if rejected else None
