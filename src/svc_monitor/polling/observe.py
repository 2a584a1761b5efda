"""observe(): the one entry of the pipe. Every Observation, polled or (later) pushed,
goes through here to live state and history, so a feature written once serves both."""

from svc_monitor.metrics.service import MetricsService
from svc_monitor.polling.live_state import LiveState
from svc_monitor.polling.models import Observation


class Observer:
    """Hands each Observation to its consumers."""

    def __init__(self, live: LiveState, metrics: MetricsService) -> None:
        self._live = live
        self._metrics = metrics

    async def observe(self, observation: Observation) -> None:
        self._live.update(observation)
        await self._metrics.record(observation)
