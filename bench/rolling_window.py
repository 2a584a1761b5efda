"""CPU cost of the rolling window behind every baseline: per sample pushed, in ns.

detection/window.py is the one window the spike baseline (detection/baseline.py) and the
anomaly detectors (detection/anomaly/detectors.py) keep. There were two, the same
running-sums algorithm written twice; the faster became window.py. The other is kept
here, as `RetiredBaseline` (the readings' baseline as it was, the slower), so the choice
can be measured again; the anomaly detectors' MetricBuffer window, the faster, is
window.py's `RollingWindow` now.

Both on the same workload: a 300-sample window, 30 samples before it judges, --pushes
Gaussian samples; two ways of reading it:

- "push, then read": push a sample, then read the mean and standard deviation;
- "judge": read the baseline of the samples before one, then push it, in one call (what
  both judges do for every sample).

Repeats alternate between the implementations so machine noise hits each alike; the
median of the repeats is printed. --quick makes one short repeat: it checks that the
bench runs, its figures mean nothing.

    .venv/bin/python bench/rolling_window.py [--pushes 100000] [--repeats 7] [--quick]
"""

import argparse
import math
import random
import statistics
import time
from collections import deque
from collections.abc import Callable

from svc_monitor.detection.baseline import RATIO, SIGMAS, Baseline, SpikeBaseline
from svc_monitor.detection.window import RollingWindow

SIZE = 300
READY_AT = 30


class RetiredBaseline:
    """detectors/baseline.py's RollingBaseline as it was, its own window inside: the
    push a method call of its own, a Baseline built on every read."""

    def __init__(self, *, minimum_rise: float, window: int = SIZE, min_samples: int = READY_AT):
        self._minimum_rise = minimum_rise
        self._window = window
        self._min_samples = min_samples
        self._values: deque[float] = deque(maxlen=window)
        self._sum = 0.0
        self._sum_sq = 0.0
        self._since_exact = 0

    def current(self) -> Baseline | None:
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
        baseline = self.current()
        self.add(value)
        return baseline


def workloads(values: list[float]) -> dict[str, Callable[[], float]]:
    """Each returns the sum of what it read, so no read can be skipped."""

    def retired_push_read() -> float:
        window, total = RetiredBaseline(minimum_rise=10), 0.0
        for value in values:
            window.add(value)
            read = window.current()
            if read is not None:
                total += read.mean + read.stddev
        return total

    def window_push_read() -> float:
        window, total = RollingWindow(size=SIZE, ready_at=READY_AT), 0.0
        for value in values:
            window.take(value)
            if window.ready:
                mean, stddev = window.stats()
                total += mean + stddev
        return total

    def retired_judge() -> float:
        window, total = RetiredBaseline(minimum_rise=10), 0.0
        for value in values:
            read = window.judge(value)
            if read is not None:
                total += read.mean + read.stddev
        return total

    def window_judge() -> float:
        window, total = RollingWindow(size=SIZE, ready_at=READY_AT), 0.0
        for value in values:
            before = window.take(value)
            if before is not None:
                total += before[0] + math.sqrt(before[1])
        return total

    def spike_baseline_judge() -> float:
        # The readings' baseline now: the window's take, and its Baseline with spike level.
        window, total = SpikeBaseline(minimum_rise=10), 0.0
        for value in values:
            read = window.judge(value)
            if read is not None:
                total += read.mean + read.stddev
        return total

    return {
        "push, then read: retired": retired_push_read,
        "push, then read: window.py": window_push_read,
        "judge: retired": retired_judge,
        "judge: window.py": window_judge,
        "judge: SpikeBaseline": spike_baseline_judge,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pushes", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.pushes, args.repeats = 2_000, 1

    rng = random.Random(1)
    values = [rng.gauss(1000.0, 50.0) for _ in range(args.pushes)]
    funcs = workloads(values)
    # Same samples, same statistics: a window that read something else would not count.
    sums = {label: func() for label, func in funcs.items()}
    assert math.isclose(sums["push, then read: retired"], sums["push, then read: window.py"])
    assert math.isclose(sums["judge: retired"], sums["judge: window.py"])

    samples: dict[str, list[float]] = {label: [] for label in funcs}
    for _ in range(args.repeats):
        for label, func in funcs.items():
            started = time.perf_counter()
            func()
            samples[label].append((time.perf_counter() - started) / args.pushes * 1e9)

    print(f"window {SIZE}, judging from {READY_AT}, {args.pushes} pushes, {args.repeats} repeats")
    for label, figures in samples.items():
        print(
            f"  {label:<28} median {statistics.median(figures):7.0f} ns/push  "
            f"min {min(figures):7.0f}  max {max(figures):7.0f}"
        )
    for way in ("push, then read", "judge"):
        retired = statistics.median(samples[f"{way}: retired"])
        kept = statistics.median(samples[f"{way}: window.py"])
        print(f"{way}: window.py {kept:.0f} ns/push, retired {retired:.0f} ({retired / kept:.1f}x)")


if __name__ == "__main__":
    main()
