"""A token bucket: how many commands one CLI socket may run per second."""

from collections.abc import Callable


class TokenBucket:
    """`burst` commands at once, refilled at `rate` per second (on a monotonic clock)."""

    def __init__(self, *, rate: float, burst: int, clock: Callable[[], float]) -> None:
        self.rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def take(self) -> bool:
        """Spend one token; False (and nothing spent) when none is left."""
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + max(0.0, now - self._last) * self.rate)
        self._last = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True
