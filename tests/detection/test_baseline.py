"""The automatic baseline: mean and standard deviation over a bounded window."""

import random
import statistics

import pytest

from svc_monitor.detection.baseline import SpikeBaseline


class TestSpikeBaseline:
    def test_no_baseline_before_thirty_samples(self):
        baseline = SpikeBaseline(minimum_rise=10)
        for _ in range(29):
            baseline.add(5)
        assert baseline.current() is None
        baseline.add(5)
        assert baseline.current() is not None

    def test_steady_small_count_needs_the_minimum_rise(self):
        baseline = SpikeBaseline(minimum_rise=10)
        for _ in range(30):
            baseline.add(10)
        current = baseline.current()
        assert current is not None
        assert (current.mean, current.stddev, current.spike_level) == (10, 0, 20)

    def test_steady_large_count_needs_half_again(self):
        baseline = SpikeBaseline(minimum_rise=10)
        for _ in range(30):
            baseline.add(1000)
        current = baseline.current()
        assert current is not None
        assert current.spike_level == 1500

    def test_noisy_metric_needs_three_standard_deviations(self):
        samples = [100.0 + (40 if i % 2 else -40) for i in range(60)]
        baseline = SpikeBaseline(minimum_rise=1)
        for value in samples:
            baseline.add(value)
        current = baseline.current()
        assert current is not None
        assert current.mean == pytest.approx(100)
        assert current.stddev == pytest.approx(statistics.pstdev(samples))
        assert current.spike_level == pytest.approx(100 + 3 * 40)

    def test_window_keeps_only_the_last_samples(self):
        baseline = SpikeBaseline(minimum_rise=1, window=300)
        for _ in range(300):
            baseline.add(10)
        for _ in range(300):
            baseline.add(1000)
        current = baseline.current()
        assert current is not None
        assert len(baseline) == 300
        assert current.mean == pytest.approx(1000)
        assert current.stddev == pytest.approx(0, abs=1e-6)

    def test_a_spike_is_judged_against_the_samples_before_it(self):
        baseline = SpikeBaseline(minimum_rise=10)
        for _ in range(30):
            baseline.judge(10)
        judged = baseline.judge(500)
        assert judged is not None
        assert judged.spike_level == 20
        assert judged.spike_level < 500

    def test_long_runs_match_an_exact_computation(self):
        # Rare huge values that have just left the window are the worst case for
        # running sums; the last one here (index 19940) left it five samples ago.
        rng = random.Random(7)
        baseline = SpikeBaseline(minimum_rise=0.001, window=300)
        values = [rng.uniform(0, 100) if i % 997 else 1e6 for i in range(20_245)]
        for value in values:
            baseline.add(value)
        window = values[-300:]
        current = baseline.current()
        assert current is not None
        assert current.mean == pytest.approx(statistics.fmean(window), rel=1e-9)
        assert current.stddev == pytest.approx(statistics.pstdev(window), rel=1e-6)

    def test_bad_window_is_refused(self):
        with pytest.raises(ValueError, match="min_samples"):
            SpikeBaseline(minimum_rise=1, window=10, min_samples=30)
