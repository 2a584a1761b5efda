"""LatencyReading from two INFO commandstats reads: the mean time per call between them.

latency_ms = (sum of `usec` over every command, now - before)
             / (sum of `calls` over every command, now - before) / 1000

The monitor's own reads (INFO, SLOWLOG GET ...) count too: they are calls the server
served, and on an idle instance they are most of them. No reading for the first read
of a connection (nothing to compare), when no call happened in between, or when the
totals went down (restart, CONFIG RESETSTAT): that read is the new starting point.
The automatic baseline of the readings is detection/baseline.py.
"""

from dataclasses import dataclass

from svc_monitor.detection.baseline import SpikeBaseline
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.event_types.readings import LatencyReading
from svc_monitor.events import EventBus
from svc_monitor.pipe.facts import CommandstatsFacts, Facts

# The smallest rise in mean latency that counts as a spike however steady it is: a few
# microseconds per call is normal (GET is ~1-2 us server side), so 50 % above normal is
# noise, while a whole millisecond per call on average is something users feel.
LATENCY_MINIMUM_RISE_MS = 1.0

_PREFIX = "cmdstat_"


@dataclass(frozen=True, slots=True)
class _Totals:
    calls: int
    usec: int


class LatencyDetector:
    """Publishes the mean command latency of each commandstats interval."""

    def __init__(self, bus: EventBus) -> None:
        self._bus = bus
        self._totals: dict[str, _Totals] = {}
        self._baselines: dict[str, SpikeBaseline] = {}

    def observe_facts(self, connection_id: str, facts: Facts) -> None:
        """As a facts consumer of the pipe: INFO commandstats, polled or pushed."""
        if isinstance(facts, CommandstatsFacts):
            self.record(connection_id, facts.info, at_ms=facts.at_ms)

    def record(self, connection_id: str, info: ParsedInfo, *, at_ms: int) -> None:
        totals = _totals(info)
        if totals is None:
            return
        previous = self._totals.get(connection_id)
        self._totals[connection_id] = totals
        if previous is None:
            return
        calls = totals.calls - previous.calls
        usec = totals.usec - previous.usec
        if calls <= 0 or usec < 0:
            return
        latency_ms = usec / calls / 1000
        history = self._baselines.get(connection_id)
        if history is None:
            history = self._baselines[connection_id] = SpikeBaseline(
                minimum_rise=LATENCY_MINIMUM_RISE_MS
            )
        baseline = history.judge(latency_ms)
        self._bus.publish(
            LatencyReading(
                connection_id=connection_id,
                at_ms=at_ms,
                latency_ms=latency_ms,
                baseline_ms=baseline.mean if baseline else None,
                spike_level_ms=baseline.spike_level if baseline else None,
            )
        )

    def forget(self, connection_id: str) -> None:
        self._totals.pop(connection_id, None)
        self._baselines.pop(connection_id, None)


def _totals(info: ParsedInfo) -> _Totals | None:
    """Calls and usec summed over every command; None without a commandstats section."""
    section = info.sections.get("commandstats")
    if section is None:
        return None
    calls = usec = 0
    for name, value in section.items():
        if not name.startswith(_PREFIX) or not isinstance(value, dict):
            continue
        command_calls, command_usec = value.get("calls"), value.get("usec")
        if isinstance(command_calls, int) and isinstance(command_usec, int):
            calls += command_calls
            usec += command_usec
    return _Totals(calls, usec)
