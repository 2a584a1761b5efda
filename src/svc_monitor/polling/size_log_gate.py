"""Whether COMMANDLOG's size logs can have a new entry, from counters INFO already read.

The server keeps a large-request entry only for a command whose request was at least
`commandlog-request-larger-than` bytes, and a large-reply entry only for a reply of at least
`commandlog-reply-larger-than` bytes; every byte it reads and writes is counted in INFO's
`total_net_input_bytes` and `total_net_output_bytes`. While a counter grew by less than its
threshold since a log was last asked, that log cannot have a new entry, so the commandlog
pass leaves its LEN (and GET) out: on a quiet server, which is most of a fleet, both logs
rest between the replies of our own INFO polls (6 KB a second against 1 MiB).

The log is asked anyway:
- when the threshold is not known (the config watch has no CONFIG GET snapshot: CONFIG
  renamed or denied, or not read yet) or the counters are missing (an engine without them);
- when the server restarted (its run_id changed) or a counter went down;
- after a reset through our API (an emptied log is not a grown one);
- at least every MAX_REST_S, which bounds what the counters cannot see: a reset by another
  client, a request that had partly arrived when the log was last asked, a threshold lowered
  since the config watch last read it.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

from svc_monitor.engine.reply_values import integer
from svc_monitor.engine.slowlog import LogType
from svc_monitor.pipe.live_view import LiveView

MAX_REST_S = 60.0

# The threshold parameter and the INFO counter (section stats) behind each size log.
_GROUNDS: dict[LogType, tuple[str, str]] = {
    "large-request": ("commandlog-request-larger-than", "total_net_input_bytes"),
    "large-reply": ("commandlog-reply-larger-than", "total_net_output_bytes"),
}


@dataclass(frozen=True, slots=True)
class _Asked:
    """A log's counter as INFO read it before the log was last asked."""

    at: float  # monotonic
    run_id: str | None
    counter: int
    resets: int


class SizeLogGate:
    """Remembers, per connection and size log, the counter when the log was last asked."""

    def __init__(
        self,
        live_state: LiveView,
        *,
        parameter: Callable[[str, str], str | None],
        resets: Callable[[str], int],
    ) -> None:
        self._live_state = live_state
        self._parameter = parameter  # (connection, name) -> its value from the config watch
        self._resets = resets  # connection -> how many resets our API has made of its logs
        self._asked: dict[tuple[str, LogType], _Asked] = {}

    def may_have_grown(self, connection_id: str, log_type: LogType) -> bool:
        grounds = _GROUNDS.get(log_type)
        asked = self._asked.get((connection_id, log_type))
        if grounds is None or asked is None:
            return True
        now = self._counter(connection_id, grounds[1])
        threshold = integer(self._parameter(connection_id, grounds[0]))
        if now is None or threshold is None or threshold < 0:
            # Unknown, or the log is off (-1): asking tells whether it still holds entries.
            return True
        run_id, counter = now
        return (
            time.monotonic() - asked.at >= MAX_REST_S
            or run_id != asked.run_id
            or self._resets(connection_id) != asked.resets
            or not 0 <= counter - asked.counter < threshold
        )

    def asking(self, connection_id: str, log_type: LogType) -> None:
        """Called before a log's LEN is sent: the counter INFO read last, which is older
        than the LEN's answer, so nothing the answer saw is counted as seen."""
        grounds = _GROUNDS.get(log_type)
        if grounds is None:
            return
        now = self._counter(connection_id, grounds[1])
        if now is None:
            self._asked.pop((connection_id, log_type), None)
            return
        self._asked[(connection_id, log_type)] = _Asked(
            time.monotonic(), now[0], now[1], self._resets(connection_id)
        )

    def forget_log(self, connection_id: str, log_type: LogType) -> None:
        """The log's LEN or GET failed: ask it again on the next pass."""
        self._asked.pop((connection_id, log_type), None)

    def forget(self, connection_id: str) -> None:
        for key in [k for k in self._asked if k[0] == connection_id]:
            del self._asked[key]

    def _counter(self, connection_id: str, field: str) -> tuple[str | None, int] | None:
        observation = self._live_state.latest(connection_id)
        if observation is None:
            return None
        counter = observation.info.get_int("stats", field)
        if counter is None:
            return None
        return observation.info.get_str("server", "run_id"), counter
