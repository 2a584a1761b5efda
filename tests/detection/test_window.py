"""The rolling window (detection/window.py): the moments of the samples before each one,
over the last `size` samples only, exact after days of samples, and a seeded window that
reads as the moments it was seeded with."""

import random
import statistics

import pytest

from svc_monitor.detection.window import RollingWindow


def test_take_returns_the_moments_before_the_sample_once_ready():
    window = RollingWindow(size=5, ready_at=3)
    assert [window.take(v) for v in (1.0, 2.0, 3.0)] == [None, None, None]
    before = window.take(100.0)
    assert before is not None
    assert before[0] == pytest.approx(2.0)
    assert before[1] == pytest.approx(statistics.pvariance([1.0, 2.0, 3.0]))
    assert len(window) == 4


def test_only_the_last_size_samples_count_and_stay_exact():
    rng = random.Random(7)
    window = RollingWindow(size=300, ready_at=30)
    values = [rng.gauss(1000.0, 10.0) for _ in range(10_000)]
    for value in values:
        window.add(value)
    mean, stddev = window.stats()
    assert mean == pytest.approx(statistics.fmean(values[-300:]), rel=1e-12)
    assert stddev == pytest.approx(statistics.pstdev(values[-300:]), rel=1e-6)


@pytest.mark.parametrize("count", [1, 2, 31, 300, 500])
def test_a_seeded_window_reads_as_the_moments_it_carries(count: int):
    window = RollingWindow(size=300, ready_at=30)
    window.seed(count, 50.0, 4.0)
    mean, variance = window.moments()
    assert len(window) == min(count, 300)
    assert mean == pytest.approx(50.0)
    assert variance == pytest.approx(4.0 if count > 1 else 0.0)


def test_a_window_that_could_never_judge_is_refused():
    with pytest.raises(ValueError, match="ready_at"):
        RollingWindow(size=10, ready_at=30)
