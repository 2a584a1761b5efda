"""`POST /v1/external/metrics`: pushed points into the same pipe as polled INFO.

Each ResourceMetrics is matched to a push connection (otlp/ingest/identity.py); each of its
points (otlp/ingest/points.py) is mapped to one INFO field (otlp/ingest/mapping.py) and kept
with its freshness (otlp/ingest/fields.py). After a request, every connection it touched
is observed like a polled INFO read, with only its fresh fields: live state, history,
detectors and the Prometheus families follow, and a field never pushed stays absent.

Liveness: a push connection is connected while any field is fresh. A sweep every second
turns it disconnected once every field is stale (InstanceDown through InstanceHealth,
once), and the pipe's consumers forget it, so a scrape shows only what is fresh; the next
accepted point brings it back (InstanceUp). After a restart every push connection starts
disconnected, without an event, until its next push.

Engine versions come from resource attributes and live in memory; they go into the pipe
as ServerVersionFacts (for the CVE scanner) on first arrival, on change, every 6 hours and
on the first push after a sweep. Pushed commandstats go into the pipe as
CommandstatsFacts, the same facts the commandstats poll makes of a polled instance.
"""

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from svc_monitor.connections.models import Connection, PushStatus
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.errors import PushStale
from svc_monitor.engine.info import FieldValue, ParsedInfo
from svc_monitor.events import ConnectionsChanged, EventBus, Subscription
from svc_monitor.otlp.ingest.counts import IngestCounts
from svc_monitor.otlp.ingest.discovery import DiscoveredInstances
from svc_monitor.otlp.ingest.fields import PushedFields
from svc_monitor.otlp.ingest.identity import AddressBook, resource_address
from svc_monitor.otlp.ingest.mapping import Engine
from svc_monitor.otlp.ingest.points import Tally, point_count, string_attribute, take_metrics
from svc_monitor.pipe.facts import CommandstatsFacts, ServerVersionFacts
from svc_monitor.pipe.health import InstanceHealth
from svc_monitor.pipe.observation import Observation
from svc_monitor.pipe.pipe import Pipe

if TYPE_CHECKING:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
        ExportMetricsServiceResponse,
    )
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

logger = logging.getLogger(__name__)

RESCAN_EVERY_MS = 6 * 3_600_000
REFRESH_EVERY_S = 5.0
SWEEP_EVERY_S = 1.0
# What a Valkey reports in redis_version: never a version to scan Valkey by.
VALKEY_COMPAT_VERSION = "7.2.4"


@dataclass(slots=True)
class _Pushed:
    """What the receiver holds for one push connection."""

    connection: Connection
    fields: PushedFields
    engine: Engine = "redis"
    valkey_detected: bool = False
    versions: dict[str, str] = field(default_factory=dict)  # redis_version / valkey_version
    role: str | None = None
    connected: bool = False
    since_ms: int = 0
    scanned: tuple[Engine, str] | None = None
    scanned_at_ms: int = 0

    def version(self) -> tuple[Engine, str | None, str]:
        """(engine, version, the attribute it comes from): a Valkey's version is read only from
        `valkey.version`, never its 7.2.4 `redis.version`
        (docs/features/otlp-push-and-traces.md#engine-versions)."""
        if self.valkey_detected:
            return "valkey", self.versions.get("valkey_version"), "valkey.version"
        return "redis", self.versions.get("redis_version"), "redis.version"


