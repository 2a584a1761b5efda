"""The OTLP exporters' own health: counters for the scrape, a log line per change of state.

Both exports (metrics, logs) record every push here. The scrape (and so the metrics export
itself) shows `svc_otlp_export_requests_total{signal,outcome}`,
`svc_otlp_export_last_duration_seconds{signal}` and
`svc_otlp_export_last_success_timestamp_seconds{signal}`. The log says once when a signal
starts failing (with the status or error) and once when it recovers, never once per push:
a collector that is down for an hour at a 15 s interval would otherwise write 240 lines.
"""

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from svc_monitor.otlp.export.transport import PostResult

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

logger = logging.getLogger(__name__)

Signal = Literal["metrics", "logs"]


@dataclass(slots=True)
class _SignalState:
    successes: int = 0
    failures: int = 0
    last_duration_s: float | None = None
    last_success_s: float | None = None
    failing: bool = False


class ExportStats:
    """Per-signal outcome counts and the failing/recovered state; also a Prometheus collector."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._signals: dict[str, _SignalState] = {}

    def track(self, signal: Signal) -> None:
        """Show this signal's counters (at 0) from now on, before its first push."""
        self._signals.setdefault(signal, _SignalState())

    def record(self, signal: Signal, result: PostResult, *, target: str = "") -> None:
        """One finished push. `target` (scheme://host:port, no credentials) goes in the log."""
        state = self._signals.setdefault(signal, _SignalState())
        state.last_duration_s = result.duration_s
        if result.ok:
            state.successes += 1
            state.last_success_s = self._clock()
            if state.failing:
                state.failing = False
                logger.info("OTLP %s export to %s recovered", signal, target or "the collector")
            return
        state.failures += 1
        if not state.failing:
            state.failing = True
            logger.warning(
                "OTLP %s export to %s is failing: %s (logged again only after it recovers)",
                signal,
                target or "the collector",
                result.error or f"HTTP {result.status}",
            )

    def failing(self, signal: Signal) -> bool:
        state = self._signals.get(signal)
        return state is not None and state.failing

    def collect(self) -> Iterator["Metric"]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        if not self._signals:
            return
        requests = CounterMetricFamily(
            "svc_otlp_export_requests",
            "OTLP export requests by signal and outcome (success: a 2xx answer).",
            labels=["signal", "outcome"],
        )
        duration = GaugeMetricFamily(
            "svc_otlp_export_last_duration_seconds",
            "Duration of the last finished OTLP export request.",
            labels=["signal"],
        )
        last_success = GaugeMetricFamily(
            "svc_otlp_export_last_success_timestamp_seconds",
            "Unix time of the last successful OTLP export request.",
            labels=["signal"],
        )
        for signal, state in sorted(self._signals.items()):
            requests.add_metric([signal, "success"], state.successes)
            requests.add_metric([signal, "failure"], state.failures)
            if state.last_duration_s is not None:
                duration.add_metric([signal], state.last_duration_s)
            if state.last_success_s is not None:
                last_success.add_metric([signal], state.last_success_s)
        yield requests
        yield from (family for family in (duration, last_success) if family.samples)
