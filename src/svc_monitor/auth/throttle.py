"""Sign-in throttling: failed attempts per client IP and per account, in sliding windows.

In memory and per process, on the injectable clock: a restart forgets, and behind
several replicas each counts alone (the limits then multiply by the replica count).
Hand-written rather than a library: `limits`' memory backend runs its own expiry
timer thread, which this small, bounded map does not need.
"""

from collections import OrderedDict, deque
from collections.abc import Callable

from svc_monitor.errors import TooManyRequests

WINDOW_S = 15 * 60
MAX_FAILURES_PER_ACCOUNT = 10  # per window: a guesser gets 40 tries an hour, a user 10 typos
MAX_FAILURES_PER_IP = 30
MAX_TRACKED = 10_000  # keys kept; the oldest are forgotten first


class LoginThrottle:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def check(self, *, ip: str, account: str) -> None:
        """Refuse (429) while either key has used up its window."""
        now = self._clock()
        for key, limit in (
            (f"ip:{ip}", MAX_FAILURES_PER_IP),
            (f"acct:{account}", MAX_FAILURES_PER_ACCOUNT),
        ):
            recent = self._recent(key, now)
            if len(recent) >= limit:
                retry = int(recent[0] + WINDOW_S - now) + 1
                raise TooManyRequests(
                    "Too many failed sign-in attempts; try again later", retry_after_s=retry
                )

    def failed(self, *, ip: str, account: str) -> None:
        now = self._clock()
        for key in (f"ip:{ip}", f"acct:{account}"):
            self._recent(key, now).append(now)
            self._failures.move_to_end(key)
        while len(self._failures) > MAX_TRACKED:
            self._failures.popitem(last=False)

    def succeeded(self, *, account: str) -> None:
        self._failures.pop(f"acct:{account}", None)

    def _recent(self, key: str, now: float) -> deque[float]:
        times = self._failures.setdefault(key, deque(maxlen=MAX_FAILURES_PER_IP))
        while times and times[0] <= now - WINDOW_S:
            times.popleft()
        return times
