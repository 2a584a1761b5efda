"""The automatic baseline behind connection.spike and latency.spike (threshold 0).

Our rule (docs/features/webhooks.md#automatic-baseline-latencyspikems-0-connectionspikecount-0):

- Keep the last `window` samples (300 by default: five minutes of INFO polls at the
  default 1 s, or 75 minutes of commandstats polls at 15 s).
- Until `min_samples` (30) are in the window there is no baseline: too few points to
  call anything unusual, so no spike level is published and no spike can fire.
- Then `baseline` is the mean of the window and

      spike_level = max(mean + 3 * stddev, mean * 1.5, mean + minimum_rise)

  `3 * stddev` is the usual "far outside normal noise" cut; on a very steady metric the
  standard deviation is near 0, so `mean * 1.5` (50 % above normal) and
  `mean + minimum_rise` (an absolute step that matters: 10 clients, 1 ms) keep a tiny
  wobble from counting as a spike.
- A reading is judged against the baseline of the samples *before* it, then joins the
  window: a spike never raises the level it is compared with. Samples above the level
  still join, so a lasting change becomes the new normal within the window.

The standard deviation is the population one (divide by n).
"""

import math
from collections import deque
from dataclasses import dataclass

DEFAULT_WINDOW = 300
DEFAULT_MIN_SAMPLES = 30
SIGMAS = 3.0
RATIO = 1.5


@dataclass(frozen=True, slots=True)
class Baseline:
    """The window's statistics and the level above which a sample is a spike."""

    mean: float
    stddev: float
    spike_level: float
    samples: int


class RollingBaseline:
    """Mean and standard deviation over the last `window` samples of one metric.

    Running sums make each sample O(1); they are recomputed from the window every
    `window` samples so float error cannot build up over days of polling.
    """

    def __init__(
        self,
        *,
        minimum_rise: float,
        window: int = DEFAULT_WINDOW,
        min_samples: int = DEFAULT_MIN_SAMPLES,
    ) -> None:
        if window < 1 or not 1 <= min_samples <= window:
            raise ValueError("need 1 <= min_samples <= window")
        self._minimum_rise = minimum_rise
        self._window = window
        self._min_samples = min_samples
        self._values: deque[float] = deque(maxlen=window)
        self._sum = 0.0
        self._sum_sq = 0.0
        self._since_exact = 0

    def __len__(self) -> int:
        return len(self._values)

    def current(self) -> Baseline | None:
        """The baseline of the samples so far; None until there are `min_samples`."""
        n = len(self._values)
        if n < self._min_samples:
            return None
        mean = self._sum / n
        stddev = math.sqrt(max(0.0, self._sum_sq / n - mean * mean))
        level = max(mean + SIGMAS * stddev, mean * RATIO, mean + self._minimum_rise)
        return Baseline(mean=mean, stddev=stddev, spike_level=level, samples=n)

    def add(self, value: float) -> None:
        values = self._values
        if len(values) == self._window:
            old = values[0]
            self._sum -= old
            self._sum_sq -= old * old
        values.append(value)
        self._sum += value
        self._sum_sq += value * value
        self._since_exact += 1
        if self._since_exact >= self._window:
            self._sum = math.fsum(values)
            self._sum_sq = math.fsum(v * v for v in values)
            self._since_exact = 0

    def judge(self, value: float) -> Baseline | None:
        """The baseline `value` is compared with (the samples before it), then add it."""
        baseline = self.current()
        self.add(value)
        return baseline
