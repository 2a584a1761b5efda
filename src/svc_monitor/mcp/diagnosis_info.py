"""Problems read from one INFO reply: memory, evictions, rejected writes, clients and
replication. Pure functions of the reply, so each rule is tested with the server it needs.

Scores (0-100) order problems of one severity: the percentage of a limit in use, or how long
a replication link has been down, or a count on a logarithmic scale.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from svc_monitor.mcp.diagnosis_model import Problem, Severity, size, span, utc
from svc_monitor.mcp.untrusted import data

Sections = Mapping[str, Mapping[str, Any]]

# The product's own alert levels (a webhook's thresholds default to these).
MEMORY_CRITICAL_PERCENT = 90.0
MEMORY_WARNING_PERCENT = 75.0
CLIENTS_CRITICAL_PERCENT = 90.0
CLIENTS_WARNING_PERCENT = 80.0
# Below ~64 MB the allocator's fixed overhead makes the ratio large and meaningless.
FRAGMENTATION_RATIO = 1.5
FRAGMENTATION_MIN_BYTES = 64 * 1024**2
REPLICA_LAG_WARNING_S = 10.0


@dataclass(frozen=True)
class Levels:
    """Where a problem turns critical (lag: where it becomes a warning): the strictest
    threshold among the connection's enabled webhooks, else the product's defaults.
    `origin` names the webhook a level came from, for the evidence."""

    memory_percent: float = MEMORY_CRITICAL_PERCENT
    clients_percent: float = CLIENTS_CRITICAL_PERCENT
    lag_seconds: float = REPLICA_LAG_WARNING_S
    origin: Mapping[str, str] | None = None

    @classmethod
    def of_webhooks(cls, webhooks: Sequence[Mapping[str, Any]]) -> "Levels":
        levels = {
            "memoryCriticalPercent": MEMORY_CRITICAL_PERCENT,
            "connectionCriticalPercent": CLIENTS_CRITICAL_PERCENT,
            "replicationLagSeconds": REPLICA_LAG_WARNING_S,
        }
        origin: dict[str, str] = {}
        for hook in webhooks:
            thresholds = hook.get("thresholds") or {}
            for key, level in levels.items():
                value = thresholds.get(key)
                if hook.get("enabled") and isinstance(value, int | float) and value < level:
                    levels[key] = float(value)
                    origin[key] = str(hook.get("name"))
        return cls(
            levels["memoryCriticalPercent"],
            levels["connectionCriticalPercent"],
            levels["replicationLagSeconds"],
            origin,
        )

    def why(self, key: str, shown: str) -> str:
        hook = (self.origin or {}).get(key)
        return f"; over the {shown} {key} of webhook {hook!r}" if hook else ""


def number(sections: Sections, section: str, key: str) -> float | None:
    value = sections.get(section, {}).get(key)
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def pairs(value: Any) -> dict[str, str]:
    """`ip=...,port=...,lag=0` (how INFO writes a replica or an error stat), parsed or not."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    found: dict[str, str] = {}
    for item in str(value).split(","):
        key, _, val = item.partition("=")
        found[key.strip()] = val.strip()
    return found


