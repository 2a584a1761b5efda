"""One INFO pass: read INFO raw, parse it once, hand it to the pipe."""

import time

from svc_monitor.config import Settings
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.errors import EngineError
from svc_monitor.events import now_ms
from svc_monitor.pipe.observation import Observation
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues


class InfoPoller:
    """Reads INFO (default sections) and feeds the pipe; its failures decide up/down."""

    def __init__(self, connections: ConnectionService, pipe: Pipe) -> None:
        self._connections = connections
        self._pipe = pipe

    async def poll(self, target: PollTarget) -> None:
        if target.identity is None:
            # Detect once per up transition: type, version and capabilities gate other polls.
            await self._connections.check(target.connection)
        started = time.perf_counter()
        try:
            info = await target.client.info()
        except EngineError as exc:
            # Forget the identity: the instance may come back upgraded or replaced.
            self._connections.mark_down(target.connection, exc)
            raise
        await self._pipe.observe(
            Observation(
                connection_id=target.connection.id,
                received_at_ms=now_ms(),
                info=info,
                round_trip_ms=(time.perf_counter() - started) * 1000,
            )
        )

    def kind(self) -> PollKind:
        return PollKind(
            name="info", interval_ms=_info_interval, poll=self.poll, decides_health=True
        )


def _info_interval(values: RuntimeSettingsValues, _: Settings) -> int:
    # The spec ties INFO sampling to the anomaly interval (default 1 s).
    return values.anomalyPollIntervalMs
