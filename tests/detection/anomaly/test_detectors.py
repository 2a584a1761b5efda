"""The detectors against rewritten real INFO with a simulated clock: no false positives
over long steady loads, and the spikes and drops that matter are found."""

import pytest

from svc_monitor.detection.anomaly.detectors import METRICS, READY_AT, RULES, ConnectionDetectors
from svc_monitor.detection.anomaly.models import Detection
from svc_monitor.engine.info import ParsedInfo, parse_info
from tests.anomaly.info import START_MS, info_text, rewrite, steady_load
from tests.fixtures.servers import RunningServer

SECOND = 1000


@pytest.fixture(scope="module")
def real_info(valkey_server: RunningServer) -> str:
    return info_text(valkey_server)


def feed(
    detectors: ConnectionDetectors, infos: list[ParsedInfo], start_s: int = 0
) -> list[Detection]:
    found = []
    for i, info in enumerate(infos):
        found.extend(detectors.observe(info, START_MS + (start_s + i) * SECOND))
    return found


class TestSteadyLoad:
    @pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
    def test_ten_minutes_of_steady_load_raise_nothing(self, real_info: str, seed: int):
        detectors = ConnectionDetectors("c")
        found = feed(detectors, steady_load(real_info, 600, seed=seed))
        assert found == []
        states = {b.metric: b for b in detectors.buffer_states()}
        assert states["memory_used"].ready
        assert states["memory_used"].samples == 300
        assert states["commands_rate"].ready  # counters became rates

    def test_nothing_is_judged_while_warming_up(self, real_info: str):
        detectors = ConnectionDetectors("c")
        steady = steady_load(real_info, READY_AT - 1, seed=9)
        huge = parse_info(rewrite(real_info, {"used_memory": 10**12}))
        assert feed(detectors, [*steady, huge, huge, huge]) == []


class TestSpikes:
    def test_memory_spike_needs_three_samples_then_cools_down(self, real_info: str):
        detectors = ConnectionDetectors("c")
        feed(detectors, steady_load(real_info, 120, seed=1))
        jump = parse_info(rewrite(real_info, {"used_memory": 80_000_000}))
        assert detectors.observe(jump, START_MS + 120 * SECOND) == []
        assert detectors.observe(jump, START_MS + 121 * SECOND) == []
        [d] = [
            x for x in detectors.observe(jump, START_MS + 122 * SECOND) if x.metric == "memory_used"
        ]
        assert d.kind == "spike"
        assert d.severity == "critical"  # 30 MB over a 50 MB mean: z = 30 / 1 MB-floor = 30
        assert d.baseline == pytest.approx(50_000_000, rel=0.05)
        assert "memory_used spike detected" in d.message
        # in cooldown for 60 s
        later = [detectors.observe(jump, START_MS + s * SECOND) for s in range(123, 150)]
        assert not any(x.metric == "memory_used" for batch in later for x in batch)

    def test_a_drop_of_clients_is_reported_but_not_of_memory(self, real_info: str):
        detectors = ConnectionDetectors("c")
        feed(detectors, steady_load(real_info, 120, seed=1))
        low = parse_info(rewrite(real_info, {"connected_clients": 1, "used_memory": 1_000_000}))
        found = feed(detectors, [low] * 3, start_s=120)
        seen = {(d.metric, d.kind) for d in found}
        assert ("connected_clients", "drop") in seen
        assert not any(metric == "memory_used" for metric, _ in seen)

    def test_a_counter_going_back_is_a_restart_not_a_drop(self, real_info: str):
        detectors = ConnectionDetectors("c")
        feed(detectors, steady_load(real_info, 120, seed=1))
        restarted = parse_info(rewrite(real_info, {"total_commands_processed": 5}))
        found = feed(detectors, [restarted], start_s=120)
        assert not any(d.metric == "commands_rate" for d in found)


def test_at_least_twenty_detectors():
    assert len(METRICS) + len(RULES) >= 20
    assert len({m.name for m in METRICS}) == len(METRICS)
