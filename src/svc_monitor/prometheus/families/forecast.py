"""`svc_metric_forecast_time_to_limit_seconds{connection, metric_kind}` at scrape time.

Read from the projections the forecasts left behind (the 60 s alert pass and any API
read), never from storage during a scrape. A series exists only while its metric has a
projection: a ceiling and a rising line (0 once the ceiling is reached).
"""

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from svc_monitor.connections.models import Connection
from svc_monitor.forecast.service import ForecastService
from svc_monitor.prometheus.catalogue import METRIC_FORECAST_TIME_TO_LIMIT as FAMILY

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric


class ForecastCollector:
    """A prometheus_client collector over ForecastService.projections."""

    def __init__(
        self, forecasts: ForecastService, connections: Callable[[], Sequence[Connection]]
    ) -> None:
        self._forecasts = forecasts
        self._connections = connections

    def collect(self) -> Iterator["Metric"]:
        from prometheus_client.core import GaugeMetricFamily

        projections = self._forecasts.projections
        if not projections:
            return
        family = GaugeMetricFamily(FAMILY.name, FAMILY.help, labels=["connection", *FAMILY.labels])
        for connection in self._connections():
            address = f"{connection.host}:{connection.port}"
            for (connection_id, kind), seconds in sorted(projections.items()):
                if connection_id == connection.id:
                    family.add_metric([address, kind], seconds)
        if family.samples:
            yield family
