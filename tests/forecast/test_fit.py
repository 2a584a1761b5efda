"""The least-squares line and its band, against numbers worked out independently."""

import statistics

import pytest

from svc_monitor.forecast.fit import fit_line, human_duration

HOUR = 3_600_000


class TestFitLine:
    def test_a_steady_rise_has_its_exact_slope_and_no_spread(self):
        points = [(i * 60_000, 100.0 + 2.0 * i) for i in range(61)]
        fit = fit_line(points)
        assert fit is not None
        assert fit.per_hour == pytest.approx(120.0)
        assert fit.slope_se == pytest.approx(0.0, abs=1e-12)
        # 100 + 2/min reaches 400 after 150 minutes
        assert fit.crossing(400.0) == pytest.approx(150 * 60_000)

    def test_noise_matches_the_textbook_fit_and_widens_the_band(self):
        noise = [0.4, -0.3, 0.1, -0.5, 0.2, 0.0, 0.3, -0.2]
        points = [(i * 60_000, 10.0 + 0.5 * i + noise[i % 8]) for i in range(40)]
        fit = fit_line(points)
        assert fit is not None
        expected = statistics.linear_regression([t for t, _ in points], [y for _, y in points])
        assert fit.slope == pytest.approx(expected.slope)
        assert fit.at(0) == pytest.approx(expected.intercept)
        assert fit.slope_se > 0
        steep = fit.crossing(100.0, slope=fit.slope + 2 * fit.slope_se)
        shallow = fit.crossing(100.0, slope=fit.slope - 2 * fit.slope_se)
        middle = fit.crossing(100.0)
        assert steep is not None
        assert shallow is not None
        assert middle is not None
        assert steep < middle < shallow

    def test_a_falling_or_flat_line_never_reaches_a_ceiling(self):
        falling = fit_line([(i * 1000, 50.0 - i) for i in range(10)])
        assert falling is not None
        assert falling.crossing(100.0) is None

    def test_fewer_than_two_times_is_no_line(self):
        assert fit_line([]) is None
        assert fit_line([(5, 1.0)]) is None
        assert fit_line([(5, 1.0), (5, 2.0)]) is None

    def test_growth_percent_from_zero_is_a_hundred(self):
        fit = fit_line([(i * HOUR, float(i)) for i in range(4)])
        assert fit is not None
        assert fit.growth_percent() == 100.0


@pytest.mark.parametrize(
    ("ms", "text"),
    [(30_000, "~1m"), (45 * 60_000, "~45m"), (90 * 60_000, "~1.5h"), (72 * HOUR, "~3.0d")],
)
def test_human_duration(ms: int, text: str):
    assert human_duration(ms) == text
