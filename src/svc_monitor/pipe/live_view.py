"""What everything outside the pipe may do with live state: read it.

Live state (pipe/live_state.py) is written only by the pipe, as its first consumer, so
what a live view or a scrape shows is what every consumer was handed, no more. Its readers
(the live views, Prometheus, the pressure rule, the polls that look at the last INFO) hold
it as a `LiveView`, which has no writer; an import contract in pyproject.toml keeps
`pipe.live_state` itself to the pipe and the composition roots
(docs/architecture.md#the-pipe).
"""

from dataclasses import dataclass
from typing import Protocol, TypeVar

from svc_monitor.pipe.facts import Facts
from svc_monitor.pipe.observation import Observation
from svc_monitor.pipe.poll_counts import PollCounts

F = TypeVar("F", bound=Facts)


@dataclass(frozen=True, slots=True)
class CpuReading:
    """What a rate of CPU use needs of an observation: when it was taken, and the
    server's CPU seconds (system + user) then."""

    at_ms: int
    cpu_s: float | None


def cpu_reading(observation: Observation) -> CpuReading:
    info = observation.info
    sys_s, user_s = info.get_float("cpu", "used_cpu_sys"), info.get_float("cpu", "used_cpu_user")
    cpu_s = None if sys_s is None or user_s is None else sys_s + user_s
    return CpuReading(observation.received_at_ms, cpu_s)


class LiveView(Protocol):
    """The latest observation per connection (and per cluster node), the reading before
    it, the latest facts of each kind, and the poll supervisor's counts."""

    @property
    def polls(self) -> PollCounts: ...

    def latest(self, connection_id: str, node: str | None = None) -> Observation | None: ...

    def previous(self, connection_id: str, node: str | None = None) -> CpuReading | None: ...

    def nodes(self, connection_id: str) -> list[Observation]:
        """The latest observation of every other node of a cluster connection."""
        ...

    def facts(self, connection_id: str, kind: type[F]) -> F | None: ...
