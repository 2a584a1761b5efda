"""CPU cost of anomaly detection per observation: every detector together (the INFO
z-score metrics and rule detectors, the correlation window, and the detectors fed by the
other polls), per connection per poll.

Captures INFO everything once from a real Valkey on a free port, then feeds it through
AnomalyService.watch as a steady stream of 1 s observations whose counters advance
(rewritten like tests/forecast/history.py does), after the buffers are warm. The other
polls' reads (slow log, commandstats per command, latency, CLUSTER INFO) go through
AnomalyService.observe_facts the same way, each timed per read and then spread over the
seconds between its reads at the default intervals. Prints microseconds per observation;
the target is under 50. --quick feeds a few hundred observations: it checks that the
bench runs, its figures mean nothing.

    .venv/bin/python bench/detectors.py [--observations 20000] [--connections 10] [--quick]
"""

import argparse
import random
import re
import socket
import time

from svc_monitor.anomaly.service import AnomalyService
from svc_monitor.anomaly.store import AnomalyStore
from svc_monitor.config import Settings, StorageType
from svc_monitor.engine.info import ParsedInfo, parse_info
from svc_monitor.engine.latency import LatencyEvent
from svc_monitor.events import EventBus
from svc_monitor.kit.embedded_valkey import EmbeddedValkey
from svc_monitor.pipe.facts import (
    ClusterFacts,
    CommandstatsFacts,
    Facts,
    LatencyFacts,
    SlowlogFacts,
)
from svc_monitor.pipe.observation import Observation
from svc_monitor.runtime_settings.service import RuntimeSettingsService
from svc_monitor.storage.database import Database

COUNTERS = (
    "total_commands_processed",
    "total_connections_received",
    "keyspace_hits",
    "keyspace_misses",
    "expired_keys",
    "total_net_input_bytes",
    "total_net_output_bytes",
)


def capture() -> str:
    server = EmbeddedValkey()
    server.start()
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            # Some traffic, so INFO's commandstats and keyspace are not empty: inline
            # commands, their replies read all at once.
            sock.sendall(
                b"".join(
                    b"SET key:%d %s\r\nGET key:%d\r\n" % (i, b"x" * 100, i) for i in range(1000)
                )
            )
            expected = 1000 * len(b"+OK\r\n") + 1000 * len(b"$100\r\n" + b"x" * 100 + b"\r\n")
            received = 0
            while received < expected:
                received += len(sock.recv(1 << 20))
            sock.sendall(b"INFO everything\r\n")
            reply = sock.recv(65536)
            header, _, body = reply.partition(b"\r\n")
            size = int(header[1:])  # a bulk string: $<length>\r\n<body>\r\n
            while len(body) < size:
                body += sock.recv(65536)
        return body[:size].decode()
    finally:
        server.stop()


def samples(info: str, count: int) -> list[ParsedInfo]:
    """`count` distinct INFO replies, counters advancing ~1000/s with 5 % jitter."""
    rng = random.Random(7)
    totals = dict.fromkeys(COUNTERS, 1_000_000)
    out = []
    for _ in range(count):
        text = info
        for name in COUNTERS:
            totals[name] += int(1000 * rng.uniform(0.95, 1.05))
            text = re.sub(rf"^{name}:.*$", f"{name}:{totals[name]}\r", text, flags=re.M)
        out.append(parse_info(text))
    return out


# Seconds between two reads of each source at the default poll intervals (config.py):
# the slow log every 10 s, commandstats 15 s, latency 30 s, CLUSTER INFO with INFO (1 s).
READ_EVERY_S = {"slowlog": 10, "commandstats": 15, "latency": 30, "cluster": 1}
COMMANDS = 30  # commands in use on the benchmarked server


