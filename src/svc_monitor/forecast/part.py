"""The forecast domain's part: capacity forecasts, their limit alerts and gauge."""

from svc_monitor.forecast.api import router
from svc_monitor.forecast.service import ForecastService
from svc_monitor.forecast.store import ForecastStore
from svc_monitor.parts import Part, Registry, Task, Watched
from svc_monitor.prometheus.families.forecast import ForecastCollector
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    s = registry.get(Services)
    forecast = registry.add(
        ForecastService,
        ForecastService(ForecastStore(s.db), s.info_history, s.connections, s.settings, s.bus),
    )
    return Part(
        name="forecast",
        routers=(router,),
        # metric_forecast.limit alerts and the forecast gauge's projections, every 60 s
        tasks=(Task("forecast-alerts", forecast.run),),
        collectors=lambda: [ForecastCollector(forecast, registry.get(Watched).all)],
    )
