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

The window and its statistics are the one every judge of detection/ keeps (window.py);
the standard deviation is the population one (divide by n).
"""

import math
from dataclasses import dataclass

from svc_monitor.detection.window import RollingWindow

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


class SpikeBaseline(RollingWindow):
    """The rolling window of one metric, and the spike level its statistics give."""

    __slots__ = ("_minimum_rise",)

    def __init__(
        self,
        *,
        minimum_rise: float,
        window: int = DEFAULT_WINDOW,
        min_samples: int = DEFAULT_MIN_SAMPLES,
    ) -> None:
        if window < 1 or not 1 <= min_samples <= window:
            raise ValueError("need 1 <= min_samples <= window")
        super().__init__(size=window, ready_at=min_samples)
        self._minimum_rise = minimum_rise

    def current(self) -> Baseline | None:
        """The baseline of the samples so far; None until there are `min_samples`."""
        if not self.ready:
            return None
        mean, variance = self.moments()
        return self._baseline(mean, variance, len(self.values))

    def judge(self, value: float) -> Baseline | None:
        """The baseline `value` is compared with (the samples before it), then add it."""
        samples = len(self.values)
        before = self.take(value)
        if before is None:
            return None
        mean, variance = before
        return self._baseline(mean, variance, samples)

    def _baseline(self, mean: float, variance: float, samples: int) -> Baseline:
        stddev = math.sqrt(variance)
        level = max(mean + SIGMAS * stddev, mean * RATIO, mean + self._minimum_rise)
        return Baseline(mean=mean, stddev=stddev, spike_level=level, samples=samples)
