"""One INFO pass: read INFO raw, parse it once, hand it to the pipe; and carry the INFO
sections other polls would read by a command of their own (polling/info_rides.py).

A pass reads either the full default INFO or, in between full reads, only the sections
judged each second, carrying the rest on from the last full read (polling/info_cadence.py).
"""

import logging
import time
from dataclasses import dataclass

from svc_monitor.config import Settings
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.engine.info import CarriedSections, ParsedInfo
from svc_monitor.events import now_ms
from svc_monitor.pipe.observation import Observation
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.info_cadence import (
    DEFAULT_FULL_INFO_INTERVAL_MS,
    EVERY_PASS,
    carried_from,
)
from svc_monitor.polling.info_rides import COMMANDSTATS, InfoRider, InfoRides
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _FullRead:
    """A connection's last full INFO read: what the slim reads after it carry on."""

    at: float  # time.monotonic()
    carried: CarriedSections
    # The client's count of INFO connections opened, as of that read: a new connection
    # may mean a restarted server, whose version and run id the next pass reads afresh.
    connects: int


class InfoPoller:
    """Reads INFO (default sections) and feeds the pipe; its failures decide up/down."""

    def __init__(
        self, connections: ConnectionService, pipe: Pipe, rides: InfoRides | None = None
    ) -> None:
        self._connections = connections
        self._pipe = pipe
        self._rides = rides if rides is not None else InfoRides(())
        self._full: dict[str, _FullRead] = {}

    async def poll(self, target: PollTarget) -> None:
        if target.identity is None:
            # Detect once per up transition: type, version and capabilities gate other polls.
            await self._connections.check(target.connection)
        riders = self._rides.due(target)
        last = self._full_read(target)
        started = time.perf_counter()
        try:
            info = await self._read(target, riders, last)
        except EngineError as exc:
            # Forget the identity: the instance may come back upgraded or replaced.
            self._connections.mark_down(target.connection, exc)
            raise
        received_at = now_ms()
        # The observation is what a plain INFO gives; the riders' section goes to them.
        section = info.take(COMMANDSTATS) if riders else None
        if last is None or info.carried is None:
            last = None
            self._full[target.connection.id] = _FullRead(
                time.monotonic(), carried_from(info, received_at), target.client.info_connects
            )
        await self._pipe.observe(
            Observation(
                connection_id=target.connection.id,
                received_at_ms=received_at,
                info=info,
                round_trip_ms=(time.perf_counter() - started) * 1000,
            )
        )
        if section is not None:
            await self._hand_over(target, riders, section)

    def _full_read(self, target: PollTarget) -> _FullRead | None:
        """The full read this pass may carry on from; None when this pass reads it all."""
        last = self._full.get(target.connection.id)
        if last is None or not self._rides.can_ride(target):
            return None  # Redis 6.2 takes one section per INFO: it reads the full one
        values = target.values
        full_ms = values.fullInfoIntervalMs if values else DEFAULT_FULL_INFO_INTERVAL_MS
        if not full_ms or last.connects != target.client.info_connects:
            return None
        # The full read goes on the pass nearest its due time: at most half a pass early.
        pass_ms = values.anomalyPollIntervalMs if values else 1000
        if (time.monotonic() - last.at) * 1000 >= full_ms - pass_ms / 2:
            return None
        return last

    async def _read(
        self, target: PollTarget, riders: list[InfoRider], last: _FullRead | None
    ) -> ParsedInfo:
        """INFO as this pass reads it: the sections of EVERY_PASS carrying on from `last`,
        or, without `last`, the full default INFO; with the riders' section when any."""
        sections = ("default",) if last is None else EVERY_PASS
        if riders or last is not None:
            try:
                info = await target.client.info(*sections, *([COMMANDSTATS] if riders else []))
            except EngineResponseError as exc:
                # A server (or proxy) that refuses several sections: plain INFO from now on.
                self._rides.refused(target.connection.id, exc.message)
            else:
                if not riders or COMMANDSTATS in info.sections:
                    if last is not None:
                        info.carry(last.carried)
                    return info
                self._rides.refused(target.connection.id, "no commandstats section")
            riders.clear()
        return await target.client.info()

    async def _hand_over(
        self, target: PollTarget, riders: list[InfoRider], section: ParsedInfo
    ) -> None:
        self._rides.mark(target.connection.id, riders)
        at = now_ms()
        for rider in riders:
            try:
                await rider.take(target, section, at)
            except EngineError as exc:
                # The rider's failure, not the INFO poll's: the instance answered INFO.
                logger.debug(
                    "%s: %s with INFO failed: %s", target.connection.id, rider.name, exc.message
                )

    async def forget(self, connection_id: str) -> None:
        self._rides.forget(connection_id)
        self._full.pop(connection_id, None)

    def kind(self) -> PollKind:
        return PollKind(
            name="info",
            interval_ms=_info_interval,
            poll=self.poll,
            decides_health=True,
            forget=self.forget,
            takes_turns=False,  # over the client's INFO connection
        )


def _info_interval(values: RuntimeSettingsValues, _: Settings) -> int:
    # INFO sampling follows the anomaly interval (default 1 s): the INFO poll is what anomaly
    # detection samples (docs/features/polling-and-history.md).
    return values.anomalyPollIntervalMs