class InfoChecks:
    """The INFO-based rules for one instance, `at` being when the reply was read (ms)."""

    def __init__(
        self, sections: Sections, *, connection: str, at: float, levels: Levels = Levels()
    ) -> None:
        self.sections = sections
        self.connection = connection
        self.at = at
        self.levels = levels

    def problems(self) -> list[Problem]:
        return [
            *self.memory(),
            *self.fragmentation(),
            *self.evictions(),
            *self.rejected_writes(),
            *self.clients(),
            *self.blocked(),
            *self.replication(),
        ]

    def _problem(
        self, severity: Severity, title: str, evidence: list[str], next_step: str, score: float
    ) -> Problem:
        return Problem(severity, title, tuple(evidence), next_step, "info", self.connection, score)

    def memory(self) -> list[Problem]:
        used = number(self.sections, "memory", "used_memory")
        limit = number(self.sections, "memory", "maxmemory")
        if used is None or not limit:
            return []
        percent = 100 * used / limit
        critical = self.levels.memory_percent
        if percent < min(MEMORY_WARNING_PERCENT, critical):
            return []
        severity: Severity = "critical" if percent >= critical else "warning"
        policy = self.sections.get("memory", {}).get("maxmemory_policy")
        consequence = (
            "writes will be refused with OOM"
            if policy == "noeviction"
            else f"keys are being evicted ({data(policy)})"
        )
        evidence = [
            f"used_memory {size(used)} of maxmemory {size(limit)} ({percent:.0f} %)"
            f" at {utc(self.at)}"
            + (
                self.levels.why("memoryCriticalPercent", f"{critical:.0f} %")
                if severity == "critical"
                else ""
            ),
            f"maxmemory_policy {data(policy)}: at the limit {consequence}",
        ]
        step = (
            "Raise maxmemory or free memory (largest keys, key patterns, TTLs); see the memory"
            " doctor and the forecast of usedMemory."
        )
        return [
            self._problem(
                severity, f"Memory at {percent:.0f} % of maxmemory", evidence, step, percent
            )
        ]

    def fragmentation(self) -> list[Problem]:
        ratio = number(self.sections, "memory", "mem_fragmentation_ratio")
        rss = number(self.sections, "memory", "used_memory_rss")
        if ratio is None or rss is None or ratio < FRAGMENTATION_RATIO:
            return []
        if rss < FRAGMENTATION_MIN_BYTES:
            return []
        evidence = [
            f"mem_fragmentation_ratio {ratio:.2f}, used_memory_rss {size(rss)} at {utc(self.at)}"
        ]
        step = "Enable activedefrag (CONFIG SET activedefrag yes) or restart a replica first."
        return [
            self._problem(
                "warning",
                f"Memory fragmentation {ratio:.2f}",
                evidence,
                step,
                min(100.0, ratio * 20),
            )
        ]

    def evictions(self) -> list[Problem]:
        evicted = number(self.sections, "stats", "evicted_keys")
        if not evicted:
            return []
        uptime = number(self.sections, "server", "uptime_in_seconds") or 0
        evidence = [
            f"evicted_keys {evicted:.0f} in {span(uptime * 1000)} of uptime at {utc(self.at)}"
        ]
        step = "Check maxmemory and the eviction policy; look at key patterns and TTLs."
        return [
            self._problem(
                "warning",
                f"{evicted:.0f} keys evicted",
                evidence,
                step,
                min(100.0, 20 * math.log10(evicted + 1)),
            )
        ]

    def rejected_writes(self) -> list[Problem]:
        stats = self.sections.get("errorstats", {})
        oom = pairs(stats["errorstat_OOM"]).get("count") if "errorstat_OOM" in stats else None
        if not oom or not oom.isdigit() or int(oom) == 0:
            return []
        count = int(oom)
        evidence = [
            f"{count} commands refused with OOM since start (errorstat_OOM) at {utc(self.at)}"
        ]
        step = "Free memory or raise maxmemory; clients are getting errors on writes."
        return [
            self._problem(
                "critical",
                f"{count} writes rejected: out of memory",
                evidence,
                step,
                min(100.0, 50 + 10 * math.log10(count + 1)),
            )
        ]

    def clients(self) -> list[Problem]:
        connected = number(self.sections, "clients", "connected_clients")
        limit = number(self.sections, "clients", "maxclients")
        if connected is None or not limit:
            return []
        percent = 100 * connected / limit
        critical = self.levels.clients_percent
        if percent < min(CLIENTS_WARNING_PERCENT, critical):
            return []
        severity: Severity = "critical" if percent >= critical else "warning"
        why = self.levels.why("connectionCriticalPercent", f"{critical:.0f} %")
        evidence = [
            f"connected_clients {connected:.0f} of maxclients {limit:.0f} at {utc(self.at)}"
            + (why if severity == "critical" else "")
        ]
        step = "Find the top talkers and idle clients; raise maxclients or pool connections."
        title = f"Clients at {percent:.0f} % of maxclients"
        return [self._problem(severity, title, evidence, step, percent)]

    def blocked(self) -> list[Problem]:
        blocked = number(self.sections, "clients", "blocked_clients")
        if not blocked:
            return []
        evidence = [f"blocked_clients {blocked:.0f} at {utc(self.at)}"]
        step = (
            "Normal for queue workers (BLPOP, XREAD BLOCK); otherwise list the clients and"
            " their last command."
        )
        title = f"{blocked:.0f} blocked clients"
        return [self._problem("info", title, evidence, step, min(100.0, 10 * blocked))]

    def replication(self) -> list[Problem]:
        section = self.sections.get("replication", {})
        if section.get("role") == "slave":
            return self._replica_side(section)
        return self._master_side(section)

    def _replica_side(self, section: Mapping[str, Any]) -> list[Problem]:
        master = data(f"{section.get('master_host')}:{section.get('master_port')}")
        if section.get("master_link_status") != "up":
            down = number(self.sections, "replication", "master_link_down_since_seconds")
            since = f", down for {span(down * 1000)}" if down is not None and down >= 0 else ""
            evidence = [
                f"master_link_status {data(section.get('master_link_status'))} to {master}"
                f"{since} at {utc(self.at)}"
            ]
            step = (
                f"Check that the master {master} is running and reachable from this"
                " replica; reads here are stale until the link is back."
            )
            score = 90 + min(10.0, (down or 0) / 60)
            return [
                self._problem(
                    "critical",
                    f"Replication link to master {master} is down",
                    evidence,
                    step,
                    score,
                )
            ]
        io = number(self.sections, "replication", "master_last_io_seconds_ago")
        if io is not None and io >= self.levels.lag_seconds:
            return [
                self._problem(
                    "warning",
                    f"No data from master {master} for {io:.0f} s",
                    [f"master_last_io_seconds_ago {io:.0f} at {utc(self.at)}"],
                    "Check the network to the master and its load.",
                    min(100.0, io),
                )
            ]
        return []

    def _master_side(self, section: Mapping[str, Any]) -> list[Problem]:
        found: list[Problem] = []
        for key, value in section.items():
            if not (key.startswith("slave") and key[5:].isdigit()):
                continue
            replica = pairs(value)
            where = data(f"{replica.get('ip')}:{replica.get('port')}")
            lag = replica.get("lag", "")
            if replica.get("state") not in (None, "online"):
                found.append(
                    self._problem(
                        "warning",
                        f"Replica {where} is {data(replica.get('state'))}",
                        [f"{key} state {data(replica.get('state'))} at {utc(self.at)}"],
                        "A full resync is in progress or stuck; check the replica's log.",
                        50,
                    )
                )
            elif lag.isdigit() and int(lag) >= self.levels.lag_seconds:
                found.append(
                    self._problem(
                        "warning",
                        f"Replica {where} lags {lag} s",
                        [f"{key} lag {lag} s at {utc(self.at)}"],
                        "Check the replica's load and the network; reads there are stale.",
                        min(100.0, float(lag)),
                    )
                )
        return found
