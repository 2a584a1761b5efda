"""A cluster's other primaries' slow logs, stored under each node's host:port: the slow-log
poll reads the seed (polling/log_polls.py), this poll the rest, at the same interval, so
the stored slow log covers the whole cluster (the vector search latency figures read it,
docs/features/vector-search.md#search-latency). The connection's own slow-log facts and
families stay the seed's, as the slow-log poll gives them."""

import logging

from svc_monitor.cluster.service import ClusterService
from svc_monitor.config import Settings
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.engine.slowlog import FETCH_COUNT, parse_log_reply
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues
from svc_monitor.slowlog.service import SlowlogService

logger = logging.getLogger(__name__)


class ClusterSlowlogPoller:
    """SLOWLOG LEN, then GET where not empty, of every primary but the seed."""

    def __init__(self, clusters: ClusterService, slowlog: SlowlogService) -> None:
        self._clusters = clusters
        self._slowlog = slowlog
        # (connection, node) pairs that refused SLOWLOG: not asked again until forgotten,
        # since each NOPERM would add an entry to the ACL log we audit.
        self._refused: set[tuple[str, str]] = set()

    async def poll(self, target: PollTarget) -> None:
        connection_id = target.connection.id
        nodes = await self._clusters.primary_clients(target.connection, target.client)
        for address, client in nodes:
            if client is target.client or (connection_id, address) in self._refused:
                continue
            (length,) = await client.try_each([["SLOWLOG", "LEN"]])
            if isinstance(length, EngineError) or length == 0:
                self._note(connection_id, address, length)
                continue
            (reply,) = await client.try_each([["SLOWLOG", "GET", FETCH_COUNT]])
            if isinstance(reply, EngineError):
                self._note(connection_id, address, reply)
                continue
            await self._slowlog.record(
                connection_id, node=address, log_type=None, entries=parse_log_reply(reply)
            )

    def _note(self, connection_id: str, address: str, reply: object) -> None:
        if isinstance(reply, EngineResponseError):
            logger.debug("SLOWLOG refused on %s (%s): %s", address, connection_id, reply.message)
            self._refused.add((connection_id, address))
        # Any other failure is the node being away: the cluster poll shows it.

    async def forget(self, connection_id: str) -> None:
        self._refused = {k for k in self._refused if k[0] != connection_id}

    def kind(self) -> PollKind:
        return PollKind(
            name="cluster_slowlog",
            interval_ms=_interval,
            poll=self.poll,
            applies=_applies,
            forget=self.forget,
        )


def _applies(target: PollTarget) -> bool:
    identity = target.identity
    return identity is not None and identity.cluster_enabled and identity.capabilities.has_slow_log


def _interval(_: RuntimeSettingsValues, settings: Settings) -> int:
    return settings.SLOWLOG_POLL_INTERVAL_MS
