"""Run every bench in bench/, one after another, each in a process of its own.

A bench nobody runs rots: it stops starting, or times error answers, and nobody notices
until someone needs its figure. With --quick every bench runs at tiny sizes (their
figures mean nothing), so CI can run the whole set in a few minutes and a bench that no
longer runs fails the build. Without it, each runs at its own default sizes.

Every `bench/*.py` is a bench except this script and helper modules, whose names start
with an underscore. For each, it prints the name, command line, start date and duration,
with the bench's own output in between; then one line per bench. Exits 1 if any bench
failed (a non-zero exit, or no exit within --timeout: its whole process group is then
stopped, so nothing it started stays behind).

    .venv/bin/python bench/run_all.py [--quick] [--timeout SECONDS] [NAME ...]
"""

import argparse
import datetime
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


@dataclass(frozen=True)
class Outcome:
    name: str
    seconds: float
    failure: str | None  # None: it passed


def benches() -> list[Path]:
    return sorted(
        path
        for path in BENCH.glob("*.py")
        if path.name != Path(__file__).name and not path.name.startswith("_")
    )


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """The bench and whatever it started: its servers, its load and receiver processes."""
    for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run(path: Path, quick: bool, timeout: float) -> Outcome:
    command = [sys.executable, str(path.relative_to(ROOT))] + (["--quick"] if quick else [])
    now = datetime.datetime.now().astimezone()
    print(f"== {path.name}", flush=True)
    print(f"   command: {shlex.join(command)}", flush=True)
    print(f"   started: {now.isoformat(sep=' ', timespec='seconds')}", flush=True)
    started = time.perf_counter()
    # A process group of its own, so a bench that overruns is stopped with its children.
    process = subprocess.Popen(command, cwd=ROOT, process_group=0)
    try:
        code = process.wait(timeout)
        failure = None if code == 0 else f"exit code {code}"
    except subprocess.TimeoutExpired:
        stop_group(process)
        failure = f"no exit within {timeout:g} s"
    except BaseException:  # Ctrl-C reaches only our group: take the bench down with us
        stop_group(process)
        raise
    seconds = time.perf_counter() - started
    verdict = "ok" if failure is None else f"FAILED ({failure})"
    print(f"== {path.name}: {verdict} in {seconds:.1f} s\n", flush=True)
    return Outcome(path.name, seconds, failure)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to every bench")
    parser.add_argument(
        "--timeout", type=float, help="seconds each bench may take (300 quick, 3600 otherwise)"
    )
    parser.add_argument("names", nargs="*", help="only these benches (file name, .py optional)")
    args = parser.parse_args()
    timeout = args.timeout or (300.0 if args.quick else 3600.0)
    chosen = benches()
    if args.names:
        wanted = {name.removesuffix(".py") for name in args.names}
        chosen = [path for path in chosen if path.stem in wanted]
        unknown = wanted - {path.stem for path in chosen}
        if unknown:
            parser.error(f"no such bench: {', '.join(sorted(unknown))}")
    outcomes = [run(path, args.quick, timeout) for path in chosen]
    mode = "quick" if args.quick else "full"
    print(f"benches ({mode}):")
    for outcome in outcomes:
        verdict = "ok" if outcome.failure is None else f"FAILED ({outcome.failure})"
        print(f"  {outcome.name:<22} {outcome.seconds:7.1f} s  {verdict}")
    failed = [outcome.name for outcome in outcomes if outcome.failure is not None]
    total = sum(outcome.seconds for outcome in outcomes)
    print(f"total {total:.1f} s; {len(failed)} of {len(outcomes)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
