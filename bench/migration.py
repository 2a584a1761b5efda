"""Migration execution: how fast the copy goes by each method, and what it costs the
source, as other clients see it.

For each method it starts two real servers on free loopback ports: Redis 7.0 (Debian's
redis-server) to Valkey 9 for `dump_restore`, Valkey 9 to Redis 7.0 for `type_aware`
(Redis 7.0 cannot read Valkey 9's payloads). It loads the source with --keys keys of
every type (a third with a TTL), then measures the source's latency from a separate
process (PING round trips every 0.5 ms on their own connection): idle, then while the
service copies. The service is the real one, in this process (create_app, its API, its
poll of the source, memory storage), licensed by a key made and trusted for the run.

Prints, per method: the copy phase's keys/s and MB/s, the whole job's seconds (with the
catch-up pass), the source's PING p50/p99/max idle and during the copy, this process's
CPU seconds per minute of the copy, and the commands and bytes the source was sent.
Target: p99 during the copy under 2 ms. --quick copies 2,000 keys: it checks that the
bench runs, its figures mean nothing.

    .venv/bin/python bench/migration.py [--keys 100000] [--quick]
"""

import argparse
import asyncio
import multiprocessing
import resource
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import jwt
import valkey
from pydantic import SecretStr

from _servers import Server, start_servers, stop_servers
from key_analytics import Latency, latency, pinger, pinging
from svc_monitor.app import create_app
from svc_monitor.config import Settings, StorageType
from svc_monitor.licensing.keys import trusted_for_tests
from svc_monitor.licensing.tokens import ISSUER, key_pair

REDIS7 = Path("/usr/bin/redis-server")
KID = "lic-2099-02"


def load(port: int, keys: int) -> None:
    """`keys` keys: 40 % strings, 20 % hashes, 10 % each lists, sets, sorted sets and
    streams; every third with an hour's TTL."""
    client: Any = valkey.Valkey(port=port)
    pipe = client.pipeline(transaction=False)
    for i in range(keys):
        kind = i % 10
        key = f"k:{i}"
        if kind < 4:
            pipe.set(key, "v" * (20 + i % 200))
        elif kind < 6:
            pipe.hset(key, mapping={f"f{j}": f"value-{j}" for j in range(1 + i % 8)})
        elif kind == 6:
            pipe.rpush(key, *[f"e{j}" for j in range(1 + i % 10)])
        elif kind == 7:
            pipe.sadd(key, *[f"m{j}" for j in range(1 + i % 10)])
        elif kind == 8:
            pipe.zadd(key, {f"m{j}": j for j in range(1 + i % 10)})
        else:
            pipe.xadd(key, {"f": i})
        if i % 3 == 0:
            pipe.pexpire(key, 3_600_000)
        if i % 5_000 == 4_999:
            pipe.execute()
    pipe.execute()
    client.close()


@contextmanager
def pinging_until(port: int) -> Iterator[Any]:
    """PINGs until the block ends; yields a getter for their timings."""
    stop = multiprocessing.Event()
    out: multiprocessing.Queue[list[float]] = multiprocessing.Queue()
    # An hour at most (bounded); the block's end stops it sooner.
    process = multiprocessing.Process(target=pinger, args=(port, 3600.0, out, stop))
    process.start()
    time.sleep(0.2)
    found: list[list[float]] = []
    try:
        yield found
    finally:
        stop.set()
        found.append(out.get(timeout=30))
        process.join(timeout=10)


def licence(private_pem: str) -> str:
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "sub": str(uuid.uuid4()),
        "jti": str(uuid.uuid4()),
        "tier": "pro",
        "features": [],
        "customer": {"name": "bench", "email": "bench@svc.test"},
        "instanceLimit": 5,
        "mode": "offline",
        "iat": now,
        "exp": now + 90 * 86400,
    }
    return jwt.encode(claims, private_pem, algorithm="RS256", headers={"kid": KID})


def server_stats(port: int) -> tuple[dict[str, int], int, int]:
    client: Any = valkey.Valkey(port=port)
    calls = {k.removeprefix("cmdstat_"): v["calls"] for k, v in client.info("commandstats").items()}
    stats = client.info("stats")
    client.close()
    return calls, int(stats["total_net_input_bytes"]), int(stats["total_net_output_bytes"])


