"""The Observation: what one INFO read (polled) or one push (OTLP) says of an instance."""

from dataclasses import dataclass

from svc_monitor.engine.info import ParsedInfo


@dataclass(frozen=True, slots=True)
class Observation:
    """INFO-shaped facts about one instance: `info.get(section, field)`, received at one time.

    Pushed instances (OTLP) fill only what was pushed; a missing field is absent,
    never 0.
    """

    connection_id: str
    received_at_ms: int
    info: ParsedInfo
    node: str | None = None  # host:port of a cluster node; None for the connection itself
    round_trip_ms: float | None = None  # how long the INFO took to answer, when polled
    pushed: bool = False  # from the OTLP receiver: only the fields a Collector sent

    def read_at_ms(self, section: str) -> int:
        """When `section` was read: with this observation, or by the full read it carries
        the section on from (docs/features/polling-and-history.md#info-cadence)."""
        carried = self.info.carried
        if carried is not None and section in carried.names:
            return carried.read_at_ms
        return self.received_at_ms
