"""The trend line: ordinary least squares of value against time, and where it meets a ceiling.

Pure functions over (t ms, value) points, so the arithmetic is tested on its own.

The confidence band comes from the slope's standard error:

    slope      b  = Sxy / Sxx                  (Sxx = sum (t - t_mean)^2, Sxy likewise)
    residuals  s2 = sum (y - fitted)^2 / (n - 2)
    SE(b)         = sqrt(s2 / Sxx)

The line goes through the centroid (t_mean, y_mean), where its uncertainty is smallest,
so the band's lines are the fit pivoted there with slopes b - k SE(b) and b + k SE(b),
k = 2 (about 95 % for the dozens to hundreds of points a window holds). The steeper line
reaches the ceiling first: the earliest time to the limit; the shallower one gives the
latest, or none when its slope is not positive (the ceiling may never be reached). A
perfectly steady rise has SE(b) = 0, so the band closes on the estimate.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

BAND_K = 2.0  # standard errors each side of the slope
HOUR_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class Fit:
    """A least-squares line through `n` points, times in epoch ms."""

    n: int
    first_t: int
    last_t: int
    t_mean: float
    y_mean: float
    slope: float  # units per ms
    slope_se: float  # standard error of the slope, units per ms

    def at(self, t: float, *, slope: float | None = None) -> float:
        """The line's value at `t` (optionally pivoted to another slope at the centroid)."""
        return self.y_mean + (self.slope if slope is None else slope) * (t - self.t_mean)

    @property
    def per_hour(self) -> float:
        return self.slope * HOUR_MS

    @property
    def span_ms(self) -> int:
        return self.last_t - self.first_t

    def growth_percent(self) -> float:
        """The line's change across the points, relative to where it starts (100 % when it
        starts at 0 and rises; 0 when it neither starts nor moves)."""
        start, end = self.at(self.first_t), self.at(self.last_t)
        if start == 0:
            return 0.0 if end == 0 else math.copysign(100.0, end)
        return (end - start) / abs(start) * 100

    def crossing(self, ceiling: float, *, slope: float | None = None) -> float | None:
        """When the line (or its pivot with `slope`) reaches `ceiling`, epoch ms; None
        when it does not rise."""
        b = self.slope if slope is None else slope
        if b <= 0:
            return None
        return self.t_mean + (ceiling - self.y_mean) / b


def fit_line(points: Sequence[tuple[int, float]]) -> Fit | None:
    """The least-squares line through `points` (time-ordered); None under two distinct times."""
    n = len(points)
    if n < 2:
        return None
    t_mean = sum(t for t, _ in points) / n
    y_mean = sum(y for _, y in points) / n
    sxx = sxy = 0.0
    for t, y in points:
        dt = t - t_mean
        sxx += dt * dt
        sxy += dt * (y - y_mean)
    if sxx == 0:
        return None
    slope = sxy / sxx
    se = 0.0
    if n > 2:
        residual = sum((y - (y_mean + slope * (t - t_mean))) ** 2 for t, y in points)
        se = math.sqrt(residual / (n - 2) / sxx)
    return Fit(
        n=n,
        first_t=points[0][0],
        last_t=points[-1][0],
        t_mean=t_mean,
        y_mean=y_mean,
        slope=slope,
        slope_se=se,
    )


def human_duration(ms: int) -> str:
    """~Nm under an hour, ~N.Nh under two days, ~N.Nd beyond (the peer's wording)."""
    minutes = ms / 60_000
    if minutes < 60:
        return f"~{max(1, round(minutes))}m"
    hours = minutes / 60
    if hours < 48:
        return f"~{hours:.1f}h"
    return f"~{hours / 24:.1f}d"
