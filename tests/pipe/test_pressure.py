"""The rule that holds back expensive calls while a server is under pressure."""

import pytest

from svc_monitor.engine.info import parse_info
from svc_monitor.pipe.live_state import LiveState
from svc_monitor.pipe.live_view import cpu_reading
from svc_monitor.pipe.observation import Observation
from svc_monitor.pipe.pressure import pressure_reason, reading


def observed(
    at_ms: int, *, cpu: float = 1.0, clients: int = 10, round_trip_ms: float = 1.0
) -> Observation:
    text = (
        f"# Clients\r\nconnected_clients:{clients}\r\n"
        f"# CPU\r\nused_cpu_sys:{cpu / 2:.6f}\r\nused_cpu_user:{cpu / 2:.6f}\r\n"
    )
    return Observation(
        connection_id="c1",
        received_at_ms=at_ms,
        info=parse_info(text),
        round_trip_ms=round_trip_ms,
    )


class TestPressureRule:
    def test_quiet_server_is_not_under_pressure(self):
        assert reading(cpu_reading(observed(0, cpu=10.0)), observed(1000, cpu=10.2)) is None

    def test_busy_cpu_is_pressure(self):
        reason = reading(cpu_reading(observed(0, cpu=10.0)), observed(1000, cpu=10.9))
        assert reason is not None
        assert "CPU at 90%" in reason

    def test_slow_info_round_trip_is_pressure(self):
        reason = reading(None, observed(0, round_trip_ms=250))
        assert reason is not None
        assert "250 ms" in reason

    def test_many_clients_is_pressure(self):
        reason = reading(None, observed(0, clients=6000))
        assert reason is not None
        assert "6000 clients" in reason

    @pytest.mark.parametrize(
        ("before", "after"),
        [
            pytest.param(50.0, 10.0, id="cpu-counter-went-down-after-restart"),
            pytest.param(10.0, 10.0, id="idle"),
        ],
    )
    def test_restarts_and_idle_servers_read_as_calm(self, before: float, after: float):
        assert reading(cpu_reading(observed(0, cpu=before)), observed(1000, cpu=after)) is None

    def test_live_state_supplies_the_last_two_readings(self):
        state = LiveState()
        assert pressure_reason(state, "c1") is None
        state.observe(observed(0, cpu=5.0))
        assert pressure_reason(state, "c1") is None  # one reading: no rate yet
        state.observe(observed(500, cpu=5.45))
        assert pressure_reason(state, "c1") == "CPU at 90% of a core (over 80%)"
