"""The ports cloud mode dials directly (docs/features/cloud-mode.md#direct-connection-ports).

A hosted svc-monitor connects out to other people's instances only on 443, 2000-2999 and
6000-6999, and never on the well-known control-plane ports inside those ranges (2375-2376:
the Docker API; 2379-2380: etcd; 6443: the Kubernetes API), so a connection cannot be
used to reach the host's own infrastructure. An instance on any other port is watched
through the agent, which connects out to svc-monitor on 443.

Here rather than in connections/: Settings checks DB_PORT with the same rule at startup,
and config.py may import only kit.
"""

_ALLOWED = ((443, 443), (2000, 2999), (6000, 6999))
_BLOCKED = ((2375, 2376), (2379, 2380), (6443, 6443))

ALLOWED_TEXT = "443, 2000-2999 or 6000-6999, except 2375-2376, 2379-2380 and 6443"
AGENT_TEXT = "other ports need the agent (outbound 443)"


def dialled_in_cloud(port: int) -> bool:
    """Whether cloud mode may connect to `port` directly."""
    allowed = any(low <= port <= high for low, high in _ALLOWED)
    return allowed and not any(low <= port <= high for low, high in _BLOCKED)


def refusal(port: int) -> str:
    """Why cloud mode does not dial `port`, and what to do instead."""
    return f"{port} is not a port cloud mode connects to directly ({ALLOWED_TEXT}); {AGENT_TEXT}"
