"""Which replica of a server a whole-keyspace read may go to instead of the server itself.

The rule (fit_replica): the primary's INFO replication lists it `online` with a lag of at
most MAX_REPLICA_LAG_S seconds, it answers INFO replication (reached with the
connection's credentials and TLS) and reports its master link `up`; on a cluster it must
also accept READONLY, which reads on a cluster replica need. The first fit replica is
read; with none, the caller reads the primary. Key analytics and the migration analysis
read by it (docs/features/key-analytics.md, docs/features/migration.md), so SCAN and
MEMORY USAGE cost the primary nothing.
"""

import logging
from collections.abc import Callable

from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.info import ParsedInfo

logger = logging.getLogger(__name__)

# A replica this far behind (seconds since its last ack) is not read: its keys are stale.
MAX_REPLICA_LAG_S = 10


async def fit_replica(
    node_client: Callable[[EngineTarget], EngineClient],
    client: EngineClient,
    info: ParsedInfo,
    *,
    cluster: bool = False,
) -> EngineClient | None:
    """A client to the first replica of `client`'s server fit to read (module docstring),
    or None; the caller closes it."""
    if info.get_str("replication", "role") != "master":
        return None
    for i in range(info.get_int("replication", "connected_slaves") or 0):
        fields = replica_fields(info.get_str("replication", f"slave{i}"))
        if fields.get("state") != "online" or int(fields.get("lag", "0")) > MAX_REPLICA_LAG_S:
            continue
        try:
            target = client.target.peer(fields["ip"], int(fields["port"]))
        except (KeyError, ValueError):
            continue
        replica = node_client(target)
        try:
            probe = await replica.info("replication")
            if cluster:
                await replica.execute("READONLY")
        except EngineError as exc:
            logger.debug("replica %s not usable (%s): reading the primary", target, exc)
            await replica.close()
            continue
        if probe.get_str("replication", "master_link_status") == "up":
            return replica
        await replica.close()
    return None


def replica_fields(text: str | None) -> dict[str, str]:
    """`ip=10.0.0.2,port=6380,state=online,offset=..,lag=0` as a dict."""
    if not text:
        return {}
    return dict(part.split("=", 1) for part in text.split(",") if "=" in part)
