"""Pushed points taken and dropped, by reason: `svc_otlp_metric_points_accepted_total` and
`svc_otlp_metric_points_dropped_total{reason}` (full export profile only)."""

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

DropReason = Literal[
    "unidentified",
    "unknown_instance",
    "already_polled",
    "unsupported_type",
    "unsupported_temporality",
    "unmapped_metric",
    "invalid_value",
    "cardinality_limit",
]
DROP_REASONS: tuple[DropReason, ...] = get_args(DropReason)


class IngestCounts:
    """Totals since start; a Prometheus collector of the service's own families."""

    def __init__(self, *, full_profile: bool) -> None:
        self._full = full_profile
        self.accepted = 0
        self.dropped: Counter[str] = Counter()

    def add(self, accepted: int, dropped: Counter[str]) -> None:
        self.accepted += accepted
        self.dropped.update(dropped)

    def collect(self) -> Iterator["Metric"]:
        if not self._full:
            return
        from prometheus_client.core import CounterMetricFamily

        yield CounterMetricFamily(
            "svc_otlp_metric_points_accepted",
            "Pushed metric points taken by /v1/external/metrics.",
            value=self.accepted,
        )
        dropped = CounterMetricFamily(
            "svc_otlp_metric_points_dropped",
            "Pushed metric points dropped by /v1/external/metrics, by reason.",
            labels=["reason"],
        )
        for reason in DROP_REASONS:  # every reason from the start, at 0: rate() needs a base
            dropped.add_metric([reason], self.dropped.get(reason, 0))
        yield dropped