def fact_reads(count: int, at: int) -> dict[str, list[Facts]]:
    """`count` reads of each other source, one second apart, counters advancing."""
    rng = random.Random(11)
    calls = dict.fromkeys((f"cmd{i}" for i in range(COMMANDS)), 1_000_000)
    usec = dict.fromkeys(calls, 3_000_000)
    reads: dict[str, list[Facts]] = {name: [] for name in READ_EVERY_S}
    slow_id = 100
    for i in range(count):
        at += 1000
        lines = ["# Commandstats"]
        for name in calls:
            n = int(500 * rng.uniform(0.95, 1.05))
            calls[name] += n
            usec[name] += int(n * 3 * rng.uniform(0.9, 1.1))
            lines.append(
                f"cmdstat_{name}:calls={calls[name]},usec={usec[name]},"
                f"usec_per_call={usec[name] / calls[name]:.2f},rejected_calls=0,failed_calls=0"
            )
        commandstats = parse_info("\r\n".join(lines) + "\r\n")
        commandstats.sections["commandstats"]  # parsed by the poller, not by us
        reads["commandstats"].append(CommandstatsFacts(at, commandstats))
        slow_id += rng.choice((0, 0, 1))
        reads["slowlog"].append(SlowlogFacts(at_ms=at, length=128, last_id=slow_id))
        event = LatencyEvent("command", at // 1000 - i % 7, 25, 40)
        reads["latency"].append(LatencyFacts(at, (event,)))
        reads["cluster"].append(ClusterFacts(at, {"cluster_state": "ok", "cluster_slots_pfail": 0}))
    return reads


def time_facts(service: AnomalyService, ids: list[str], reads: list[Facts]) -> float:
    """Microseconds per connection per read, the first 300 reads warming the buffers."""
    for facts in reads[:300]:
        for cid in ids:
            service.observe_facts(cid, facts)
    elapsed = 0.0
    for facts in reads[300:]:
        start = time.perf_counter()
        for cid in ids:
            service.observe_facts(cid, facts)
        elapsed += time.perf_counter() - start
    return elapsed / ((len(reads) - 300) * len(ids)) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--observations", type=int, default=20_000)
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.observations, args.connections = 200, 2
    info = capture()
    settings = Settings(_env_file=None, STORAGE_TYPE=StorageType.MEMORY)
    bus = EventBus()
    service = AnomalyService(
        AnomalyStore(Database.from_settings(settings)),
        bus,
        settings,
        RuntimeSettingsService(None, settings, bus),  # type: ignore[arg-type]
        allowed=lambda: True,
    )
    pool = samples(info, 400)
    ids = [f"conn-{i}" for i in range(args.connections)]
    at = 1_700_000_000_000
    for i in range(300):  # warm every buffer past READY_AT
        at += 1000
        for cid in ids:
            service.observe(Observation(cid, at, pool[i % len(pool)]))
    # Parsing is the poller's cost, not ours (bench/info_parse.py): sections parse lazily,
    # so parse every section of every sample before the clock starts.
    for parsed in pool:
        for name in parsed.sections:
            parsed.sections[name]
    elapsed = 0.0
    rounds = args.observations // args.connections
    for i in range(rounds):
        at += 1000
        observations = [Observation(cid, at, pool[(300 + i) % len(pool)]) for cid in ids]
        start = time.perf_counter()
        for observation in observations:
            service.observe(observation)
        elapsed += time.perf_counter() - start
    per = elapsed / (rounds * len(ids)) * 1e6
    print(f"INFO detectors: {per:.1f} us per connection per INFO observation")
    per_read = {
        name: time_facts(service, ids, reads)
        for name, reads in fact_reads(300 + max(rounds, 100), at).items()
    }
    spread = sum(cost / READ_EVERY_S[name] for name, cost in per_read.items())
    for name, cost in per_read.items():
        print(f"  {name} read: {cost:.1f} us (every {READ_EVERY_S[name]} s)")
    print(
        f"anomaly detectors: {per + spread:.1f} us per connection per observation, all "
        f"together (INFO {per:.1f} + other polls' reads spread over 1 s {spread:.1f}; "
        "target < 50)"
    )
    print(
        f"({len(service.buffers(ids[0]))} baseline buffers; "
        f"{service.pending_detections} detections)"
    )


if __name__ == "__main__":
    main()
