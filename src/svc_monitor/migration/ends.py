"""What the analysis reads of one end of a migration, read-only (docs/features/migration.md).

One end is a standalone server or a cluster. A cluster's figures are read from every
primary holding slots (CLUSTER NODES, as the cluster poll parses it) and summed: keys,
memory, maxmemory. What is the same on every node of a deployment (version, modules,
functions, ACL users, settings) is read from the seed.

Every read may be refused (a managed provider renames or forbids CONFIG, ACL, MODULE,
FUNCTION): a refusal leaves that field unknown, never fails the analysis, and the report
says what was not known.
"""

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.cluster import ClusterNode, parse_cluster_nodes
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.info import ParsedInfo, detect_engine, engine_version, parse_version
from svc_monitor.migration.models import EndProfile, FunctionLibrary

logger = logging.getLogger(__name__)

# Modules every server reports that hold no data of their own.
BUILT_IN_MODULES = frozenset({"lua"})


@dataclass(slots=True)
class Node:
    """One primary of an end: where its keys are read, and its INFO."""

    address: str
    client: EngineClient
    info: ParsedInfo


async def primaries(
    seed: EngineClient,
    info: ParsedInfo,
    node_client: Callable[[EngineTarget], EngineClient],
    opened: list[EngineClient],
) -> list[Node]:
    """The end's primaries holding slots (the seed alone when it is no cluster, or refuses
    CLUSTER NODES); every client opened is added to `opened`, for the caller to close."""
    if info.get_int("cluster", "cluster_enabled") != 1:
        return [Node(seed.target.address, seed, info)]
    try:
        nodes = parse_cluster_nodes(await seed.execute("CLUSTER", "NODES"))
    except EngineError as exc:
        logger.info("CLUSTER NODES refused on %s (%s): seed only", seed.target.address, exc)
        return [Node(seed.target.address, seed, info)]
    found: list[Node] = []
    for node in _holding_slots(nodes):
        if "myself" in node.flags:
            found.append(Node(node.address, seed, info))
            continue
        client = node_client(seed.target.peer(node.host, node.port))
        opened.append(client)
        found.append(Node(node.address, client, await client.info()))
    return found or [Node(seed.target.address, seed, info)]


def _holding_slots(nodes: Sequence[ClusterNode]) -> list[ClusterNode]:
    return [n for n in nodes if "master" in n.flags and "fail" not in n.flags and n.slots]


async def profile(name: str, seed: EngineClient, nodes: Sequence[Node]) -> EndProfile:
    """The end's profile from its primaries' INFO and a few reads of the seed."""
    info = nodes[0].info if nodes[0].client is seed else await seed.info()
    engine = detect_engine(info)
    version = engine_version(info) or "0.0.0"
    databases: dict[int, int] = {}
    expires = 0
    volatile: int | None = None
    for node in nodes:
        for section, values in node.info.sections.get("keyspace", {}).items():
            if not section.startswith("db") or not isinstance(values, dict):
                continue
            db = int(section[2:])
            databases[db] = databases.get(db, 0) + int(values.get("keys", 0))
            expires += int(values.get("expires", 0))
            # Valkey 9 counts hashes with field TTLs as keys_with_volatile_items; Redis 7.4+
            # as subexpiry.
            hashes = values.get("keys_with_volatile_items", values.get("subexpiry"))
            if hashes is not None:
                volatile = (volatile or 0) + int(hashes)
    commands = await _known(seed, ["HEXPIRE", "FUNCTION"])
    modules = await _modules(seed)
    return EndProfile(
        name=name,
        address=seed.target.address,
        engine=engine,
        version=version,
        release=parse_version(version),
        cluster=info.get_int("cluster", "cluster_enabled") == 1,
        primaries=len(nodes),
        databases=databases,
        expires=expires,
        volatile_hash_keys=volatile,
        hash_field_expiry="HEXPIRE" in commands,
        has_functions="FUNCTION" in commands,
        modules=modules,
        libraries=await _libraries(seed) if "FUNCTION" in commands else (),
        cached_scripts=info.get_int("memory", "number_of_cached_scripts") or 0,
        acl_users=await _acl_users(seed),
        search_indexes=await _indexes(seed) if "search" in modules else (),
        maxmemory=sum(n.info.get_int("memory", "maxmemory") or 0 for n in nodes),
        maxmemory_policy=info.get_str("memory", "maxmemory_policy"),
        aof=info.get_int("persistence", "aof_enabled") == 1,
        rdb_save=await _config(seed, "save"),
        used_memory=sum(n.info.get_int("memory", "used_memory") or 0 for n in nodes),
        used_memory_startup=sum(
            n.info.get_int("memory", "used_memory_startup") or 0 for n in nodes
        ),
        fragmentation=info.get_float("memory", "mem_fragmentation_ratio"),
    )


async def known_commands(client: EngineClient, names: Sequence[str]) -> dict[str, int]:
    """Which of `names` the server has, with each one's arity (COMMAND INFO); a refusal
    answers every name as known, so nothing is reported missing that was not checked."""
    if not names:
        return {}
    try:
        reply = await client.execute("COMMAND", "INFO", *names)
    except EngineError:
        return dict.fromkeys(names, 0)
    found: dict[str, int] = {}
    for name, entry in zip(names, reply, strict=False):
        if isinstance(entry, list) and len(entry) > 1 and isinstance(entry[1], int):
            found[name] = entry[1]
    return found


async def _known(client: EngineClient, names: list[str]) -> set[str]:
    return set(await known_commands(client, names))


async def _modules(client: EngineClient) -> dict[str, int]:
    try:
        reply = await client.execute("MODULE", "LIST")
    except EngineError:
        return {}
    modules: dict[str, int] = {}
    for entry in reply or []:
        fields = _pairs(entry)
        name = _text(fields.get("name"))
        if name and name not in BUILT_IN_MODULES:
            modules[name] = int(fields.get("ver", 0) or 0)
    return modules


async def _libraries(client: EngineClient) -> tuple[FunctionLibrary, ...]:
    try:
        reply = await client.execute("FUNCTION", "LIST", "WITHCODE")
    except EngineError:
        return ()
    libraries = []
    for entry in reply or []:
        fields = _pairs(entry)
        libraries.append(
            FunctionLibrary(
                name=_text(fields.get("library_name")),
                engine=_text(fields.get("engine")),
                functions=len(fields.get("functions") or []),
                code=_text(fields.get("library_code")),
            )
        )
    return tuple(libraries)


async def _acl_users(client: EngineClient) -> tuple[str, ...] | None:
    try:
        reply = await client.execute("ACL", "USERS")
    except EngineError:
        return None
    return tuple(sorted(_text(u) for u in reply or []))


async def _indexes(client: EngineClient) -> tuple[str, ...]:
    try:
        reply = await client.execute("FT._LIST")
    except EngineError:
        return ()
    return tuple(sorted(_text(i) for i in reply or []))


async def _config(client: EngineClient, name: str) -> str | None:
    try:
        reply = await client.execute("CONFIG", "GET", name)
    except EngineError:
        return None
    return _text(reply[1]) if isinstance(reply, list) and len(reply) == 2 else None


def _pairs(entry: Any) -> dict[str, Any]:
    if isinstance(entry, dict):
        return {_text(k): v for k, v in entry.items()}
    items = list(entry or [])
    return {_text(items[i]): items[i + 1] for i in range(0, len(items) - 1, 2)}


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
