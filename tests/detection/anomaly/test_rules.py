"""The rule detectors (rules.py) against a real server's INFO rewritten: a role change,
data loss (rules A and B and what must not fire), a stuck persistence child, and memory
overhead, each with the event or pattern it leads to."""

import re
from typing import Any

import pytest

from svc_monitor.anomaly.correlation import match
from svc_monitor.detection.anomaly.detectors import ConnectionDetectors
from svc_monitor.detection.anomaly.models import Detection
from svc_monitor.detection.anomaly.rules import RuleDetectors
from svc_monitor.engine.info import parse_info
from svc_monitor.event_types.detection import DataLossDetected, FailoverCompleted, FailoverStarted
from tests.anomaly.info import START_MS, info_text, rewrite
from tests.fixtures.servers import RunningServer

SECOND = 1000
MIB = 1024 * 1024
RUN_A, RUN_B = "a" * 40, "b" * 40
REPLID_A, REPLID_B = "1" * 40, "2" * 40


@pytest.fixture(scope="module")
def real_info(valkey_server: RunningServer) -> str:
    return info_text(valkey_server)


def with_keys(info: str, keys: int) -> str:
    """`info` with its keyspace section holding `keys` keys in db0 (none: no db line)."""
    line = f"db0:keys={keys},expires=0,avg_ttl=0\r\n" if keys else ""
    return re.sub(r"# Keyspace\r\n(?:db\d+:[^\r\n]*\r\n)*", f"# Keyspace\r\n{line}", info)


class Rules:
    """One connection's rule detectors, fed INFO at simulated seconds."""

    def __init__(self, real_info: str) -> None:
        self.real_info = real_info
        self.rules = RuleDetectors("c")

    def at(self, second: int, *, keys: int | None = None, **fields: float | str) -> list[Detection]:
        text = self.real_info if keys is None else with_keys(self.real_info, keys)
        numbers = {k: v for k, v in fields.items() if not isinstance(v, str)}
        text = rewrite(text, numbers)
        for name, value in fields.items():
            if isinstance(value, str):
                assert re.search(rf"^{name}:", text, re.MULTILINE), name
                text = re.sub(rf"^{name}:[^\r\n]*", f"{name}:{value}", text, flags=re.MULTILINE)
        found: list[Detection] = []
        self.rules.observe(parse_info(text), START_MS + second * SECOND, found)
        return found


@pytest.fixture
def rules(real_info: str) -> Rules:
    return Rules(real_info)


# Any: the dicts are spread into `at(..., **fields)` next to its `keys` argument.
def primary(**fields: float | str) -> dict[str, Any]:
    base: dict[str, Any] = {
        "role": "master",
        "run_id": RUN_A,
        "master_replid": REPLID_A,
        "uptime_in_seconds": 1000,
        "master_repl_offset": 50_000,
    }
    return {**base, **fields}


def replica(**fields: float | str) -> dict[str, Any]:
    return primary(role="slave", **fields)


class TestRoleChange:
    def test_stepping_down_is_critical_and_starts_a_failover(self, rules: Rules):
        assert rules.at(0, **primary()) == []
        [d] = rules.at(1, **replica())
        assert (d.metric, d.severity) == ("role_change", "critical")
        assert isinstance(d.notice, FailoverStarted)
        assert (d.notice.previous_role, d.notice.new_role) == ("primary", "replica")
        assert d.notice.connection_id == "c"
        assert d.notice.at_ms == START_MS + SECOND
        assert match([d]).name == "failover"

    def test_a_promotion_is_a_warning_and_completes_it(self, rules: Rules):
        rules.at(0, **replica())
        [d] = rules.at(1, **primary())
        assert (d.metric, d.severity) == ("role_change", "warning")
        assert isinstance(d.notice, FailoverCompleted)
        assert (d.notice.previous_role, d.notice.new_role) == ("replica", "primary")
        assert rules.at(2, **primary()) == []  # the same role again is no change


