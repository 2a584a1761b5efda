"""The CVE scanner's families at scrape time: findings by severity and on CISA's KEV list
per scanned connection (end-of-life is not counted), and whether the dataset is stale.
Read from the scanner's last scans in memory, never from storage during a scrape."""

from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING

from svc_monitor.cve.service import SEVERITIES, CveService
from svc_monitor.prometheus import catalogue as c

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric


class CveCollector:
    """A prometheus_client collector over CveService.summaries."""

    def __init__(self, cve: CveService, watched: Callable[[], Collection[str]]) -> None:
        self._cve = cve
        # The connections this process watches: where replicas share the polling, each
        # exports the findings of those it polls, so no series comes from two of them.
        self._watched = watched

    def collect(self) -> Iterator["Metric"]:
        from prometheus_client.core import GaugeMetricFamily

        findings = GaugeMetricFamily(
            c.CVE_FINDINGS.name, c.CVE_FINDINGS.help, labels=["connection", "severity"]
        )
        kev = GaugeMetricFamily(c.CVE_KEV.name, c.CVE_KEV.help, labels=["connection"])
        watched = self._watched()
        for connection_id, address, summary in self._cve.summaries():
            if connection_id not in watched:
                continue
            for severity in SEVERITIES:
                findings.add_metric([address, severity], summary.by_severity.get(severity, 0))
            kev.add_metric([address], summary.kev)
        yield findings
        yield kev
        yield GaugeMetricFamily(
            c.CVE_DATASET_STALE.name,
            c.CVE_DATASET_STALE.help,
            value=1 if self._cve.dataset_stale() else 0,
        )