class MetricsReceiver:
    """Maps pushed metrics onto push connections and feeds the pipe."""

    def __init__(
        self,
        *,
        connections: ConnectionService,
        pipe: Pipe,
        health: InstanceHealth,
        discovery: DiscoveredInstances,
        counts: IngestCounts,
        bus: EventBus,
        stale_after_ms: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._connections = connections
        self._pipe = pipe
        self._health = health
        self._discovery = discovery
        self.counts = counts
        self._bus = bus
        self._stale_after_ms = stale_after_ms
        self._clock = clock
        self._book = AddressBook()
        self._pushed: dict[str, _Pushed] = {}
        self._loaded = False
        self._changes: Subscription | None = None

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def push_connections(self) -> list[Connection]:
        return [p.connection for p in self._pushed.values()]

    # --- the registry ---

    async def refresh(self) -> None:
        """Rebuild the address book from the registry (every change, and every few
        seconds for edits made by another replica)."""
        registered = await self._connections.list()
        self._book = AddressBook(registered)
        now = self._now_ms()
        wanted = {c.id: c for c in registered if c.pushed}
        for connection_id in [i for i in self._pushed if i not in wanted]:
            await self._forget(connection_id)
        for connection_id, connection in wanted.items():
            held = self._pushed.get(connection_id)
            if held is None:
                self._discovery.registered(connection.host, connection.port)
                self._pushed[connection_id] = _Pushed(
                    connection, PushedFields(self._stale_after_ms), since_ms=now
                )
                self._connections.set_push_status(connection_id, PushStatus(False, now))
            elif (held.connection.host, held.connection.port) != (
                connection.host,
                connection.port,
            ):
                # Pointed at another instance: what we held was about the old one.
                await self._forget(connection_id)
                self._pushed[connection_id] = _Pushed(
                    connection, PushedFields(self._stale_after_ms), since_ms=now
                )
                self._connections.set_push_status(connection_id, PushStatus(False, now))
            else:
                held.connection = connection
        self._loaded = True

    async def _forget(self, connection_id: str) -> None:
        self._pushed.pop(connection_id, None)
        self._health.forget(connection_id)
        self._pipe.forget(connection_id)

    async def run(self) -> None:
        """Keep the registry current and sweep for staleness, until cancelled."""
        changes = self._changes = self._bus.subscribe(
            "otlp-receiver", maxsize=100, kinds=(ConnectionsChanged,)
        )
        next_refresh = 0.0
        loop = asyncio.get_running_loop()
        try:
            while True:
                if loop.time() >= next_refresh or _drain_changes(changes):
                    try:
                        await self.refresh()
                    except Exception:  # storage hiccup: the next pass tries again
                        logger.exception("could not read the push connections")
                    next_refresh = loop.time() + REFRESH_EVERY_S
                self.sweep()
                await self._rescan_due()
                await asyncio.sleep(SWEEP_EVERY_S)
        finally:
            self._changes = None
            self._bus.unsubscribe(changes)

    def sweep(self) -> None:
        """Disconnect every push connection whose fields have all gone stale."""
        now = self._now_ms()
        for connection_id, pushed in self._pushed.items():
            if pushed.connected and not pushed.fields.any_fresh(now):
                pushed.connected, pushed.since_ms = False, now
                self._health.failed(
                    connection_id,
                    PushStale(
                        f"no fresh pushed metric for {self._stale_after_ms // 1000} s "
                        "(OTEL_METRICS_STALE_AFTER_MS)"
                    ),
                )
                # Its series go (a scrape shows only what is fresh), and with them what
                # every other consumer held of it; its version is put again on its return.
                self._pipe.forget(connection_id)
                pushed.scanned = None
                self._publish_status(pushed)

    # --- ingest ---

    async def ingest(
        self, request: "ExportMetricsServiceRequest"
    ) -> "ExportMetricsServiceResponse":
        # Imported here, as by the route: protobuf loads with the first push.
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceResponse,
        )

        # A connection registered a moment ago takes its first push at once.
        if not self._loaded or (self._changes is not None and _drain_changes(self._changes)):
            await self.refresh()
        now_ms = self._now_ms()
        tally = Tally(now_ms, now_ms * 1_000_000)
        touched: dict[str, _Pushed] = {}
        for resource_metrics in request.resource_metrics:
            self._take_resource(resource_metrics, tally, touched)
        dropped = +tally.dropped  # a metric without points drops nothing: no `reason=0`
        self.counts.add(tally.accepted, dropped)
        for pushed in touched.values():
            await self._observe(pushed, now_ms)
        response = ExportMetricsServiceResponse()
        if dropped:
            partial = response.partial_success
            partial.rejected_data_points = sum(dropped.values())
            partial.error_message = " ".join(
                f"{reason}={n}" for reason, n in sorted(dropped.items())
            )
        return response

    def _take_resource(
        self, resource_metrics: object, tally: Tally, touched: dict[str, _Pushed]
    ) -> None:
        attributes = resource_metrics.resource.attributes  # type: ignore[attr-defined]
        # Slices: upb's containers iterate by indexing until an IndexError (push_points.py).
        all_metrics = [
            m
            for scope in resource_metrics.scope_metrics[:]  # type: ignore[attr-defined]
            for m in scope.metrics[:]
        ]
        address = resource_address(attributes)
        reason = None
        connection = None
        if address is None:
            reason = "unidentified"
        else:
            connection = self._book.find(address)
            if connection is None:
                reason = "unknown_instance"
                self._discovery.saw(
                    address.host, address.port, string_attribute(attributes, "service.name")
                )
            elif not connection.pushed:
                reason = "already_polled"
        pushed = None if connection is None else self._pushed.get(connection.id)
        if reason is None and pushed is None:
            reason = "unknown_instance"  # registered a moment ago: the next refresh adds it
        if reason is not None or pushed is None:
            count = sum(point_count(m) for m in all_metrics)
            if count:  # a resource without points rejects nothing
                tally.dropped[reason or "unknown_instance"] += count
            return
        accepted_before = tally.accepted
        valkey_named = take_metrics(pushed.fields, all_metrics, tally)
        self._take_versions(pushed, attributes, valkey_named)
        if tally.accepted > accepted_before:
            pushed.fields.last_received_ms = tally.now_ms
            touched[pushed.connection.id] = pushed

    # --- versions ---

    def _take_versions(
        self, pushed: _Pushed, attributes: Iterable["KeyValue"], valkey_named: bool
    ) -> None:
        redis_version = valkey_version = system = None
        for attribute in attributes:
            key = attribute.key
            if key == "redis.version":
                redis_version = attribute.value.string_value
            elif key == "valkey.version":
                valkey_version = attribute.value.string_value
            elif key == "db.system.name":
                system = attribute.value.string_value
        if valkey_named or (system or "").lower() == "valkey":
            pushed.valkey_detected = True
        if redis_version:
            pushed.versions["redis_version"] = redis_version.strip()
        if valkey_version:
            pushed.versions["valkey_version"] = valkey_version.strip()

    async def _rescan_due(self) -> None:
        now = self._now_ms()
        for connection_id, pushed in list(self._pushed.items()):
            # A swept connection was forgotten: its version goes in again when it returns.
            if pushed.connected:
                await self._rescan_if_due(connection_id, pushed, now)

    async def _rescan_if_due(self, connection_id: str, pushed: _Pushed, now: int) -> None:
        engine, version, _ = pushed.version()
        if version is None:
            return
        current = (engine, version)
        if pushed.scanned != current or now - pushed.scanned_at_ms >= RESCAN_EVERY_MS:
            pushed.scanned, pushed.scanned_at_ms = current, now
            await self._pipe.put_facts(connection_id, ServerVersionFacts(now, engine, version))

    # --- into the pipe ---

    async def _observe(self, pushed: _Pushed, now_ms: int) -> None:
        connection_id = pushed.connection.id
        engine, version, _ = pushed.version()
        pushed.engine = engine
        server: dict[str, FieldValue] = {}
        if "redis_version" in pushed.versions:
            server["redis_version"] = pushed.versions["redis_version"]
        if engine == "valkey":
            # Valkey's own INFO names itself so (8.0+): a Valkey that pushed only its 7.2.4
            # compatibility redis.version is still shown as Valkey, of unknown version.
            server["server_name"] = "valkey"
            if version is not None:
                server["valkey_version"] = version
        sections = pushed.fields.fresh_sections(now_ms, server)
        info = ParsedInfo(sections, 0)
        role = info.get_str("replication", "role")
        pushed.role = role
        if not pushed.connected:
            pushed.connected, pushed.since_ms = True, now_ms
            self._health.succeeded(connection_id)
        self._publish_status(pushed)
        await self._pipe.observe(
            Observation(connection_id=connection_id, received_at_ms=now_ms, info=info, pushed=True)
        )
        if "commandstats" in sections:
            await self._pipe.put_facts(connection_id, CommandstatsFacts(now_ms, info))
        # This connection only: checking every connection on each observation is O(n^2).
        await self._rescan_if_due(connection_id, pushed, now_ms)

    def _publish_status(self, pushed: _Pushed) -> None:
        engine, version, attribute = pushed.version()
        self._connections.set_push_status(
            pushed.connection.id,
            PushStatus(
                connected=pushed.connected,
                since_ms=pushed.since_ms,
                last_push_ms=pushed.fields.last_received_ms,
                engine=engine,
                version=version,
                version_attribute=attribute,
                role=pushed.role,
            ),
        )


def _drain_changes(changes: Subscription) -> bool:
    """True if the registry changed since the last look (without waiting)."""
    return any(isinstance(event, ConnectionsChanged) for event in changes.pending())
