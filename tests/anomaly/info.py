"""Real INFO for the anomaly tests: read raw from a real server, rewritten as a steady
synthetic load with a simulated clock (the way tests/forecast/history.py rewrites it)."""

import random
import re
import socket

from svc_monitor.engine.info import ParsedInfo, parse_info
from tests.fixtures.servers import RunningServer

START_MS = 1_700_000_000_000
# Counters of a steady load: name -> mean increase per second.
COUNTER_RATES = {
    "total_commands_processed": 2000,
    "total_connections_received": 2,
    "keyspace_hits": 900,
    "keyspace_misses": 100,
    "expired_keys": 50,
    "total_net_input_bytes": 120_000,
    "total_net_output_bytes": 300_000,
    "used_cpu_sys": 0.02,
    "used_cpu_user": 0.05,
    "total_error_replies": 0.2,
}
GAUGE_LEVELS: dict[str, float] = {
    "used_memory": 50_000_000,
    "used_memory_rss": 60_000_000,
    "mem_fragmentation_ratio": 1.2,
    "instantaneous_ops_per_sec": 2000,
    "connected_clients": 20,
}


def info_text(server: RunningServer) -> str:
    """`INFO everything` of `server`, as the text the engine sent."""
    with socket.create_connection((server.host, server.port)) as sock:
        sock.sendall(b"INFO everything\r\n")
        header, _, body = sock.recv(65536).partition(b"\r\n")
        size = int(header[1:])  # a bulk string: $<length>\r\n<body>\r\n
        while len(body) < size:
            body += sock.recv(65536)
    return body[:size].decode()


def rewrite(info: str, fields: dict[str, float]) -> str:
    for name, value in fields.items():
        pattern = re.compile(rf"^{re.escape(name)}:.*\r?\n", re.MULTILINE)
        assert pattern.search(info), f"{name} is not in the server's INFO"
        text = (
            f"{value:.6f}"
            if isinstance(value, float) and not value.is_integer()
            else f"{int(value)}"
        )
        info = pattern.sub(f"{name}:{text}\r\n", info)
    return info


def steady_load(info: str, samples: int, *, seed: int) -> list[ParsedInfo]:
    """`samples` INFO replies one second apart of a busy but steady instance: counters
    advance at COUNTER_RATES with +-25 % jitter per second, gauges wander +-3 % around
    GAUGE_LEVELS (clients +-3), as a real steady load does."""
    rng = random.Random(seed)
    totals = dict.fromkeys(COUNTER_RATES, 1_000_000.0)
    out = []
    for _ in range(samples):
        fields: dict[str, float] = {}
        for name, rate in COUNTER_RATES.items():
            totals[name] += rate * rng.uniform(0.75, 1.25)
            fields[name] = round(totals[name], 6) if rate < 1 else int(totals[name])
        for name, level in GAUGE_LEVELS.items():
            if name == "connected_clients":
                fields[name] = int(level + rng.randint(-3, 3))
            elif name == "mem_fragmentation_ratio":
                fields[name] = round(level * rng.uniform(0.97, 1.03), 2)
            else:
                fields[name] = int(level * rng.uniform(0.97, 1.03))
        out.append(parse_info(rewrite(info, fields)))
    return out
