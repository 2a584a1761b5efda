"""When a monitored server is under pressure, the monitor holds back its expensive calls.

Watching must never be what tips a busy server over. Before an expensive call
(CLIENT LIST now; SCAN and MEMORY USAGE when key analytics arrive) a poll asks
`pressure_reason`, and skips its pass while the answer is not None. By the last two
INFO polls, a server is under pressure when:

- its CPU use was above CPU_LIMIT_PERCENT of one core between them: Valkey and Redis
  run commands on one thread, so 80% of a core is close to saturation;
- our own INFO round trip took longer than ROUND_TRIP_LIMIT_MS: a trivial command had
  to wait, so the server (or the network to it) is busy;
- more than MAX_CLIENTS clients are connected: CLIENT LIST costs the server time in
  proportion to them, and blocks it meanwhile.

The skip lasts only as long as the reading: the next pass asks again.
"""

from svc_monitor.pipe.live_view import CpuReading, LiveView, cpu_reading
from svc_monitor.pipe.observation import Observation

CPU_LIMIT_PERCENT = 80.0
ROUND_TRIP_LIMIT_MS = 100.0
MAX_CLIENTS = 5_000


def pressure_reason(live_state: LiveView, connection_id: str) -> str | None:
    """Why the connection's server is under pressure now, or None when it is not."""
    latest = live_state.latest(connection_id)
    if latest is None:
        return None
    return reading(live_state.previous(connection_id), latest)


def reading(previous: CpuReading | None, latest: Observation) -> str | None:
    info = latest.info
    clients = info.get_int("clients", "connected_clients")
    if clients is not None and clients > MAX_CLIENTS:
        return f"{clients} clients connected (over {MAX_CLIENTS})"
    if latest.round_trip_ms is not None and latest.round_trip_ms > ROUND_TRIP_LIMIT_MS:
        return f"INFO took {latest.round_trip_ms:.0f} ms (over {ROUND_TRIP_LIMIT_MS:.0f} ms)"
    cpu = _cpu_percent(previous, latest)
    if cpu is not None and cpu > CPU_LIMIT_PERCENT:
        return f"CPU at {cpu:.0f}% of a core (over {CPU_LIMIT_PERCENT:.0f}%)"
    return None


def _cpu_percent(previous: CpuReading | None, latest: Observation) -> float | None:
    if previous is None:
        return None
    now = cpu_reading(latest)
    elapsed_s = (now.at_ms - previous.at_ms) / 1000
    if elapsed_s <= 0 or now.cpu_s is None or previous.cpu_s is None or now.cpu_s < previous.cpu_s:
        return None
    return (now.cpu_s - previous.cpu_s) / elapsed_s * 100
