"""The latest Observation of every connection: what is true now, for live views,
Prometheus at scrape time and detectors. Kept in memory only.

Written only by the pipe, whose first consumer it is (`observe`, `observe_facts`,
`forget`, and `judged` once every consumer has read an observation); everything else
reads it as a `LiveView` (pipe/live_view.py)."""

import logging
from typing import TypeVar

from svc_monitor.pipe.facts import Facts
from svc_monitor.pipe.live_view import CpuReading, cpu_reading
from svc_monitor.pipe.observation import Observation
from svc_monitor.pipe.poll_counts import PollCounts

F = TypeVar("F", bound=Facts)
logger = logging.getLogger(__name__)


class LiveState:
    """Latest observation per connection (and per cluster node), and the latest facts
    of the other polls (pipe/facts.py)."""

    def __init__(self) -> None:
        self._latest: dict[tuple[str, str | None], Observation] = {}
        # One reading back: CPU use is a rate between two. Only the reading is kept, not
        # the observation, which would hold a second INFO reply per connection.
        self._previous: dict[tuple[str, str | None], CpuReading] = {}
        self._facts: dict[tuple[str, type], Facts] = {}
        # Each connection's cluster nodes, so a scrape finds them without walking every key.
        self._nodes: dict[str, dict[str, None]] = {}
        self.polls = PollCounts()
        self._rejected_logged: dict[str, frozenset[tuple[str, str]]] = {}

    def observe(self, observation: Observation) -> None:
        """As the pipe's first observation consumer."""
        key = (observation.connection_id, observation.node)
        latest = self._latest.get(key)
        if latest is not None:
            self._previous[key] = cpu_reading(latest)
        elif observation.node:
            self._nodes.setdefault(observation.connection_id, {})[observation.node] = None
        self._latest[key] = observation

    def judged(self, observation: Observation) -> None:
        """After every consumer has read the observation: count the fields they found
        holding a number nothing can keep, and say which in the log, once per change."""
        rejected = observation.info.rejected
        if not rejected:
            return
        connection_id = observation.connection_id
        self.polls.record_rejected(connection_id, len(rejected))
        fields = frozenset(rejected)
        if self._rejected_logged.get(connection_id) != fields:
            self._rejected_logged[connection_id] = fields
            logger.warning(
                "connection %s: INFO values out of range or not numbers, left out: %s",
                connection_id,
                ", ".join(f"{s}.{f}" for s, f in sorted(fields)),
            )

    def observe_facts(self, connection_id: str, facts: Facts) -> None:
        """As the pipe's first facts consumer: the latest of each kind, replaced whole."""
        self._facts[(connection_id, type(facts))] = facts

    def latest(self, connection_id: str, node: str | None = None) -> Observation | None:
        return self._latest.get((connection_id, node))

    def previous(self, connection_id: str, node: str | None = None) -> CpuReading | None:
        return self._previous.get((connection_id, node))

    def nodes(self, connection_id: str) -> list[Observation]:
        """The latest observation of every other node of a cluster connection."""
        return [self._latest[(connection_id, n)] for n in self._nodes.get(connection_id, ())]

    def facts(self, connection_id: str, kind: type[F]) -> F | None:
        found = self._facts.get((connection_id, kind))
        return found if isinstance(found, kind) else None

    def forget(self, connection_id: str) -> None:
        """As a consumer of the pipe: the connection stopped being watched, or its pushes
        went stale (otlp/ingest/receiver.py)."""
        for key in [k for k in self._latest if k[0] == connection_id]:
            del self._latest[key]
            self._previous.pop(key, None)
        self._nodes.pop(connection_id, None)
        for fact_key in [k for k in self._facts if k[0] == connection_id]:
            del self._facts[fact_key]
        self.polls.forget(connection_id)
        self._rejected_logged.pop(connection_id, None)
