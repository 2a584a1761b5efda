"""The latest Observation of every connection: what is true now, for live views,
Prometheus at scrape time and detectors. Kept in memory only."""

from svc_monitor.polling.models import Observation


class LiveState:
    """Latest observation per connection (and per cluster node)."""

    def __init__(self) -> None:
        self._latest: dict[tuple[str, str | None], Observation] = {}

    def update(self, observation: Observation) -> None:
        self._latest[(observation.connection_id, observation.node)] = observation

    def latest(self, connection_id: str, node: str | None = None) -> Observation | None:
        return self._latest.get((connection_id, node))

    def forget(self, connection_id: str) -> None:
        for key in [k for k in self._latest if k[0] == connection_id]:
            del self._latest[key]
