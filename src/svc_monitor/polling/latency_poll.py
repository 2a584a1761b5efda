"""One latency pass: LATENCY LATEST and, where the engine has it, LATENCY HISTOGRAM."""

import logging
from typing import Any

from svc_monitor.config import Settings
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.latency import parse_latency_histogram, parse_latency_latest
from svc_monitor.events import now_ms
from svc_monitor.latency_analytics.service import LatencyAnalyticsService
from svc_monitor.pipe.facts import LatencyFacts
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues

logger = logging.getLogger(__name__)


class LatencyPoller:
    """Reads the latency monitor into latency history and the pipe (for anomaly detection
    and Prometheus); skipped where the engine lacks it."""

    def __init__(self, latency: LatencyAnalyticsService, *, pipe: Pipe) -> None:
        self._latency = latency
        self._pipe = pipe

    async def poll(self, target: PollTarget) -> None:
        identity = target.identity
        if identity is None or not identity.capabilities.has_latency_monitor:
            return
        commands: list[list[Any]] = [["LATENCY", "LATEST"]]
        if identity.has_latency_histogram():
            commands.append(["LATENCY", "HISTOGRAM"])
        replies = await target.client.try_each(commands)
        latest, histogram = replies[0], replies[1] if len(replies) > 1 else None
        for reply in (latest, histogram):
            if isinstance(reply, EngineError):
                # A refused command (renamed, denied) degrades quietly; the rest still counts.
                logger.debug("%s: latency read refused: %s", target.connection.id, reply.message)
        captured_at = now_ms()
        events = [] if isinstance(latest, EngineError) else parse_latency_latest(latest)
        await self._latency.record(
            target.connection.id,
            captured_at=captured_at,
            events=events,
            histogram=None
            if histogram is None or isinstance(histogram, EngineError)
            else parse_latency_histogram(histogram),
        )
        if not isinstance(latest, EngineError):
            facts = LatencyFacts(captured_at, tuple(events))
            await self._pipe.put_facts(target.connection.id, facts)

    async def forget(self, connection_id: str) -> None:
        # Removed or edited: the next poll reads the last stored spike times again.
        self._latency.forget(connection_id)

    def kind(self) -> PollKind:
        return PollKind(name="latency", interval_ms=_interval, poll=self.poll, forget=self.forget)


def _interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.LATENCY_POLL_INTERVAL_MS
