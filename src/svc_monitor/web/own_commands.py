"""Which of a server's per-command figures are svc-monitor's own polls.

The engine counts every client's calls of a command together (LATENCY HISTOGRAM), so on
a quiet server the busiest commands are the monitor's: INFO every second, SLOWLOG GET,
LATENCY LATEST, CLIENT LIST ... Two things tell them apart:

- OWN_COMMANDS, the introspection commands svc-monitor's polls and views send and that
  applications seldom do: their rows are listed apart, as svc-monitor's;
- the connection's CommandLedger (engine/ledger.py), which counts every command this
  svc-monitor sent the server since it started: each row says how many calls were ours,
  so the data commands the key sampler sends (TYPE, MEMORY USAGE) stay with the
  workload, marked with that count.
"""

from svc_monitor.engine.ledger import CommandLedger

# As LATENCY HISTOGRAM names them: lower case, a container command's subcommand after "|".
OWN_COMMANDS = frozenset(
    {
        "info",
        "slowlog|get",
        "slowlog|len",
        "commandlog|get",
        "commandlog|len",
        "client|list",
        "client|info",
        "client|id",
        # valkey-py names each of our connections as it opens (engine/client.py CLIENT_NAME).
        "client|setname",
        "config|get",
        "acl|log",
        "acl|list",
        "acl|whoami",
        "latency|latest",
        "latency|history",
        "latency|histogram",
        "latency|doctor",
        "memory|doctor",
        "memory|stats",
        "cluster|info",
        "cluster|nodes",
        "cluster|shards",
        "cluster|myid",
        "cluster|slot-stats",
        "command",
        "command|info",
        "command|docs",
        "command|count",
        "dbsize",
        "role",
    }
)


def histogram_name(ledger_name: str) -> str:
    """The ledger's "CLIENT LIST" as the histogram's "client|list"."""
    return ledger_name.lower().replace(" ", "|")


def sent_by_us(ledger: CommandLedger) -> dict[str, int]:
    """Calls svc-monitor sent, per command (histogram names), since `ledger.since_ms`."""
    return {histogram_name(name): cost.calls for name, cost in ledger.costs().items()}
