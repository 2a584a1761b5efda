"""One CLIENT LIST pass: a snapshot row per client, all in one transaction.

Expensive-call rule: CLIENT LIST is skipped while the server is under pressure, by the
rule of pipe/pressure.py (CPU, our INFO round trip, client count, read from the last
INFO polls). Before the first INFO poll, a cheap `INFO clients` decides on the client
count alone. Entering and leaving that state is logged once each, at debug level. The
monitor's own connections (named `svc-monitor`) are not stored.

Each read also hands its counts to the pipe (ClientFacts) for Prometheus: every
client the server listed, the monitor's own included, so the total matches INFO's
connected_clients. A skipped pass leaves the previous counts (their at_ms tells).
"""

import logging
from collections import Counter

from svc_monitor.client_analytics.service import ClientAnalyticsService
from svc_monitor.config import Settings
from svc_monitor.engine.clients import ClientInfo, parse_client_list
from svc_monitor.events import now_ms
from svc_monitor.pipe.facts import ClientFacts
from svc_monitor.pipe.live_view import LiveView
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.pipe.pressure import MAX_CLIENTS, pressure_reason
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues

logger = logging.getLogger(__name__)


class ClientsPoller:
    """Feeds client analytics from CLIENT LIST every `clientAnalyticsPollIntervalMs`."""

    def __init__(
        self, analytics: ClientAnalyticsService, *, pipe: Pipe, live_state: LiveView
    ) -> None:
        self._analytics = analytics
        self._pipe = pipe
        self._live_state = live_state  # the last INFO reads, for the pressure rule
        self._skipping: set[str] = set()
        # The most clients one read listed, per connection, since the service started.
        self._peak: dict[str, int] = {}

    async def poll(self, target: PollTarget) -> None:
        if target.identity is None:
            return
        connection_id = target.connection.id
        reason = await self._pressure(target)
        if reason is not None:
            if connection_id not in self._skipping:
                self._skipping.add(connection_id)
                logger.debug("%s under pressure (%s): skipping CLIENT LIST", connection_id, reason)
            return
        if connection_id in self._skipping:
            self._skipping.discard(connection_id)
            logger.debug("%s no longer under pressure: CLIENT LIST resumes", connection_id)
        reply = await target.client.execute("CLIENT", "LIST")
        at = now_ms()
        clients = parse_client_list(reply)
        await self._pipe.put_facts(connection_id, self._client_facts(connection_id, clients, at))
        await self._analytics.record(connection_id, clients, at=at)

    def _client_facts(self, connection_id: str, clients: list[ClientInfo], at: int) -> ClientFacts:
        current = len(clients)
        peak = self._peak[connection_id] = max(current, self._peak.get(connection_id, 0))
        return ClientFacts(
            at_ms=at,
            current=current,
            peak=peak,
            by_name=dict(Counter(c.name or "unnamed" for c in clients)),
            # Every supported engine (Redis 6.0+, Valkey) lists user=; "unknown" is for junk.
            by_user=dict(Counter(c.user or "unknown" for c in clients)),
        )

    async def _pressure(self, target: PollTarget) -> str | None:
        connection_id = target.connection.id
        if self._live_state.latest(connection_id) is not None:
            return pressure_reason(self._live_state, connection_id)
        info = await target.client.info("clients")
        clients = info.get_int("clients", "connected_clients")
        return f"{clients} clients connected" if clients and clients > MAX_CLIENTS else None

    async def forget(self, connection_id: str) -> None:
        # Removed or edited (maybe to another server): the peak starts again.
        self._peak.pop(connection_id, None)
        self._skipping.discard(connection_id)

    def kind(self) -> PollKind:
        return PollKind(
            name="clients", interval_ms=_clients_interval, poll=self.poll, forget=self.forget
        )


def _clients_interval(values: RuntimeSettingsValues, _: Settings) -> int:
    return values.clientAnalyticsPollIntervalMs
