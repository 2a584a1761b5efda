"""The `svc_anomaly_*` and `svc_correlated_groups_*` families at scrape time, from the
summary AnomalyService rebuilds every anomalyPrometheusIntervalMs (never storage during
a scrape). Counters count since start; `_current` and `_by_*` of anomalies count the
unresolved ones of the last anomalyCacheTtlMs. Buffer mean and stddev, and every
per-command buffer (cmd_calls:get ...), are full-profile.
"""

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from svc_monitor.anomaly.service import AnomalyService
from svc_monitor.prometheus import catalogue as c

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric


class AnomalyCollector:
    """A prometheus_client collector over AnomalyService.summary."""

    def __init__(
        self,
        anomaly: AnomalyService,
        addresses: Callable[[], dict[str, str]],
        *,
        full: Callable[[], bool],
    ) -> None:
        self._anomaly = anomaly
        self._addresses = addresses  # connection id -> host:port
        self._full = full

    def collect(self) -> Iterator["Metric"]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        summary = self._anomaly.summary
        addresses = self._addresses()

        def family(f: c.Family) -> "GaugeMetricFamily | CounterMetricFamily":
            kind = CounterMetricFamily if f.kind == "counter" else GaugeMetricFamily
            return kind(f.name, f.help, labels=["connection", *f.labels])

        events = family(c.ANOMALY_EVENTS)
        for (cid, metric, severity), n in sorted(summary.events_total.items()):
            if cid in addresses:
                events.add_metric([addresses[cid], metric, severity], n)
        groups = family(c.CORRELATED_GROUPS)
        current = family(c.ANOMALY_EVENTS_CURRENT)
        by_severity = family(c.ANOMALY_BY_SEVERITY)
        by_metric = family(c.ANOMALY_BY_METRIC)
        group_severity = family(c.CORRELATED_GROUPS_BY_SEVERITY)
        group_pattern = family(c.CORRELATED_GROUPS_BY_PATTERN)
        ready = family(c.ANOMALY_BUFFER_READY)
        mean, stddev = family(c.ANOMALY_BUFFER_MEAN), family(c.ANOMALY_BUFFER_STDDEV)
        full = self._full()
        for cid, address in sorted(addresses.items(), key=lambda item: item[1]):
            if cid not in summary.buffers:
                continue  # no INFO judged yet (or detection off): absent, not zero
            groups.add_metric([address], summary.groups_total.get(cid, 0))
            current.add_metric(
                [address], sum(n for (k, _), n in summary.current_by_severity.items() if k == cid)
            )
            for severity in ("warning", "critical"):
                by_severity.add_metric(
                    [address, severity], summary.current_by_severity.get((cid, severity), 0)
                )
                group_severity.add_metric(
                    [address, severity], summary.groups_by_severity.get((cid, severity), 0)
                )
            for (k, metric), n in sorted(summary.current_by_metric.items()):
                if k == cid:
                    by_metric.add_metric([address, metric], n)
            for (k, pattern), n in sorted(summary.groups_by_pattern.items()):
                if k == cid:
                    group_pattern.add_metric([address, pattern], n)
            for state in summary.buffers[cid]:
                if ":" in state.metric and not full:
                    continue  # per-command buffers (up to 128 per connection): full only
                ready.add_metric([address, state.metric], 1.0 if state.ready else 0.0)
                if full and state.mean is not None and state.stddev is not None:
                    mean.add_metric([address, state.metric], state.mean)
                    stddev.add_metric([address, state.metric], state.stddev)
        for f in (
            events,
            groups,
            current,
            by_severity,
            by_metric,
            group_severity,
            group_pattern,
            ready,
            mean,
            stddev,
        ):
            if f.samples:
                yield f
