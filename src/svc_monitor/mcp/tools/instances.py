"""Connections, health and the INFO summary."""

from typing import Any

from svc_monitor.mcp.api_caller import ApiCaller, ToolRefused
from svc_monitor.mcp.output import figure, iso, listing, mb, number
from svc_monitor.mcp.tools.spec import Scoped, ToolSpec
from svc_monitor.mcp.untrusted import data


def _connection_line(entry: dict[str, Any]) -> str:
    engine = entry.get("engine") or {}
    default = " [default]" if entry.get("isDefault") else ""
    return (
        f"{entry.get('name')} (id {entry.get('id')}){default}: {entry.get('host')}:"
        f"{entry.get('port')}, {_engine(engine)}"
        f", {engine.get('status') or 'unknown'}, source {entry.get('source')}"
    )


async def list_instances(api: ApiCaller, params: Scoped) -> str:
    listed = await api.get("/api/connections")
    return listing("Connections", listed, _connection_line)


async def health(api: ApiCaller, params: Scoped) -> str:
    conn_id = params.connection
    listed = await api.get("/api/connections")
    entry = next(
        (
            c
            for c in listed
            if (conn_id is None and c.get("isDefault")) or conn_id in (c.get("id"), c.get("name"))
        ),
        None,
    )
    if entry is None:
        return "No such connection; call list_instances for the names and ids."
    engine = entry.get("engine") or {}
    lines = [
        f"{entry['name']} (id {entry['id']}): {engine.get('status') or 'unknown'}",
        f"engine: {_engine(engine)}, checked {iso(engine.get('checkedAt'))}",
    ]
    if engine.get("error"):
        lines.append(f"error: {data(engine['error'])}")
    try:
        role = await api.get("/api/metrics/role", connection=entry["id"])
    except ToolRefused as exc:  # down, or pushed (no live reads): the status above says which
        lines.append(f"role: unavailable ({exc.message})")
    else:
        lines.append(_role_line(role))
    return "\n".join(lines)


def _engine(engine: dict[str, Any]) -> str:
    """ "valkey «9.1.2»" (the version is the server's own text), or "unknown" before the
    instance was ever reached."""
    named = [str(engine["type"])] if engine.get("type") else []
    if engine.get("version"):
        named.append(data(engine["version"]))
    return " ".join(named) or "unknown"


def _role_line(role: dict[str, Any]) -> str:
    if role.get("role") in ("master", "primary"):
        replicas = role.get("replicas") or []
        return f"role: primary with {len(replicas)} replica(s)" + "".join(
            f"; {_address(r.get('host', r.get('ip')), r.get('port'))}"
            f" offset {number(r.get('offset'))}"
            for r in replicas[:10]
        )
    if role.get("role") in ("slave", "replica"):
        link = {"connected": "up"}.get(str(role.get("masterLinkState")), "down")
        return (
            f"role: replica of {_address(role.get('masterHost'), role.get('masterPort'))},"
            f" link {link} ({data(role.get('masterLinkState'))}),"
            f" offset {number(role.get('replicationOffset'))}"
        )
    return f"role: {data(role.get('role'))}"


def _address(host: Any, port: Any) -> str:
    """An address the server reported (ROLE), as one value."""
    return data(f"{host}:{port}")


async def info_summary(api: ApiCaller, params: Scoped) -> str:
    info = await api.get("/api/metrics/info", connection=params.connection)
    sections = info.get("sections", info)
    server, clients = sections.get("server", {}), sections.get("clients", {})
    memory, stats = sections.get("memory", {}), sections.get("stats", {})
    replication, keyspace = sections.get("replication", {}), sections.get("keyspace", {})
    # A field that is not a number (a server can send `98.81%` or `inf`) is unknown.
    used, limit = figure(memory.get("used_memory")), figure(memory.get("maxmemory"))
    ratio = f" ({used / limit:.0%} of maxmemory {mb(limit)})" if used and limit else ""
    hits, misses = figure(stats.get("keyspace_hits")), figure(stats.get("keyspace_misses"))
    hit_ratio = (
        "unknown"
        if hits is None or misses is None
        else f"{hits / (hits + misses):.1%}"
        if hits + misses > 0
        else "no reads yet"
    )
    version = server.get("valkey_version") or server.get("redis_version")
    # Redis's INFO has no server_name; Valkey's says valkey.
    name = data(server["server_name"]) if server.get("server_name") else "redis"
    lines = [
        f"engine: {name} {data(version)},"
        f" mode {data(server.get('server_mode'))},"
        f" up {number(server.get('uptime_in_seconds'), 's')}",
        f"role: {data(replication.get('role'))},"
        f" connected replicas {number(replication.get('connected_slaves', 0))}",
        f"memory: used {mb(used)}{ratio}, RSS {mb(figure(memory.get('used_memory_rss')))},"
        f" fragmentation {number(memory.get('mem_fragmentation_ratio'))},"
        f" policy {data(memory.get('maxmemory_policy'))}",
        f"clients: {number(clients.get('connected_clients'))} connected,"
        f" {number(clients.get('blocked_clients'))} blocked",
        f"throughput: {number(stats.get('instantaneous_ops_per_sec'), 'ops/s')},"
        f" hit ratio {hit_ratio}, evicted {number(stats.get('evicted_keys'))},"
        f" expired {number(stats.get('expired_keys'))}",
        "keyspace: "
        + (", ".join(f"{data(db)} {_keys(v)}" for db, v in keyspace.items()) or "empty"),
    ]
    return "\n".join(lines)


def _keys(value: Any) -> str:
    if isinstance(value, dict):
        return f"{number(value.get('keys'))} keys ({number(value.get('expires'))} with TTL)"
    return data(value)


TOOLS = [
    ToolSpec(
        "list_instances",
        "Every monitored connection: name, id, address, engine and version, status, and "
        "which one is the default (what a tool uses when no connection is given).",
        list_instances,
    ),
    ToolSpec(
        "health",
        "Whether a connection is up: its engine status, last check time, error if any, "
        "and its replication role (primary with replicas, or replica and its link state).",
        health,
    ),
    ToolSpec(
        "info_summary",
        "A summary of INFO: version, uptime, role, memory (MB and ratio to maxmemory), "
        "clients, ops/s, hit ratio, evictions and keyspace.",
        info_summary,
    ),
]
