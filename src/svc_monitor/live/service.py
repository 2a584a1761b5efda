"""Live reads of one instance: latency, memory, role, config, keyspace size (the cluster
reads are ClusterService's, with the same rules).

Nothing here is stored; each call is one command to the engine. Engine failures never
become a 500 (`engine_call`): an error reply (the command is renamed, disabled, denied by
ACL or unknown to this version) is a 501 carrying the engine's words, and an unreachable or
hung instance is a 503. Cluster routes on a standalone server answer 409 (ClusterModeDisabled):
the request is fine, the server is in the wrong mode for it, which is a conflict with its
state rather than a missing feature.
"""

import datetime
from collections.abc import Callable
from typing import Any

from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.capabilities import EngineIdentity, unavailable_reason
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.engine.latency import (
    parse_latency_histogram,
    parse_latency_history,
    parse_latency_latest,
)
from svc_monitor.engine.reply_values import integer, pairs, text
from svc_monitor.errors import Conflict, NotFound, NotSupported, Unavailable
from svc_monitor.events import now_ms
from svc_monitor.live.schemas import (
    CommandHistogramRead,
    ConfigParameterRead,
    ConfigValues,
    LatencyEventRead,
    LatencyHistoryPoint,
    MemoryStatsRead,
    RoleRead,
    RoleReplicaRead,
    Scalar,
)
from svc_monitor.pipe.live_view import CpuReading, cpu_reading
from svc_monitor.pipe.observation import Observation

SLOT_STATS_UNSUPPORTED = "CLUSTER SLOT-STATS is not supported on this database version"
_CLUSTER_DISABLED_MARKER = "cluster support disabled"


class FeatureUnavailable(NotSupported):
    """The engine refused the command: renamed, disabled, denied, or too old for it."""


class EngineUnavailable(Unavailable):
    """The engine did not answer (down, unreachable, timed out, refused our credentials)."""


class ClusterModeDisabled(Conflict):
    """A cluster route was asked of a server that is not a cluster node."""

    def __init__(self) -> None:
        super().__init__(
            "Cluster mode is disabled on this server (cluster-enabled no); "
            "cluster routes need a connection to a cluster node"
        )


async def engine_call(client: EngineClient, *args: Any) -> Any:
    """Run one command, turning engine failures into 501/503/409 AppErrors (never a 500)."""
    try:
        return await client.execute(*args)
    except EngineResponseError as exc:
        if _CLUSTER_DISABLED_MARKER in exc.message.lower():
            raise ClusterModeDisabled() from None
        command = " ".join(str(a) for a in args[:2] if isinstance(a, str)).upper()
        raise FeatureUnavailable(
            f"{command} is not available on this server: {exc.message}"
        ) from None
    except EngineError as exc:
        raise EngineUnavailable(exc.message) from None


async def detected_identity(
    connections: ConnectionService, connection: Connection
) -> EngineIdentity:
    """What detection knows of the engine; detect now when it has not run yet."""
    seen = connections.last_seen(connection)
    if seen is None or seen.identity is None:
        seen = await connections.check(connection)
    if seen.identity is None:
        reason = seen.error.message if seen.error else "the engine has not been detected"
        raise EngineUnavailable(reason)
    return seen.identity


class LiveService:
    """Answers the live `/metrics/...` reads from the engine of one connection."""

    def __init__(self, connections: ConnectionService) -> None:
        self._connections = connections

    async def _call(self, connection: Connection, *args: Any) -> Any:
        return await engine_call(self._connections.client(connection), *args)

    async def _identity(self, connection: Connection) -> EngineIdentity:
        return await detected_identity(self._connections, connection)

    # --- latency ---

    async def latency_latest(self, connection: Connection) -> list[LatencyEventRead]:
        reply = await self._call(connection, "LATENCY", "LATEST")
        return [
            LatencyEventRead(
                eventName=e.name,
                timestamp=e.latest_at_s * 1000,
                latestMs=e.latest_ms,
                maxMs=e.max_ms,
            )
            for e in parse_latency_latest(reply)
        ]

    async def latency_history(
        self, connection: Connection, event: str
    ) -> list[LatencyHistoryPoint]:
        reply = await self._call(connection, "LATENCY", "HISTORY", event)
        return [
            LatencyHistoryPoint(timestamp=at * 1000, latencyMs=ms)
            for at, ms in parse_latency_history(reply)
        ]

    async def latency_histogram(
        self, connection: Connection, commands: list[str]
    ) -> dict[str, CommandHistogramRead]:
        reply = await self._call(connection, "LATENCY", "HISTOGRAM", *commands)
        return {
            name: CommandHistogramRead(calls=h.calls, histogram=h.histogram)
            for name, h in parse_latency_histogram(reply).items()
        }

    async def latency_doctor(self, connection: Connection) -> str:
        return text(await self._call(connection, "LATENCY", "DOCTOR"))

    async def reset_latency(self, connection: Connection, event: str | None) -> None:
        await self._call(connection, "LATENCY", "RESET", *([event] if event else []))

    # --- memory ---

    async def memory_stats(self, connection: Connection) -> MemoryStatsRead:
        reply = await self._call(connection, "MEMORY", "STATS")
        stats: dict[str, Scalar | dict[str, Scalar]] = {}
        for name, value in pairs(reply):
            if isinstance(value, list):
                stats[name] = {k: _scalar(v) for k, v in pairs(value)}
            else:
                stats[name] = _scalar(value)
        return MemoryStatsRead(stats)

    async def memory_doctor(self, connection: Connection) -> str:
        identity = await self._identity(connection)
        capabilities = identity.capabilities
        if not capabilities.has_memory_doctor:
            if capabilities.refusal("memory_doctor") is not None:  # refused, not too old
                raise FeatureUnavailable(unavailable_reason(capabilities, "memory_doctor"))
            raise FeatureUnavailable(
                "MEMORY DOCTOR is not available on this server (it needs Redis 4.0+ or Valkey, "
                "and the command must not be renamed or denied)"
            )
        return text(await self._call(connection, "MEMORY", "DOCTOR"))

    # --- replication and cluster ---

    async def role(self, connection: Connection) -> RoleRead:
        return _parse_role(await self._call(connection, "ROLE"))

    # --- configuration and keyspace ---

    async def config(self, connection: Connection, pattern: str) -> ConfigValues:
        # TODO(auth): values can hold credentials (requirepass, masterauth); never log them.
        # Detection found CONFIG missing (a managed provider's plan, rename-command, ACL):
        # say why with a 501 rather than send it again for the server's refusal.
        await self._connections.require_live_feature(connection, "config")
        reply = await self._call(connection, "CONFIG", "GET", pattern)
        return ConfigValues({name: text(value) for name, value in pairs(reply)})

    async def config_parameter(self, connection: Connection, parameter: str) -> ConfigParameterRead:
        values = (await self.config(connection, parameter)).root
        name = parameter.lower()
        if name not in values:
            raise NotFound(f"Unknown configuration parameter '{parameter}'", field="parameter")
        return ConfigParameterRead(parameter=name, value=values[name])

    async def dbsize(self, connection: Connection) -> int:
        return integer(await self._call(connection, "DBSIZE")) or 0

    async def lastsave_ms(self, connection: Connection) -> int:
        reply = await self._call(connection, "LASTSAVE")
        if isinstance(reply, datetime.datetime):
            # valkey-py turns LASTSAVE into a naive local datetime (fromtimestamp); timestamp()
            # on a naive datetime reads it back as local time, which is the exact inverse.
            return round(reply.timestamp()) * 1000
        return (integer(reply) or 0) * 1000