async def copy(source: Server, target: Server, workdir: Path, token: str) -> dict[str, Any]:
    settings = Settings(
        _env_file=None,
        NODE_ENV="test",
        STORAGE_TYPE=StorageType.MEMORY,
        SVC_DATA_DIR=workdir / f"data-{source.port}",
        ENTITLEMENT_URL="http://127.0.0.1:9",
        RELEASES_URL="http://127.0.0.1:9",
        WORKSPACE_DISABLED=True,
        DB_HOST="127.0.0.1",
        DB_PORT=source.port,
        SVC_OFFLINE_LICENSE=SecretStr(token),
    )
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://svc.bench", timeout=30) as api,
    ):
        made = await api.post(
            "/api/connections", json={"name": "target", "host": "127.0.0.1", "port": target.port}
        )
        listed = (await api.get("/api/connections")).json()
        source_id = next(c["id"] for c in listed if c["port"] == source.port)
        body = {"sourceConnectionId": source_id, "targetConnectionId": made.json()["id"]}
        before = server_stats(source.port)
        cpu_before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        with pinging_until(source.port) as timings:
            job = (await api.post("/api/migration/execution", json=body)).json()
            copy_s = None
            for _ in range(36_000):  # bounded: an hour
                job = (await api.get(f"/api/migration/execution/{job['id']}")).json()
                phase = (job.get("progressDetail") or {}).get("phase")
                if copy_s is None and phase not in (None, "functions", "copy"):
                    copy_s = time.perf_counter() - started
                    cpu_copy = resource.getrusage(resource.RUSAGE_SELF)
                if job["status"] not in ("pending", "running"):
                    break
                await asyncio.sleep(0.1)
        total_s = time.perf_counter() - started
        after = server_stats(source.port)
    if job["status"] != "completed":
        raise RuntimeError(f"the copy did not complete: {job.get('error')}")
    copy_s = copy_s or total_s
    cpu_s = (cpu_copy.ru_utime + cpu_copy.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    sent = {
        c: after[0][c] - before[0].get(c, 0) for c in after[0] if after[0][c] > before[0].get(c, 0)
    }
    return {
        "report": job["report"],
        "copy_s": copy_s,
        "total_s": total_s,
        "cpu_per_min": cpu_s / copy_s * 60,
        "during": latency(timings[0]),
        "commands": sent,
        "bytes_in": after[1] - before[1],
        "bytes_out": after[2] - before[2],
    }


def report(method: str, from_redis: bool, keys: int, idle: Latency, run: dict[str, Any]) -> None:
    r = run["report"]
    mb = r["copiedBytes"] / 1_048_576
    ends = "Redis 7.0 to Valkey 9" if from_redis else "Valkey 9 to Redis 7.0"
    during: Latency = run["during"]
    rate = r["copiedKeys"] / run["copy_s"]
    print(f"{method} ({ends}), {keys:,} keys (method used: {r['method']}):")
    print(f"  copy phase:  {r['copiedKeys']:,} keys, {mb:,.1f} MB in {run['copy_s']:.1f} s")
    print(f"               {rate:,.0f} keys/s, {mb / run['copy_s']:.2f} MB/s")
    print(
        f"  whole job:   {run['total_s']:.1f} s with the catch-up "
        f"({r['checkedKeys']:,} keys compared, {r['recopiedKeys']} copied again)"
    )
    print(f"  source idle:       {idle}")
    print(f"  source during job: {during}")
    print(f"  svc-monitor CPU:   {run['cpu_per_min']:.1f} s per minute of the copy phase")
    top = sorted(run["commands"].items(), key=lambda i: -i[1])[:8]
    print(
        f"  the source was sent {run['bytes_in'] / 1_048_576:,.1f} MB and answered "
        f"{run['bytes_out'] / 1_048_576:,.1f} MB"
    )
    print("  commands: " + ", ".join(f"{c} {n:,}" for c, n in top))
    verdict = "met" if during.p99 < 2.0 else "MISSED"
    print(f"  target p99 < 2 ms during the job: {verdict} ({during.p99:.3f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    keys = 2_000 if args.quick else args.keys
    private_pem, public_pem = key_pair(bits=2048)
    token = licence(private_pem)
    with (
        tempfile.TemporaryDirectory(prefix="migration-bench-") as workdir,
        trusted_for_tests(KID, public_pem),
    ):
        for method, source_binary, target_binary in (
            ("dump_restore", REDIS7, None),
            ("type_aware", None, REDIS7),
        ):
            servers = start_servers(1, Path(workdir), binary=source_binary)
            servers += start_servers(1, Path(workdir), binary=target_binary)
            try:
                source, target = servers
                load(source.port, keys)
                with pinging(source.port, 3.0) as out:
                    idle = latency(out.get(timeout=20))
                run = asyncio.run(copy(source, target, Path(workdir), token))
            finally:
                stop_servers(servers)
            report(method, source_binary is not None, keys, idle, run)


if __name__ == "__main__":
    main()
