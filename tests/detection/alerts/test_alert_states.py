"""Alert states (detection/alerts/service.py): a threshold event fires once per crossing and
re-arms below threshold x hysteresisFactor, each consumer with its own state, in an LRU
with a TTL; every change is told, and a restored alert stays quiet."""

from svc_monitor.detection.alerts.schemas import Thresholds
from svc_monitor.detection.alerts.service import AlertStates
from svc_monitor.event_types.base import Measured


class Clock:
    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


class TestAlertStates:
    def test_oscillating_above_recovery_fires_once_and_rearms_below_it(self) -> None:
        states = AlertStates()
        key = ("hook", "conn", "memory.critical")
        fired = [
            states.crossed(key, value, threshold=90, factor=0.9)
            for value in [50, 91, 85, 91, 85, 91, 80.9, 85, 91]
        ]
        assert fired == [False, True, False, False, False, False, False, False, True]

    def test_each_webhook_has_its_own_state(self) -> None:
        states = AlertStates()
        assert states.crossed(("a", "c", "e"), 95, threshold=90, factor=0.9)
        assert states.crossed(("b", "c", "e"), 95, threshold=90, factor=0.9)
        assert not states.crossed(("a", "c", "e"), 95, threshold=90, factor=0.9)

    def test_oldest_alert_is_evicted_past_capacity(self) -> None:
        states = AlertStates(capacity=3)
        for name in "abcd":
            states.crossed((name, "c", "e"), 95, threshold=90, factor=0.9)
        assert len(states) == 3
        assert not states.is_active(("a", "c", "e"))
        assert states.crossed(("a", "c", "e"), 95, threshold=90, factor=0.9)  # fires again

    def test_alert_expires_after_its_ttl(self) -> None:
        clock = Clock()
        states = AlertStates(ttl_ms=1000, clock=clock)
        key = ("a", "c", "e")
        assert states.crossed(key, 95, threshold=90, factor=0.9)
        clock.ms = 999
        assert not states.crossed(key, 95, threshold=90, factor=0.9)
        clock.ms = 1000
        assert states.crossed(key, 95, threshold=90, factor=0.9)

    def test_each_start_and_stop_is_told_and_a_restored_alert_stays_quiet(self) -> None:
        clock = Clock()
        told: list[tuple[tuple[str, str, str], int | None]] = []
        states = AlertStates(clock=clock, on_change=lambda key, at: told.append((key, at)))
        key = ("a", "c", "e")
        clock.ms = 5
        assert states.crossed(key, 95, threshold=90, factor=0.9)
        assert not states.crossed(key, 80, threshold=90, factor=0.9)  # recovered
        assert told == [(key, 5), (key, None)]
        # Another replica's alert, still firing when this one takes the connection over.
        taken_over = AlertStates(clock=clock)
        taken_over.restore(key, 5)
        assert not taken_over.crossed(key, 95, threshold=90, factor=0.9)
        assert taken_over.crossed(key, 80, threshold=90, factor=0.9) is False
        assert taken_over.crossed(key, 95, threshold=90, factor=0.9)  # re-armed, fires
        # One past its TTL is not restored: it fires as the daily reminder would.
        expired = AlertStates(clock=clock, ttl_ms=10)
        clock.ms = 100
        expired.restore(key, 5)
        assert expired.crossed(key, 95, threshold=90, factor=0.9)


class TestFires:
    """`fires`: the level a consumer's thresholds give a reading, judged by `crossed`."""

    @staticmethod
    def reading(value: float, automatic: float | None = None) -> Measured:
        return Measured(
            event_type="connection.spike",
            value=value,
            threshold="connectionSpikeCount",
            data=lambda level: {"value": value, "level": level},
            automatic=automatic,
        )

    def test_a_configured_level_fires_once_with_its_payload(self) -> None:
        states = AlertStates()
        key = ("hook", "conn", "connection.spike")
        thresholds = Thresholds(connectionSpikeCount=100)
        assert states.fires(key, self.reading(150), thresholds, factor=0.9) == {
            "value": 150,
            "level": 100.0,
        }
        assert states.fires(key, self.reading(150), thresholds, factor=0.9) is None

    def test_zero_takes_the_automatic_level_and_nothing_fires_while_it_learns(self) -> None:
        states = AlertStates()
        key = ("hook", "conn", "connection.spike")
        thresholds = Thresholds()  # connectionSpikeCount 0: the automatic baseline
        assert states.fires(key, self.reading(500), thresholds, factor=0.9) is None
        assert not states.is_active(key)
        fired = states.fires(key, self.reading(500, automatic=40), thresholds, factor=0.9)
        assert fired == {"value": 500, "level": 40}
