"""The rolling window every baseline of detection/ keeps: the last `size` samples of one
metric and their mean and (population) variance.

Two judges stand on it: the automatic spike level of connection.spike and latency.spike
(baseline.py) and the anomaly detectors' z-scores (anomaly/detectors.py). Both judge a
sample against the window of the samples *before* it, then add it, so `take` does both
in one call.

Running sums make each sample O(1); they are recomputed exactly every `size` samples so
float error cannot build up over days of polling. This one is the faster of the two
windows those judges used to keep apart (bench/rolling_window.py): `take` reads the
moments and pushes the sample with no call inside and no object built, which matters
because it runs for every metric of every poll.
"""

import math
from collections import deque


class RollingWindow:
    """The last `size` samples; their moments once `ready_at` are in."""

    __slots__ = ("_ready_at", "_since_exact", "_size", "_sum", "_sum_sq", "values")

    def __init__(self, *, size: int, ready_at: int) -> None:
        if size < 1 or not 1 <= ready_at <= size:
            raise ValueError("need 1 <= ready_at <= size")
        self._size = size
        self._ready_at = ready_at
        self.values: deque[float] = deque(maxlen=size)
        self._sum = 0.0
        self._sum_sq = 0.0
        self._since_exact = 0

    def __len__(self) -> int:
        return len(self.values)

    @property
    def ready(self) -> bool:
        """Enough samples to judge by (`ready_at`)."""
        return len(self.values) >= self._ready_at

    def stats(self) -> tuple[float, float]:
        """Mean and standard deviation; the window must not be empty."""
        mean, variance = self.moments()
        return mean, math.sqrt(variance)

    def moments(self) -> tuple[float, float]:
        """Mean and variance (no square root: the z-score judge compares squares)."""
        n = len(self.values)
        mean = self._sum / n
        return mean, max(0.0, self._sum_sq / n - mean * mean)

    def add(self, value: float) -> None:
        self.take(value)

    def take(self, value: float) -> tuple[float, float] | None:
        """The mean and variance before `value`, which is then added; None while warming
        up (fewer than `ready_at` values). One call where a judge needs both, and no call
        inside: this runs for every metric of every poll (bench/detectors.py)."""
        values = self.values
        n = len(values)
        before: tuple[float, float] | None = None
        if n >= self._ready_at:
            mean = self._sum / n
            variance = self._sum_sq / n - mean * mean
            before = (mean, variance if variance > 0.0 else 0.0)
        size = self._size
        if n == size:
            old = values[0]
            self._sum -= old
            self._sum_sq -= old * old
        values.append(value)
        self._sum += value
        self._sum_sq += value * value
        self._since_exact += 1
        if self._since_exact >= size:
            self._sum = math.fsum(values)
            self._sum_sq = math.fsum(v * v for v in values)
            self._since_exact = 0
        return before

    def seed(self, count: int, mean: float, variance: float) -> None:
        """Stand in for a window carried over from another replica, of which only the
        count, mean and variance travel: `count` values, alternately above and below the
        mean by as much as gives exactly that mean and variance (what the judges read).
        Real samples push them out one by one, each pair leaving the mean where it was."""
        self.values.clear()
        count = min(count, self._size)
        if count <= 0:
            self._sum = self._sum_sq = 0.0
            return
        # With an odd count one value sits on the mean; the others spread a little wider.
        paired = count - count % 2
        spread = math.sqrt(variance * count / paired) if paired else 0.0
        for i in range(count):
            if i == count - 1 and count % 2:
                self.values.append(mean)
            else:
                self.values.append(mean + spread if i % 2 == 0 else mean - spread)
        self._sum = math.fsum(self.values)
        self._sum_sq = math.fsum(v * v for v in self.values)
        self._since_exact = 0
