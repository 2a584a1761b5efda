"""One index's search SLA, judged at each latency reading: hysteresis and debounce
(docs/features/vector-search.md#search-sla).

Breached when the index's p99 goes over its threshold. Recovered only once the p99 has
stayed at or under RECOVERY_SHARE of the threshold for the debounce period, so a p99
hovering at the line does not flap. A breach is announced at most once per debounce
period: one that ends and starts again sooner stays breached without a second event,
and its recovery is announced only if its breach was.
"""

from dataclasses import dataclass
from typing import Literal

RECOVERY_SHARE = 0.9

Verdict = Literal["breached", "recovered"]


@dataclass(slots=True)
class SlaState:
    breached: bool = False
    since_ms: int | None = None  # when the current breach began
    good_since_ms: int | None = None  # when the p99 last came under the recovery line
    announced: bool = False  # whether the current breach's event was sent
    last_announced_ms: int | None = None


def judge(
    state: SlaState, p99_us: int | None, threshold_us: int, *, now_ms: int, debounce_ms: int
) -> Verdict | None:
    """Move `state` by one reading; what to announce, if anything. A window without
    calls (p99 None) counts as under the line: nothing was slow."""
    if p99_us is not None and p99_us > threshold_us:
        state.good_since_ms = None
        if state.breached:
            return None
        state.breached, state.since_ms = True, now_ms
        last = state.last_announced_ms
        state.announced = last is None or now_ms - last >= debounce_ms
        if state.announced:
            state.last_announced_ms = now_ms
            return "breached"
        return None
    if not state.breached:
        return None
    if p99_us is not None and p99_us > RECOVERY_SHARE * threshold_us:
        state.good_since_ms = None  # between the lines: still breached
        return None
    if state.good_since_ms is None:
        state.good_since_ms = now_ms
    if now_ms - state.good_since_ms < debounce_ms:
        return None
    announced = state.announced
    state.breached, state.since_ms, state.good_since_ms, state.announced = False, None, None, False
    return "recovered" if announced else None
