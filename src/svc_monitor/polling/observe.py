"""observe(): the one entry of the pipe. Every Observation, polled or (later) pushed,
goes through here to live state and history, so a feature written once serves both."""

from collections.abc import Callable

from svc_monitor.detectors.readings import ReadingsDetector
from svc_monitor.info_history.service import MetricsService
from svc_monitor.pipe.live_state import LiveState
from svc_monitor.polling.models import Observation


class Observer:
    """Hands each Observation to its consumers."""

    def __init__(
        self,
        live: LiveState,
        metrics: MetricsService,
        *,
        readings: ReadingsDetector | None = None,
    ) -> None:
        self._live = live
        self._metrics = metrics
        self._readings = readings
        # Detectors added with the features (the CVE scanner's version watch): synchronous
        # and cheap, they run on every observation.
        self.watchers: list[Callable[[Observation], None]] = []

    async def observe(self, observation: Observation) -> None:
        self._live.update(observation)
        if self._readings is not None:
            self._readings.observe(observation)
        for watch in self.watchers:
            watch(observation)
        await self._metrics.record(observation)

    async def forget(self, connection_id: str) -> None:
        """The connection stopped being polled (removed or edited): drop its readings'
        state, so an edit that points it at another server starts a fresh baseline."""
        if self._readings is not None:
            self._readings.forget(connection_id)
