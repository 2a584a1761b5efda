"""The search SLA's hysteresis and debounce, reading by reading: what decides whether an
operator is paged again (docs/features/vector-search.md#search-sla)."""

from collections.abc import Sequence

from svc_monitor.vector_search.sla import SlaState, judge

THRESHOLD = 50_000
DEBOUNCE = 600_000


def run(readings: Sequence[tuple[int, int | None]]) -> list[tuple[int, str]]:
    """(time ms, p99) readings -> the announcements, with their times."""
    state = SlaState()
    said: list[tuple[int, str]] = []
    for at, p99 in readings:
        verdict = judge(state, p99, THRESHOLD, now_ms=at, debounce_ms=DEBOUNCE)
        if verdict is not None:
            said.append((at, verdict))
    return said


def breached(state: SlaState) -> bool:
    return state.breached


def test_a_p99_hovering_just_under_the_line_does_not_recover():
    minute = 60_000
    readings = [(0, 60_000)] + [(i * minute, 48_000) for i in range(1, 30)]
    assert run(readings) == [(0, "breached")]  # 96 % of the SLA: still breached


def test_recovery_waits_for_the_debounce_under_ninety_percent():
    minute = 60_000
    readings = [(0, 60_000), (minute, 40_000), (5 * minute, 40_000), (11 * minute, 40_000)]
    assert run(readings) == [(0, "breached"), (11 * minute, "recovered")]


def test_a_dip_under_the_line_restarts_the_recovery_clock():
    minute = 60_000
    readings = [(0, 60_000), (minute, 40_000), (6 * minute, 47_000), (8 * minute, 40_000),
                (12 * minute, 40_000), (18 * minute, 40_000)]  # fmt: skip
    assert run(readings) == [(0, "breached"), (18 * minute, "recovered")]


def test_a_breach_soon_after_the_last_is_not_announced_nor_its_recovery():
    minute = 60_000
    readings = [
        (0, 60_000),
        (minute, 10_000),
        (11 * minute, 10_000),  # recovered
        (12 * minute, 70_000),  # again, 12 min after the first announcement: announced
        (13 * minute, 10_000),
        (23 * minute, 10_000),  # recovered
        (24 * minute, 70_000),  # 12 min after the last: announced
    ]
    assert run(readings) == [
        (0, "breached"),
        (11 * minute, "recovered"),
        (12 * minute, "breached"),
        (23 * minute, "recovered"),
        (24 * minute, "breached"),
    ]
    quick = [(0, 60_000), (minute, 10_000), (3 * minute, 10_000)]
    state = SlaState()
    for at, p99 in quick:
        judge(state, p99, THRESHOLD, now_ms=at, debounce_ms=2 * minute)
    assert not breached(state)  # recovered at 3 min with a 2 min debounce
    # Breached again 4 min after the first announcement, within a 10 min debounce:
    assert judge(state, 70_000, THRESHOLD, now_ms=4 * minute, debounce_ms=10 * minute) is None
    assert breached(state)
    # ... and its recovery is not announced either.
    judge(state, 10_000, THRESHOLD, now_ms=5 * minute, debounce_ms=10 * minute)
    assert judge(state, 10_000, THRESHOLD, now_ms=16 * minute, debounce_ms=10 * minute) is None


def test_a_window_without_searches_counts_as_under_the_line():
    minute = 60_000
    assert run([(0, 60_000), (minute, None), (12 * minute, None)]) == [
        (0, "breached"),
        (12 * minute, "recovered"),
    ]
