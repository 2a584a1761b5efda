"""INFO sections read along with the INFO poll instead of by a command of their own.

The commandstats poll (every COMMANDSTATS_POLL_INTERVAL_MS) and the config watch (every
CONFIG_WATCH_INTERVAL_MS) each sent `INFO commandstats`: ten commands a minute per server
at the defaults. On an engine that takes several sections in one INFO (Valkey, Redis 7+),
the INFO poll asks `INFO default commandstats` on a pass when either is due, hands the
commandstats section to whoever is due and keeps the rest as its observation, so the
observation is the same as a plain INFO. Each rider keeps its own cadence to within half
an INFO interval; a rider whose INFO poll runs too seldom for that (or cannot ride: Redis
6.2, a server that refused the combined read) is not carried, and its own poll kind reads
as before.
"""

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from svc_monitor.engine.capabilities import EngineIdentity
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.polling.models import PollTarget

logger = logging.getLogger(__name__)

# The section riders take: every reader that read its own INFO section read this one.
COMMANDSTATS = "commandstats"
# A rider's own poll, resting while INFO carries it, looks again every half interval: when
# the carrying stops (INFO slowed down or failing), its own reads resume within two
# intervals of the last carried one, not after the idle loop's long recheck (a reading
# that late would also span, and dilute, everything in between).
RECHECK_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class InfoRider:
    """One reader of INFO commandstats that rides on the INFO poll when it can.

    `take` gets the section (a ParsedInfo holding only it) and the time it was read; it
    runs inside the INFO pass, so an error it raises is logged, never the INFO poll's.
    """

    name: str  # the poll kind that would read it otherwise
    interval_s: Callable[[], float]
    take: Callable[[PollTarget, ParsedInfo, int], Awaitable[None]]


class InfoRides:
    """Which riders are due on an INFO pass, and whether a rider's own poll may rest."""

    def __init__(self, riders: Sequence[InfoRider]) -> None:
        self.riders = tuple(riders)
        self._carried: dict[tuple[str, str], float] = {}  # (connection, rider) -> monotonic
        self._last_info: dict[str, float] = {}  # connection -> monotonic, last INFO pass
        self._refused: set[str] = set()  # connections whose server refused the combined read

    def due(self, target: PollTarget) -> list[InfoRider]:
        """The riders to carry on this INFO pass of `target`'s connection."""
        connection_id = target.connection.id
        now = time.monotonic()
        last_info = self._last_info.get(connection_id)
        self._last_info[connection_id] = now
        if last_info is None or not self.can_ride(target):
            return []
        # Carried on the pass nearest its due time: at most half an INFO gap early.
        slack = (now - last_info) / 2
        due = []
        for rider in self.riders:
            interval = rider.interval_s()
            if now - last_info > interval / 2:
                continue  # INFO runs too seldom to keep this rider's cadence
            carried = self._carried.get((connection_id, rider.name))
            if carried is None or now - carried + slack >= interval:
                due.append(rider)
        return due

    def carried(self, target: PollTarget, rider: str) -> bool:
        """Whether the INFO poll carries `rider` on this connection now: its own poll then
        has nothing to do. A rider not carried for one and a half intervals (INFO slowed
        down, or failing) is read by its own poll again."""
        at = self._carried.get((target.connection.id, rider))
        if at is None or not self.can_ride(target):
            return False
        interval = next(r.interval_s() for r in self.riders if r.name == rider)
        return time.monotonic() - at < interval * 1.5

    def mark(self, connection_id: str, riders: Sequence[InfoRider]) -> None:
        now = time.monotonic()
        for rider in riders:
            self._carried[(connection_id, rider.name)] = now

    def refused(self, connection_id: str, why: str) -> None:
        if connection_id not in self._refused:
            logger.debug(
                "%s: INFO with several sections refused (%s); not asked again", connection_id, why
            )
        self._refused.add(connection_id)

    def can_ride(self, target: PollTarget) -> bool:
        identity = target.identity
        return (
            identity is not None
            and takes_several_sections(identity)
            and target.connection.id not in self._refused
        )

    def forget(self, connection_id: str) -> None:
        for key in [k for k in self._carried if k[0] == connection_id]:
            del self._carried[key]
        self._last_info.pop(connection_id, None)
        self._refused.discard(connection_id)


def takes_several_sections(identity: EngineIdentity) -> bool:
    # `INFO default commandstats` came with Redis 7.0; every Valkey has it (forked from 7.2).
    return identity.type == "valkey" or identity.release() >= (7, 0, 0)
