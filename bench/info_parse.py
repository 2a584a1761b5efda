"""CPU cost of parsing one INFO reply: ours against valkey-py's own parser.

Prints the median microseconds per call of `svc_monitor.engine.info.parse_info` and of
valkey-py's `valkey._parsers.helpers.parse_info` (what `client.info()` runs through its
response callback) on the same recorded Valkey 9.1 `INFO everything` reply, as bytes, the
way each receives it. Repeats alternate between the two so machine noise hits both alike.
--quick makes two short repeats: it checks that the bench runs, its figures mean nothing.

    .venv/bin/python bench/info_parse.py [--repeats 15] [--reply PATH] [--quick]
"""

import argparse
import statistics
import timeit
from collections.abc import Callable
from pathlib import Path

from valkey._parsers import helpers

from svc_monitor.engine.info import parse_info

# valkey-py leaves this helper unannotated; name the type it has at run time.
valkey_py_parse_info: Callable[[bytes], dict[str, object]] = helpers.parse_info

DEFAULT_REPLY = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "engine"
    / "replies"
    / "valkey-9.1"
    / "info_everything.txt"
)


def calls_per_repeat(func: Callable[[], object], seconds: float) -> int:
    """Enough calls for one repeat to take about `seconds`, so timer resolution is moot."""
    timer = timeit.Timer(func)
    number, elapsed = timer.autorange()
    return max(1, int(number * seconds / elapsed))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--reply", type=Path, default=DEFAULT_REPLY)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    repeat_s = 0.2
    if args.quick:
        args.repeats, repeat_s = 2, 0.01

    raw = args.reply.read_bytes()
    # Same input, and both must read all of it: a parser that gave up early would win.
    ours_result = parse_info(raw)
    assert ours_result.skipped_lines == 0, ours_result.skipped_lines
    assert "cmdstat_get" in valkey_py_parse_info(raw)

    def ours() -> object:
        # Sections parse lazily; reading skipped_lines parses them all, like valkey-py does.
        info = parse_info(raw)
        return info.skipped_lines

    def ours_split_only() -> object:
        return parse_info(raw)

    def ours_poll_read() -> object:
        # What a 1 s INFO poll typically touches: a few fields of three sections.
        info = parse_info(raw)
        return (
            info.get_int("memory", "used_memory"),
            info.get_int("stats", "instantaneous_ops_per_sec"),
            info.get_str("replication", "role"),
        )

    def theirs() -> object:
        return valkey_py_parse_info(raw)

    funcs = {
        "parse_info": ours,
        "valkey-py": theirs,
        "split only": ours_split_only,
        "poll read": ours_poll_read,
    }
    numbers = {label: calls_per_repeat(func, repeat_s) for label, func in funcs.items()}
    samples: dict[str, list[float]] = {label: [] for label in funcs}
    for _ in range(args.repeats):
        for label, func in funcs.items():
            seconds = timeit.Timer(func).timeit(numbers[label])
            samples[label].append(seconds / numbers[label] * 1e6)

    ours_us = statistics.median(samples["parse_info"])
    theirs_us = statistics.median(samples["valkey-py"])
    lines = raw.count(b"\n")
    print(f"reply: {args.reply.name}, {len(raw)} bytes, {lines} lines")
    for label, values in samples.items():
        print(
            f"  {label:<11} median {statistics.median(values):7.1f} us  "
            f"min {min(values):7.1f}  max {max(values):7.1f}  ({args.repeats} repeats)"
        )
    # Each repeat timed both back to back, so their ratio is steadier than either median
    # when other work on the machine comes and goes.
    paired = statistics.median(
        t / o for o, t in zip(samples["parse_info"], samples["valkey-py"], strict=True)
    )
    print(f"  median of per-repeat ratios: {paired:.2f}x")
    print(
        f"parse_info: {ours_us:.1f} us/call "
        f"(valkey-py: {theirs_us:.1f} us/call, {theirs_us / ours_us:.1f}x faster)"
    )


if __name__ == "__main__":
    main()
