"""Key patterns, the largest keys and the hot keys (key analytics, a Pro feature)."""

from typing import Any

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import iso, listing, mb, number
from svc_monitor.mcp.tools.spec import Limited, ToolSpec
from svc_monitor.mcp.untrusted import data


async def key_patterns(api: ApiCaller, params: Limited) -> str:
    patterns = await api.get(
        "/api/key-analytics/patterns",
        connection=params.connection,
        params={"limit": str(params.limit)},
    )
    ranked = sorted(patterns, key=lambda p: -(p.get("totalMemoryBytes") or 0))

    def line(p: dict[str, Any]) -> str:
        ttl = p.get("ttlShare") or 0
        return (
            f"{data(p.get('pattern'))}: ~{p.get('keyCount')} keys,"
            f" ~{mb(p.get('totalMemoryBytes'))},"
            f" avg {p.get('avgMemoryBytes')} bytes, max {p.get('maxMemoryBytes')} bytes,"
            f" {ttl:.0%} with TTL, sampled {iso(p.get('timestamp'))}"
        )

    return listing("Key patterns by memory", ranked, line, limit=params.limit)


def _key(k: dict[str, Any]) -> str:
    ttl = "no expiry" if k.get("ttlMs") is None else f"TTL {k['ttlMs'] / 1000:.0f} s"
    freq = f", LFU freq {number(k['freq'])}" if k.get("freq") is not None else ""
    return (
        f"{data(k.get('key'))} ({data(k.get('type'))}): {number(k.get('memoryBytes'))} bytes,"
        f" {number(k.get('cardinality'))} elements, {ttl}{freq}"
    )


async def largest_keys(api: ApiCaller, params: Limited) -> str:
    found = await api.get("/api/key-analytics/summary", connection=params.connection)
    head = _run(found)
    return (
        head
        + "\n"
        + listing("Largest keys", found.get("largestKeys") or [], _key, limit=params.limit)
    )


async def hot_keys(api: ApiCaller, params: Limited) -> str:
    found = await api.get("/api/key-analytics/summary", connection=params.connection)
    keys = found.get("hotKeys") or []
    empty = found.get("hotKeysNote") or "none"
    return _run(found) + "\n" + listing("Hot keys", keys, _key, limit=params.limit, empty=empty)


def _run(found: dict[str, Any]) -> str:
    if found.get("timestamp") is None:
        return "No key analytics run yet."
    return (
        f"Run of {iso(found.get('timestamp'))} on {found.get('source')}: sampled"
        f" {found.get('sampledKeys')} of {found.get('keyspaceKeys')} keys"
    )


TOOLS = [
    ToolSpec(
        "key_patterns",
        "Key name patterns ranked by estimated memory: key count, sizes, TTL share. Needs Pro.",
        key_patterns,
        Limited,
    ),
    ToolSpec(
        "largest_keys",
        "The largest keys of the latest key analytics run, with type, bytes and TTL. Needs Pro.",
        largest_keys,
        Limited,
    ),
    ToolSpec(
        "hot_keys",
        "The most accessed keys (LFU frequency) of the latest run, or why there are none. "
        "Needs Pro.",
        hot_keys,
        Limited,
    ),
]