class TestDataLoss:
    def test_a_primary_restarted_empty_by_a_new_run_id(self, rules: Rules):
        assert rules.at(0, keys=500, **primary()) == []
        [d] = rules.at(1, keys=0, **primary(run_id=RUN_B, uptime_in_seconds=2))
        assert (d.metric, d.kind, d.severity) == ("data_loss", "drop", "critical")
        notice = d.notice
        assert isinstance(notice, DataLossDetected)
        assert notice.kind == "primary_restarted_empty"
        assert (notice.previous_keys, notice.current_keys, notice.role) == (500, 0, "primary")
        assert (notice.previous_replid, notice.new_replid) == (REPLID_A, REPLID_A)
        assert notice.connected_slaves == 0
        assert match([d]).name == "data_loss"

    @pytest.mark.parametrize(
        "evidence",
        [
            pytest.param({"uptime_in_seconds": 5}, id="uptime-went-down"),
            pytest.param({"master_repl_offset": 10}, id="offset-went-down"),
            pytest.param({"master_replid": REPLID_B}, id="new-replid"),
        ],
    )
    def test_any_restart_evidence_will_do(self, rules: Rules, evidence: dict[str, float | str]):
        rules.at(0, keys=500, **primary())
        [d] = rules.at(1, keys=0, **primary(**evidence))
        assert d.metric == "data_loss"

    def test_a_flushall_without_a_restart_is_not_data_loss(self, rules: Rules):
        rules.at(0, keys=500, **primary())
        still_up = primary(uptime_in_seconds=1001, master_repl_offset=50_100)
        assert rules.at(1, keys=0, **still_up) == []

    def test_nothing_is_judged_while_loading(self, rules: Rules):
        rules.at(0, keys=500, **primary())
        restarted = primary(run_id=RUN_B, uptime_in_seconds=1)
        assert rules.at(1, keys=0, loading=1, **restarted) == []
        assert rules.at(2, keys=0, async_loading=1, **restarted) == []
        assert rules.at(3, keys=500, **restarted) == []  # loaded back: nothing was lost

    def test_a_replica_wiped_by_a_new_history(self, rules: Rules):
        rules.at(0, keys=1000, **replica())
        [d] = rules.at(1, keys=100, **replica(master_replid=REPLID_B))  # 10 % left
        notice = d.notice
        assert isinstance(notice, DataLossDetected)
        assert notice.kind == "replica_wiped"
        assert (notice.previous_keys, notice.current_keys, notice.role) == (1000, 100, "replica")
        assert (notice.previous_replid, notice.new_replid) == (REPLID_A, REPLID_B)

    def test_a_replica_keeping_most_keys_or_its_history_is_fine(self, rules: Rules):
        rules.at(0, keys=1000, **replica())
        assert rules.at(1, keys=101, **replica(master_replid=REPLID_B)) == []
        assert rules.at(2, keys=0, **replica(master_replid=REPLID_B)) == []  # same history: a flush

    def test_a_role_change_is_not_data_loss(self, rules: Rules):
        rules.at(0, keys=1000, **replica())
        found = rules.at(1, keys=0, **primary(master_replid=REPLID_B, run_id=RUN_B))
        assert [d.metric for d in found] == ["role_change"]


def child(perc: float, processed: int, elapsed: int) -> dict[str, Any]:
    return {
        "rdb_bgsave_in_progress": 1,
        "current_fork_perc": perc,
        "current_save_keys_processed": processed,
        "rdb_current_bgsave_time_sec": elapsed,
    }


class TestPersistenceChild:
    def test_progress_frozen_for_a_minute_is_critical_once(self, rules: Rules):
        assert rules.at(0, **child(42.5, 1000, 10)) == []
        assert rules.at(59, **child(42.5, 1000, 69)) == []
        [d] = rules.at(60, **child(42.5, 1000, 70))
        assert (d.metric, d.severity) == ("persistence_child", "critical")
        assert "BGSAVE child made no progress for 60 s" in d.message
        assert match([d]).name == "persistence_stall"
        assert rules.at(61, **child(42.5, 1000, 71)) == []  # once per child

    def test_a_child_moving_on_is_fine_until_it_runs_long(self, rules: Rules):
        found = [d for s in range(0, 600, 5) for d in rules.at(s, **child(s / 10, s * 10, s))]
        assert [(d.severity, d.value) for d in found] == [("warning", 120.0)]
        [d] = rules.at(600, **child(60.0, 6000, 600))
        assert (d.severity, d.message) == (
            "critical",
            "CRITICAL: persistence_child: BGSAVE child running for 600 s",
        )

    def test_the_next_child_starts_afresh(self, rules: Rules):
        rules.at(0, **child(1.0, 10, 0))
        assert [d.severity for d in rules.at(60, **child(1.0, 10, 130))] == ["critical"]
        assert rules.at(61, rdb_bgsave_in_progress=0, rdb_current_bgsave_time_sec=-1) == []
        aof = {"aof_rewrite_in_progress": 1, "aof_current_rewrite_time_sec": 125}
        [d] = rules.at(70, current_fork_perc=5.0, **aof)
        assert (d.severity, "AOF rewrite" in d.message) == ("warning", True)


class TestMemoryOverhead:
    def test_climbing_into_each_level_fires_once(self, rules: Rules):
        used = {"used_memory": 100 * MIB}
        # 59 %: a dataset of tiny values, measured on Valkey 9.1 (rules.py)
        assert rules.at(0, used_memory_overhead=59 * MIB, **used) == []
        [warn] = rules.at(1, used_memory_overhead=76 * MIB, **used)
        assert (warn.metric, warn.severity) == ("memory_overhead", "warning")
        assert warn.value == pytest.approx(0.76)
        assert match([warn]).name == "memory_overhead"
        assert rules.at(2, used_memory_overhead=77 * MIB, **used) == []
        assert rules.at(70, used_memory_overhead=72 * MIB, **used) == []  # not re-armed
        [crit] = rules.at(71, used_memory_overhead=91 * MIB, **used)
        assert crit.severity == "critical"
        assert rules.at(140, used_memory_overhead=60 * MIB, **used) == []  # re-armed
        [again] = rules.at(141, used_memory_overhead=80 * MIB, **used)
        assert again.severity == "warning"

    def test_a_small_instance_is_mostly_overhead_and_that_is_fine(self, rules: Rules):
        assert rules.at(0, used_memory=3 * MIB, used_memory_overhead=int(2.8 * MIB)) == []


def test_the_rules_run_with_the_z_score_detectors(real_info: str):
    detectors = ConnectionDetectors("c")
    before = rewrite(with_keys(real_info, 500), {"uptime_in_seconds": 1000})
    assert detectors.observe(parse_info(before), START_MS) == []
    after = rewrite(with_keys(real_info, 0), {"uptime_in_seconds": 1})
    found = detectors.observe(parse_info(after), START_MS + SECOND)
    assert [d.metric for d in found] == ["data_loss"]
