"""Alert state for threshold events: fire once on crossing, re-arm below the recovery level.

This is where a threshold notification (memory.critical, latency.spike ...) is judged for
every consumer: the webhooks dispatcher and the OTLP event export ask `fires` whether a
reading's notification goes out to them, and only deliver it.

Per consumer (a webhook, or the OTLP event export), connection and event: with threshold
90 and hysteresisFactor 0.9 an alert fires when the value goes above 90, stays quiet
while it moves between 81 and 90 (or above), and may fire again once it has dropped
below 81. Only active alerts are kept, in an LRU of at most 1000 entries with a 24-hour
TTL (docs/features/webhooks.md#which-events-fire-and-when): an evicted or expired alert
that is still above its threshold fires again, which doubles as a daily reminder. State
is in memory and starts empty after a restart.

Where replicas share the storage (PostgreSQL, Turso), each change of it is also written
to storage behind the scenes (SharedAlerts), and the replica that takes a connection over
from another starts from what is stored: an alert that still fires stays quiet, as it
would have on the replica that sent it.
"""

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from svc_monitor.detection.alerts.schemas import Thresholds
from svc_monitor.event_types.base import Data, Measured

if TYPE_CHECKING:
    from svc_monitor.detection.alerts.store import AlertStateStore

CAPACITY = 1000
TTL_MS = 24 * 3600 * 1000

AlertKey = tuple[str, str, str]  # webhook id (or consumer name), connection id, event type
# Told when an alert starts firing (its activation time) or stops (None).
AlertChange = Callable[[AlertKey, int | None], None]
INSTANCE_DOWN = "instance.down"
# The most changes written in one transaction, and kept waiting while storage is out.
WRITE_BATCH = 500
PENDING_CAP = 10_000

logger = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


class AlertStates:
    """The active alerts; `crossed` is the whole state machine."""

    def __init__(
        self,
        *,
        capacity: int = CAPACITY,
        ttl_ms: int = TTL_MS,
        clock: Callable[[], int] = _now_ms,
        on_change: AlertChange | None = None,
    ) -> None:
        self._on_change = on_change
        self._capacity = capacity
        self._ttl_ms = ttl_ms
        self._clock = clock
        self._active: OrderedDict[AlertKey, int] = OrderedDict()  # key -> activated at

    def fires(
        self, key: AlertKey, reading: Measured, thresholds: Thresholds, *, factor: float
    ) -> Data | None:
        """What `reading`'s notification sends when it fires for this consumer, else None.

        The level is the consumer's for the reading's field, or where that is 0 the
        automatic baseline's (None while the baseline is still learning: nothing fires);
        `factor` is the consumer's hysteresis factor (`crossed`)."""
        level = thresholds.level(reading.threshold, automatic=reading.automatic)
        if level is None:
            return None
        if not self.crossed(key, reading.value, threshold=level, factor=factor):
            return None
        return reading.data(level)

    def crossed(self, key: AlertKey, value: float, *, threshold: float, factor: float) -> bool:
        """True exactly when this sample should fire the event."""
        now = self._clock()
        activated = self._active.get(key)
        if activated is not None and now - activated >= self._ttl_ms:
            del self._active[key]
            activated = None
        if activated is not None:
            self._active.move_to_end(key)
            if value < threshold * factor:
                del self._active[key]  # recovered: the next crossing fires again
                self._changed(key, None)
            return False
        if value <= threshold:
            return False
        self._active[key] = now
        self._changed(key, now)
        if len(self._active) > self._capacity:
            evicted, _ = self._active.popitem(last=False)
            self._changed(evicted, None)
        return True

    def restore(self, key: AlertKey, activated_ms: int) -> None:
        """An alert another replica activated: quiet here too until it recovers."""
        if self._clock() - activated_ms < self._ttl_ms:
            self._active[key] = activated_ms

    def _changed(self, key: AlertKey, activated_ms: int | None) -> None:
        if self._on_change is not None:
            self._on_change(key, activated_ms)

    def is_active(self, key: AlertKey) -> bool:
        return key in self._active

    def forget_webhook(self, webhook_id: str) -> None:
        for key in [k for k in self._active if k[0] == webhook_id]:
            del self._active[key]
            self._changed(key, None)

    def __len__(self) -> int:
        return len(self._active)


