"""One CLIENT LIST pass: a snapshot row per client, all in one transaction.

Expensive-call rule: CLIENT LIST costs the server time in proportion to its client
count and blocks it meanwhile, so the pass is skipped while the server reports more
than `MAX_CLIENTS_FOR_LIST` (5,000) connected clients. The count comes from the last
INFO the info poll observed (live state), or, before the first one, from a cheap
`INFO clients`. Entering and leaving that state is logged once each, at debug level.
The monitor's own connections (named `svc-monitor`) are not stored.
"""

import logging

from svc_monitor.client_analytics.service import ClientAnalyticsService
from svc_monitor.config import Settings
from svc_monitor.engine.clients import parse_client_list
from svc_monitor.events import now_ms
from svc_monitor.polling.live_state import LiveState
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues

logger = logging.getLogger(__name__)

MAX_CLIENTS_FOR_LIST = 5_000


class ClientsPoller:
    """Feeds client analytics from CLIENT LIST every `clientAnalyticsPollIntervalMs`."""

    def __init__(self, analytics: ClientAnalyticsService, live_state: LiveState) -> None:
        self._analytics = analytics
        self._live_state = live_state
        self._skipping: set[str] = set()

    async def poll(self, target: PollTarget) -> None:
        if target.identity is None:
            return
        connection_id = target.connection.id
        clients = await self._connected_clients(target)
        if clients is not None and clients > MAX_CLIENTS_FOR_LIST:
            if connection_id not in self._skipping:
                self._skipping.add(connection_id)
                logger.debug(
                    "%s has %d clients: skipping CLIENT LIST until it has at most %d",
                    connection_id,
                    clients,
                    MAX_CLIENTS_FOR_LIST,
                )
            return
        if connection_id in self._skipping:
            self._skipping.discard(connection_id)
            logger.debug("%s is back to %s clients: CLIENT LIST resumes", connection_id, clients)
        reply = await target.client.execute("CLIENT", "LIST")
        await self._analytics.record(connection_id, parse_client_list(reply), at=now_ms())

    async def _connected_clients(self, target: PollTarget) -> int | None:
        latest = self._live_state.latest(target.connection.id)
        info = latest.info if latest is not None else await target.client.info("clients")
        return info.get_int("clients", "connected_clients")

    def kind(self) -> PollKind:
        return PollKind(name="clients", interval_ms=_clients_interval, poll=self.poll)


def _clients_interval(values: RuntimeSettingsValues, _: Settings) -> int:
    return values.clientAnalyticsPollIntervalMs
