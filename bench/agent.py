"""The agent link's cost: latency added per command, commands/s through one agent, and the
CPU of the agents and of the service per watched instance.

Serves svc-monitor in this process (memory storage, user control off) over HTTP on
loopback, starts Valkey servers and one real `svc-monitor agent` process for all of them
(a targets file, SVC_AGENT_ALLOW_HTTP: loopback only), each instance with a token made
through the API. Then:

1. Latency: PING one after another, N times, through the service's own engine client of
   the agent connection, and through a direct engine client to the same server; the
   medians and p99s, and the difference (what the agent adds).
2. Throughput: 8 concurrent callers sending PING through one agent for a few seconds.
3. Idle watching: every connection polled as usual for --seconds; CPU of the agent (from
   /proc) and of this process (the service: nothing else runs meanwhile), per instance.

    .venv/bin/python bench/agent.py [--instances 10] [--seconds 60] [--pings 2000] [--quick]
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import uvicorn

from _servers import free_port, start_servers, stop_servers
from svc_monitor.app import create_app
from svc_monitor.config import Settings, StorageType
from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.services import Services

NOWHERE = "http://127.0.0.1:9"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def timed(client: EngineClient, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        await client.execute("PING")
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.99) - 1]


async def main(instances: int, seconds: float, pings: int) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-agent-"))
    servers = start_servers(instances, workdir)
    agents: list[asyncio.subprocess.Process] = []
    port = free_port()
    settings = Settings(
        _env_file=None,
        NODE_ENV="test",
        STORAGE_TYPE=StorageType.MEMORY,
        WORKSPACE_DISABLED=True,
        DB_HOST="127.0.0.1",
        DB_PORT=servers[0].port,
        SVC_DATA_DIR=workdir / "data",
        ENTITLEMENT_URL=NOWHERE,
        RELEASES_URL=NOWHERE,
    )
    app = create_app(settings)
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio",
            lifespan="on", access_log=False,
        )
    )  # fmt: skip
    serving = asyncio.create_task(server.serve())
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(400):  # bounded: 20 s
            if server.started:
                break
            await asyncio.sleep(0.05)
        async with httpx.AsyncClient(base_url=base, timeout=30) as api:
            ids = []
            targets = []
            for number, valkey in enumerate(servers):
                made = (await api.post("/api/agent-tokens", json={"name": f"n{number}"})).json()
                ids.append(made["connectionId"])
                token_file = workdir / f"n{number}.token"
                token_file.write_text(made["token"])
                targets.append(
                    {"tokenFile": str(token_file), "host": "127.0.0.1", "port": valkey.port}
                )
            targets_file = workdir / "targets.json"
            targets_file.write_text(json.dumps({"targets": targets}))
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "DB_"))},
                "SVC_URL": base,
                "SVC_AGENT_ALLOW_HTTP": "true",
                "SVC_AGENT_TARGETS_FILE": str(targets_file),
            }
            agents.append(
                await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "svc_monitor", "agent", env=env,
                    stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
                )
            )  # fmt: skip
            for _ in range(600):  # bounded: 60 s
                linked = sum(a["linked"] for a in (await api.get("/api/agents")).json())
                if linked == instances:
                    break
                await asyncio.sleep(0.1)
            print(f"{linked} of {instances} agents linked")
        services: Services = app.state.services
        connection = await services.connections.get(ids[0])
        through = services.connections.client(connection)
        direct = EngineClient(
            EngineTarget("127.0.0.1", servers[0].port), connect_timeout_s=5, command_timeout_s=5
        )
        await timed(through, 200)  # warm both paths
        await timed(direct, 200)
        agent_median, agent_p99 = summary(await timed(through, pings))
        direct_median, direct_p99 = summary(await timed(direct, pings))
        print(f"PING direct: median {direct_median:.3f} ms, p99 {direct_p99:.3f} ms")
        print(f"PING via agent: median {agent_median:.3f} ms, p99 {agent_p99:.3f} ms")
        print(f"added by the agent: median {agent_median - direct_median:.3f} ms")

        done = 0
        until = time.perf_counter() + 5

        async def caller() -> None:
            nonlocal done
            while time.perf_counter() < until:
                await through.execute("PING")
                done += 1

        started = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(8)))
        print(f"through one agent: {done / (time.perf_counter() - started):,.0f} commands/s")
        await direct.close()

        await asyncio.sleep(5)  # the throughput run settles
        me = os.getpid()
        before = (cpu_s(me), [cpu_s(a.pid) for a in agents])
        await asyncio.sleep(seconds)
        after = (cpu_s(me), [cpu_s(a.pid) for a in agents])
        minutes = seconds / 60
        agent_cpu = sum(after[1]) - sum(before[1])
        service_cpu = after[0] - before[0]
        print(
            f"idle watching {instances} instances for {seconds:g} s: the agent "
            f"{agent_cpu / seconds:.4f} cores ({agent_cpu / minutes / instances:.3f} CPU-s/min "
            f"per instance), RSS {rss_mb(agents[0].pid):.1f} MB; the service "
            f"{service_cpu / seconds:.4f} cores ({service_cpu / minutes / instances:.3f} "
            f"CPU-s/min per instance), RSS {rss_mb(me):.0f} MB"
        )
    finally:
        for agent in agents:
            if agent.returncode is None:
                agent.terminate()
        await asyncio.gather(*(a.wait() for a in agents), return_exceptions=True)
        server.should_exit = True
        await asyncio.wait_for(serving, timeout=20)
        stop_servers(servers)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--pings", type=int, default=2000)
    parser.add_argument(
        "--quick", action="store_true", help="2 instances, 3 s, 100 pings: that it runs"
    )
    args = parser.parse_args()
    if args.quick:
        args.instances, args.seconds, args.pings = 2, 3.0, 100
    asyncio.run(main(args.instances, args.seconds, args.pings))
