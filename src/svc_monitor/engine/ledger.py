"""What the monitor asks of one server: calls, time and errors per command.

A monitor that loads the servers it watches is part of the problem. Every command
the EngineClient sends is counted here, so the load we put on our users' servers is
visible (GET /api/metrics/monitor-load) and can be kept small.
"""

import time
from dataclasses import dataclass

# Container commands are counted with their subcommand: CLIENT LIST costs more than CLIENT ID.
_CONTAINERS = frozenset(
    {"ACL", "CLIENT", "CLUSTER", "COMMANDLOG", "CONFIG", "LATENCY", "MEMORY", "SLOWLOG", "OBJECT"}
)


@dataclass(slots=True)
class CommandCost:
    calls: int = 0
    seconds: float = 0.0
    errors: int = 0


def command_name(args: tuple[object, ...] | list[object]) -> str:
    if not args:
        return "?"
    name = _text(args[0]).upper()
    if name in _CONTAINERS and len(args) > 1:
        return f"{name} {_text(args[1]).upper()}"
    return name


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class CommandLedger:
    """Counts per command name since `since_ms`."""

    def __init__(self) -> None:
        self.since_ms = int(time.time() * 1000)
        self._costs: dict[str, CommandCost] = {}

    def record(self, name: str, seconds: float, *, failed: bool = False) -> None:
        cost = self._costs.get(name)
        if cost is None:
            cost = self._costs[name] = CommandCost()
        cost.calls += 1
        cost.seconds += seconds
        cost.errors += failed

    def costs(self) -> dict[str, CommandCost]:
        return {name: CommandCost(c.calls, c.seconds, c.errors) for name, c in self._costs.items()}
