"""What writing history costs, and what a request waits behind it while the loop is busy.

History rows (one INFO sample per connection a second, commandstats, log entries) are
queued and written in one transaction a second on the storage thread. At a thousand
connections that is a thousand `stats_samples` rows a second, written while the event
loop is busy polling. For memory and SQLite-file storage this prints:

  - microseconds per row of one flush of `--rows` rows with the loop idle (best of
    `--repeats`): the storage thread's own cost;
  - the same flush of a thousand rows while the event loop burns CPU in 0.5 ms steps, as a
    saturated loop does, letting go of the interpreter lock between steps: the storage
    thread must win the lock back after every call into SQLite (kit/gil_handover.py);
  - how long `/health`'s storage ping waits when it is handed in just after that flush
    started (median of the repeats).

    .venv/bin/python bench/history_writes.py [--rows 5000] [--repeats 8] [--quick]
"""

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from svc_monitor.config import StorageType
from svc_monitor.info_history.store import stats_samples
from svc_monitor.storage.database import Database

BUSY_STEP_S = 0.0005


def rows(count: int, start: int) -> list[dict[str, Any]]:
    """Samples as the INFO poll writes them: every column filled."""
    return [
        {
            "connection_id": f"c{i % 1000}",
            "captured_at": start + i,
            "ops_per_sec": i,
            "connected_clients": 12,
            "blocked_clients": 0,
            "used_memory": 1_048_576 + i,
            "cpu_sys_percent": 0.4,
            "cpu_user_percent": 1.2,
            "net_input_kbps": 3.5,
            "net_output_kbps": 7.25,
            "keyspace_hits": 10 * i,
            "keyspace_misses": i,
            "hit_ratio": 90.9,
            "keys": 600,
            "expires": 300,
            "evicted_keys": 0,
            "expired_keys": 3,
            "connected_replicas": 0,
            "repl_offset": 0,
            "role": "master",
        }
        for i in range(count)
    ]


async def idle_flush_us_per_row(db: Database, count: int, repeats: int) -> float:
    best = float("inf")
    for repeat in range(repeats):
        db.inserts.add(stats_samples, rows(count, start=repeat * count))
        started = time.perf_counter()
        await db.inserts.flush()
        best = min(best, time.perf_counter() - started)
    return best * 1e6 / count


async def busy_loop(stop: asyncio.Event) -> None:
    """The event loop of a service polling a thousand servers: always something to do."""
    while not stop.is_set():
        until = time.perf_counter() + BUSY_STEP_S
        while time.perf_counter() < until:
            pass
        await asyncio.sleep(0)


async def busy_flush_and_ping(db: Database, repeats: int, offset: int) -> tuple[float, float]:
    """Median ms of a 1,000-row flush, and of a ping handed in just after it, both while
    the loop is busy."""
    flushes: list[float] = []
    pings: list[float] = []
    for repeat in range(repeats):
        stop = asyncio.Event()
        burner = asyncio.create_task(busy_loop(stop))
        db.inserts.add(stats_samples, rows(1000, start=offset + repeat * 1000))
        started = time.perf_counter()
        flush = asyncio.create_task(db.inserts.flush())
        await asyncio.sleep(0)  # the flush is handed to the storage thread first
        ping_started = time.perf_counter()
        await db.ping()
        pings.append((time.perf_counter() - ping_started) * 1000)
        await flush
        flushes.append((time.perf_counter() - started) * 1000)
        stop.set()
        await burner
    return statistics.median(flushes), statistics.median(pings)


async def measure(kind: StorageType, path: Path, count: int, repeats: int) -> None:
    db = Database.open(kind, sqlite_path=path)
    await db.migrate()
    try:
        per_row = await idle_flush_us_per_row(db, count, repeats)
        flush_ms, ping_ms = await busy_flush_and_ping(db, repeats, offset=count * repeats)
    finally:
        await db.close()
    print(
        f"{kind.value:<7} flush {per_row:5.1f} us/row idle; with the loop busy: "
        f"1,000 rows {flush_ms:7.1f} ms, a ping behind them waits {ping_ms:7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; figures mean nothing")
    args = parser.parse_args()
    count, repeats = (100, 2) if args.quick else (args.rows, args.repeats)
    with tempfile.TemporaryDirectory(prefix="history-writes-") as workdir:
        for kind in (StorageType.MEMORY, StorageType.SQLITE):
            asyncio.run(measure(kind, Path(workdir) / f"{kind.value}.db", count, repeats))


if __name__ == "__main__":
    main()