def _scalar(value: Any) -> Scalar:
    """A MEMORY STATS value: ints stay ints, float texts become floats, the rest text."""
    number = integer(value)
    if number is not None:
        return number
    raw = text(value)
    try:
        parsed = float(raw)
    except ValueError:
        return raw
    return parsed if parsed == parsed and abs(parsed) != float("inf") else raw


def _parse_role(reply: Any) -> RoleRead:
    items = reply if isinstance(reply, list) else []
    role = text(items[0]) if items else ""
    if role == "master":
        replicas = []
        for entry in items[2] if len(items) > 2 and isinstance(items[2], list) else []:
            if isinstance(entry, list) and len(entry) >= 3:
                port, offset = integer(entry[1]), integer(entry[2])
                if port is not None and offset is not None:
                    replicas.append(RoleReplicaRead(ip=text(entry[0]), port=port, offset=offset))
        return RoleRead(
            role="master",
            replicationOffset=integer(items[1]) if len(items) > 1 else None,
            replicas=replicas,
        )
    if role == "slave" and len(items) >= 5:
        return RoleRead(
            role="slave",
            masterHost=text(items[1]),
            masterPort=integer(items[2]),
            masterLinkState=text(items[3]),
            masterReplicationOffset=integer(items[4]),
        )
    if role == "sentinel":
        masters = items[1] if len(items) > 1 and isinstance(items[1], list) else []
        return RoleRead(role="sentinel", monitoredMasters=[text(m) for m in masters])
    raise FeatureUnavailable(f"ROLE answered in an unexpected shape: {role or 'empty reply'}")


class ObservedElsewhere:
    """What a connection polled by another replica looks like now, for views built from
    the latest poll (the dashboard's cards, the memory page's limits).

    Where replicas share the polling, only the replica that polls a connection has its
    latest observation. Another one asked for such a view reads INFO from the server
    live, at most once a second per connection whoever asks, and keeps the reading in a
    state of its own: two readings give the CPU rate, as two polls do.
    """

    MIN_AGE_MS = 1000

    def __init__(
        self, connections: ConnectionService, polled_elsewhere: Callable[[str], bool]
    ) -> None:
        self._connections = connections
        self._polled_elsewhere = polled_elsewhere
        # Its own readings, not the pipe's live state: a live read here judges nothing.
        self._latest: dict[str, Observation] = {}
        self._previous: dict[str, CpuReading] = {}

    async def latest(self, connection: Connection) -> tuple[Observation | None, CpuReading | None]:
        """The latest reading and the one before, or (None, None) where this replica polls
        the connection itself (or it is pushed): its own live state has those."""
        latest = self._latest.get(connection.id)
        if connection.pushed or not self._polled_elsewhere(connection.id):
            if latest is not None:  # polled here now
                del self._latest[connection.id]
                self._previous.pop(connection.id, None)
            return None, None
        if latest is None or now_ms() - latest.received_at_ms >= self.MIN_AGE_MS:
            try:
                info = await self._connections.client(connection).info()
            except EngineError:  # down or hung: the views say there is nothing to show
                return None, None
            if latest is not None:
                self._previous[connection.id] = cpu_reading(latest)
            latest = Observation(connection_id=connection.id, received_at_ms=now_ms(), info=info)
            self._latest[connection.id] = latest
        return latest, self._previous.get(connection.id)
