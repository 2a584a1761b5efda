"""Events out as OTLP logs: the bus's notifications posted to `<endpoint>/v1/logs` (or to
OTEL_EXPORTER_OTLP_LOGS_ENDPOINT as it is).

The same notifications as webhooks (event_types/table.py): occurrences
(instance.down, cluster.failover ...) every time; threshold ones judged against the
default thresholds with our own alert states (detection/alerts/service.py; hysteresis
factor 0.9, the webhook default), so a threshold event is logged once per crossing, not
once per poll. There is no tier check: the licence gates which webhooks may subscribe,
not what the service tells its own operator's collector.

Records are posted in batches, at BATCH_SIZE records or every FLUSH_INTERVAL_S, one
request at a time. A batch the collector could not take for now (no answer, 429, 502,
503, 504) stays queued and is tried again after an interval; one it refuses for good
(400, 404, 413 ...) is dropped. At most MAX_QUEUED records wait: beyond that the oldest
go, counted in `dropped` and logged. At shutdown, what is queued gets one last short try.
"""

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable

from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from svc_monitor.connections.service import ConnectionService
from svc_monitor.detection.alerts.schemas import Thresholds
from svc_monitor.detection.alerts.service import AlertStates
from svc_monitor.errors import NotFound
from svc_monitor.event_types.base import Candidate, Data, Measured
from svc_monitor.event_types.table import candidates
from svc_monitor.events import ConnectionsChanged, Event, EventBus, InstanceEvent
from svc_monitor.otlp.export.event_records import Instance, export_request, log_record
from svc_monitor.otlp.export.stats import ExportStats
from svc_monitor.otlp.export.transport import OtlpTransport, PostResult

logger = logging.getLogger(__name__)

LOGS_PATH = "/v1/logs"
CONSUMER = "otlp-logs"  # the bus subscription, and the alert states' consumer key
FLUSH_INTERVAL_S = 1.0
BATCH_SIZE = 100
MAX_QUEUED = 1000
HYSTERESIS_FACTOR = 0.9  # the webhooks' default alertConfig.hysteresisFactor
SHUTDOWN_FLUSH_S = 2.0
# The OTLP/HTTP retryable answers; None is no answer at all (refused, reset, timed out).
_RETRYABLE = frozenset({None, 429, 502, 503, 504})


class EventExporter:
    """Consumes the bus for OTLP logs: each notification one record, posted in batches."""

    def __init__(
        self,
        bus: EventBus,
        transport: OtlpTransport,
        stats: ExportStats,
        connections: ConnectionService,
        *,
        flush_interval_s: float = FLUSH_INTERVAL_S,
        batch_size: int = BATCH_SIZE,
        max_queued: int = MAX_QUEUED,
        clock_ns: Callable[[], int] = time.time_ns,
        alerts: AlertStates | None = None,
    ) -> None:
        self._bus = bus
        self._subscription = bus.subscribe(CONSUMER)
        self._transport = transport
        self._stats = stats
        self._connections = connections
        self._flush_interval_s = flush_interval_s
        self._batch_size = batch_size
        self._max_queued = max_queued
        self._clock_ns = clock_ns
        # Written through to storage where replicas share it (SharedAlerts), so the replica
        # that takes a connection over does not log a threshold event still firing again.
        self.alerts = alerts if alerts is not None else AlertStates()
        self.consumer = CONSUMER
        self._thresholds = Thresholds()
        self._queued: deque[LogRecord] = deque()
        self._instances: dict[str, Instance] = {}
        self._backing_off = False
        self.dropped = 0  # records lost: pushed out of a full queue, or refused for good
        stats.track("logs")

    @property
    def queued(self) -> int:
        return len(self._queued)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        next_flush = loop.time() + self._flush_interval_s
        try:
            while True:
                full = len(self._queued) >= self._batch_size and not self._backing_off
                if full or loop.time() >= next_flush:
                    if self._queued:
                        self._backing_off = not await self._flush()
                    next_flush = loop.time() + self._flush_interval_s
                    continue
                event = await self._next_event(next_flush - loop.time())
                if event is not None:
                    await self._handle_safely(event)
        finally:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(SHUTDOWN_FLUSH_S):
                    await self._drain()
            self._bus.unsubscribe(self._subscription)

    async def _next_event(self, within_s: float) -> Event | None:
        try:
            async with asyncio.timeout(max(within_s, 0)):
                return await self._subscription.get()
        except TimeoutError:
            return None

    async def _handle_safely(self, event: Event) -> None:
        try:
            await self.handle(event)
        except Exception:  # one bad event must not stop the export
            logger.exception("OTLP event export could not handle %s", type(event).__name__)

    async def handle(self, event: Event) -> None:
        """Queue the records `event` turns into (none for most readings)."""
        if isinstance(event, ConnectionsChanged):
            self._instances.pop(event.connection_id, None)
            return
        if not isinstance(event, InstanceEvent):
            return
        for candidate in candidates(event):
            data = self._data_of(candidate, event.connection_id)
            if data is None:
                continue
            instance = await self._instance(event.connection_id)
            record = log_record(
                candidate.event_type,
                data,
                instance,
                at_ms=event.at_ms,
                observed_ns=self._clock_ns(),
            )
            self._enqueue(record)

    def _data_of(self, candidate: Candidate, connection_id: str) -> Data | None:
        if not isinstance(candidate, Measured):
            return candidate.data
        key = (CONSUMER, connection_id, candidate.event_type)
        return self.alerts.fires(key, candidate, self._thresholds, factor=HYSTERESIS_FACTOR)

    async def _instance(self, connection_id: str) -> Instance:
        known = self._instances.get(connection_id)
        if known is None:
            try:
                connection = await self._connections.get(connection_id)
            except NotFound:  # removed since: the id is all there is
                known = Instance(connection_id, None, None)
            else:
                known = Instance(connection_id, connection.host, connection.port)
            self._instances[connection_id] = known
        return known

    def _enqueue(self, record: LogRecord) -> None:
        self._queued.append(record)
        if len(self._queued) > self._max_queued:
            self._queued.popleft()
            self._count_dropped(1, "the queue is full")

    async def _flush(self) -> bool:
        """Post the oldest batch; False when it should be tried again later."""
        batch = [self._queued[i] for i in range(min(self._batch_size, len(self._queued)))]
        body = export_request(batch).SerializeToString()
        result = await self._transport.post(LOGS_PATH, body)
        self._stats.record("logs", result, target=self._transport.target_of(LOGS_PATH))
        retry = _retryable(result)
        if not retry:
            # Records are queued only between flushes: the batch is still the queue's head.
            for _ in batch:
                self._queued.popleft()
            if not result.ok:
                self._count_dropped(len(batch), f"the collector refused them ({result.error})")
        return not retry

    async def _drain(self) -> None:
        for event in self._subscription.pending():
            await self._handle_safely(event)
        while self._queued and await self._flush():
            pass

    def _count_dropped(self, count: int, why: str) -> None:
        first = self.dropped == 0
        self.dropped += count
        if first or self.dropped // 1000 != (self.dropped - count) // 1000:
            logger.warning(
                "OTLP event export dropped %d log records (%d in all): %s",
                count,
                self.dropped,
                why,
            )


def _retryable(result: PostResult) -> bool:
    return not result.ok and result.status in _RETRYABLE
