"""Alert state for threshold events: fire once on crossing, re-arm below the recovery level.

Per consumer (a webhook, or the OTLP event export), connection and event: with threshold
90 and hysteresisFactor 0.9 an alert fires when the value goes above 90, stays quiet
while it moves between 81 and 90 (or above), and may fire again once it has dropped
below 81. Only active alerts are kept, in
an LRU of at most 1000 entries with a 24-hour TTL (the spec's limits): an evicted or
expired alert that is still above its threshold fires again, which doubles as a daily
reminder. State is in memory and starts empty after a restart.
"""

import time
from collections import OrderedDict
from collections.abc import Callable

CAPACITY = 1000
TTL_MS = 24 * 3600 * 1000

AlertKey = tuple[str, str, str]  # webhook id (or consumer name), connection id, event type


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
    ) -> None:
        self._capacity = capacity
        self._ttl_ms = ttl_ms
        self._clock = clock
        self._active: OrderedDict[AlertKey, int] = OrderedDict()  # key -> activated at

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
            return False
        if value <= threshold:
            return False
        self._active[key] = now
        if len(self._active) > self._capacity:
            self._active.popitem(last=False)
        return True

    def is_active(self, key: AlertKey) -> bool:
        return key in self._active

    def forget_webhook(self, webhook_id: str) -> None:
        for key in [k for k in self._active if k[0] == webhook_id]:
            del self._active[key]

    def __len__(self) -> int:
        return len(self._active)