class SharedAlerts:
    """The alert states that must survive a takeover or a restart, written through to
    storage.

    On lasting storage only (SQLite, PostgreSQL, Turso): `store` is None on memory, which
    a restart empties anyway; there every change is let go at once. On SQLite it is what
    lets a restarted process say instance.up for an instance it had reported down, and not
    page again for an alert still firing. Writes go out in the
    background, in order, so a poll never waits on them; a change lost to a storage
    outage can only make the next holder send an alert once more (at least once).
    """

    def __init__(self, store: "AlertStateStore | None") -> None:
        self._store = store
        self._pending: list[tuple[str, str, int | None]] = []
        self._wake = asyncio.Event()
        self._writing = asyncio.Lock()  # one writer: changes reach storage in order

    @property
    def enabled(self) -> bool:
        return self._store is not None

    def threshold_changed(self, key: AlertKey, activated_ms: int | None) -> None:
        webhook_id, connection_id, event_type = key
        self._queue(connection_id, f"webhook:{webhook_id}:{event_type}", activated_ms)

    def health_changed(self, connection_id: str, down_since_ms: int | None) -> None:
        self._queue(connection_id, INSTANCE_DOWN, down_since_ms)

    async def restore(
        self,
        connection_ids: Collection[str],
        *,
        down: Callable[[str, int], None],
        alerts: Callable[[str], AlertStates],
    ) -> None:
        """Before this replica polls connections it took over: what was firing for them.
        `alerts` names the states a consumer's alerts go back to (a webhook id, or the
        OTLP event export's consumer name)."""
        if self._store is None:
            return
        await self.flush()
        for connection_id, alert, since in await self._store.of(connection_ids):
            if alert == INSTANCE_DOWN:
                down(connection_id, since)
            elif alert.startswith("webhook:"):
                _, consumer, event_type = alert.split(":", 2)
                alerts(consumer).restore((consumer, connection_id, event_type), since)

    async def forget_webhooks(self, webhook_ids: Collection[str], alerts: AlertStates) -> None:
        """Webhooks deleted (here or on another replica): their alerts go from `alerts` and
        from storage, on every connection (those another replica polls too). Left there,
        they stayed for up to their TTL, and a takeover carried them on."""
        for webhook_id in webhook_ids:
            alerts.forget_webhook(webhook_id)
            if self._store is None:
                continue
            prefix = f"webhook:{webhook_id}:"
            # Its changes still waiting are moot: every row of it goes, after those being
            # written now (one writer, in order).
            self._pending = [c for c in self._pending if not c[1].startswith(prefix)]
            async with self._writing:
                try:
                    await self._store.clear_starting(prefix)
                except Exception as exc:  # storage out: they stay until their TTL
                    logger.warning("alert states of webhook %s not cleared: %s", webhook_id, exc)

    async def run(self) -> None:
        if self._store is None:
            return
        while True:
            await self._wake.wait()
            await self.flush()

    async def flush(self) -> None:
        """Write what is pending now (also at a clean stop, before the leases go)."""
        self._wake.clear()
        async with self._writing:
            while self._pending and self._store is not None:
                batch, self._pending = self._pending[:WRITE_BATCH], self._pending[WRITE_BATCH:]
                try:
                    await self._store.apply(batch)
                except Exception as exc:  # storage out: those changes are lost (see above)
                    logger.warning("alert states: %d changes not stored: %s", len(batch), exc)

    def _queue(self, connection_id: str, alert: str, since: int | None) -> None:
        if self._store is None:
            return
        if len(self._pending) >= PENDING_CAP:
            del self._pending[0]
        self._pending.append((connection_id, alert, since))
        self._wake.set()
