"""The latest Observation of every connection: what is true now, for live views,
Prometheus at scrape time and detectors. Kept in memory only."""

from svc_monitor.polling.models import Observation


class LiveState:
    """Latest observation per connection (and per cluster node)."""

    def __init__(self) -> None:
        self._latest: dict[tuple[str, str | None], Observation] = {}
        # One observation back: rates such as CPU use need two readings.
        self._previous: dict[tuple[str, str | None], Observation] = {}

    def update(self, observation: Observation) -> None:
        key = (observation.connection_id, observation.node)
        if key in self._latest:
            self._previous[key] = self._latest[key]
        self._latest[key] = observation

    def latest(self, connection_id: str, node: str | None = None) -> Observation | None:
        return self._latest.get((connection_id, node))

    def previous(self, connection_id: str, node: str | None = None) -> Observation | None:
        return self._previous.get((connection_id, node))

    def forget(self, connection_id: str) -> None:
        for key in [k for k in self._latest if k[0] == connection_id]:
            del self._latest[key]
            self._previous.pop(key, None)
