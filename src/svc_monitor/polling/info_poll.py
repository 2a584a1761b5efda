"""One INFO pass: read INFO raw, parse it once, hand it to the pipe; and carry the INFO
sections other polls would read by a command of their own (polling/info_rides.py)."""

import logging
import time

from svc_monitor.config import Settings
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.events import now_ms
from svc_monitor.pipe.observation import Observation
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.info_rides import COMMANDSTATS, InfoRider, InfoRides
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues

logger = logging.getLogger(__name__)


class InfoPoller:
    """Reads INFO (default sections) and feeds the pipe; its failures decide up/down."""

    def __init__(
        self, connections: ConnectionService, pipe: Pipe, rides: InfoRides | None = None
    ) -> None:
        self._connections = connections
        self._pipe = pipe
        self._rides = rides if rides is not None else InfoRides(())

    async def poll(self, target: PollTarget) -> None:
        if target.identity is None:
            # Detect once per up transition: type, version and capabilities gate other polls.
            await self._connections.check(target.connection)
        riders = self._rides.due(target)
        started = time.perf_counter()
        try:
            info = await self._read(target, riders)
        except EngineError as exc:
            # Forget the identity: the instance may come back upgraded or replaced.
            self._connections.mark_down(target.connection, exc)
            raise
        # The observation is what a plain INFO gives; the riders' section goes to them.
        section = info.take(COMMANDSTATS) if riders else None
        await self._pipe.observe(
            Observation(
                connection_id=target.connection.id,
                received_at_ms=now_ms(),
                info=info,
                round_trip_ms=(time.perf_counter() - started) * 1000,
            )
        )
        if section is not None:
            await self._hand_over(target, riders, section)

    async def _read(self, target: PollTarget, riders: list[InfoRider]) -> ParsedInfo:
        if riders:
            try:
                info = await target.client.info("default", COMMANDSTATS)
            except EngineResponseError as exc:
                self._rides.refused(target.connection.id, exc.message)
            else:
                if COMMANDSTATS in info.sections:
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

    def kind(self) -> PollKind:
        return PollKind(
            name="info",
            interval_ms=_info_interval,
            poll=self.poll,
            decides_health=True,
            forget=self.forget,
        )


def _info_interval(values: RuntimeSettingsValues, _: Settings) -> int:
    # INFO sampling follows the anomaly interval (default 1 s): the INFO poll is what anomaly
    # detection samples (docs/features/polling-and-history.md).
    return values.anomalyPollIntervalMs
