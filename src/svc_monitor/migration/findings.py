"""The analysis's findings: what the set-up of the two ends implies for a migration.

Pure rules over what analysis.py read (`Facts`): each finding has a severity, the evidence
that shows it and the fix. The verdict is `blocked` while any finding blocks,
`ready_with_warnings` while any warns, `ready` otherwise. The list, with why each rule has
the severity it has, is docs/features/migration.md#findings.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field

from svc_monitor.migration import payload
from svc_monitor.migration.models import EndProfile, Finding, Verdict

# Types every engine has: any other TYPE reply is a module's data type.
CORE_TYPES = frozenset({"string", "list", "set", "zset", "hash", "stream"})
# Memory needed above this share of the target's maxmemory leaves too little headroom.
TIGHT_SHARE = 0.9


@dataclass(frozen=True, slots=True)
class Facts:
    source: EndProfile
    target: EndProfile
    same_server: bool
    needed_memory: int  # bytes the data will take on the target
    needed_basis: str
    payload_version: int | None
    # Commands the source's clients call (commandstats, slow log), name -> calls, and
    # the arity of those each end has (COMMAND INFO).
    used_commands: dict[str, int] = field(default_factory=dict)
    source_arity: dict[str, int] = field(default_factory=dict)
    target_arity: dict[str, int] = field(default_factory=dict)
    sampled_types: dict[str, int] = field(default_factory=dict)
    expiring_during_copy: int = 0
    duration_s: float | None = None


def findings(facts: Facts) -> list[Finding]:
    order = {"blocking": 0, "warning": 1, "info": 2}
    return sorted(_all(facts), key=lambda f: order[f.severity])


def verdict(found: list[Finding]) -> Verdict:
    if any(f.severity == "blocking" for f in found):
        return "blocked"
    if any(f.severity == "warning" for f in found):
        return "ready_with_warnings"
    return "ready"


def _all(f: Facts) -> Iterator[Finding]:
    yield from _topology(f)
    yield from _data(f)
    yield from _server_side_code(f)
    yield from _settings(f)
    yield from _commands(f)


def _topology(f: Facts) -> Iterator[Finding]:
    s, t = f.source, f.target
    if f.same_server:
        yield Finding(
            "same_server",
            "blocking",
            "Source and target are the same server",
            f"both connections reach {s.address}",
            "Pick a target that is another server.",
        )
    if s.cluster and not t.cluster:
        yield Finding(
            "cluster_to_standalone",
            "blocking",
            "A cluster cannot be migrated into a standalone server",
            f"the source is a cluster of {s.primaries} primaries; the target is standalone",
            "Migrate into a cluster, or split the keyspace by slot ranges yourself.",
        )
    if t.cluster and not s.cluster:
        used = sorted(db for db, keys in s.databases.items() if keys and db != 0)
        if used:
            yield Finding(
                "databases_into_cluster",
                "blocking",
                "A cluster has only database 0",
                "keys in databases " + ", ".join(str(db) for db in used),
                "Move those keys into database 0 (with new key names if they collide), "
                "or migrate each database into a cluster of its own.",
            )
        yield Finding(
            "standalone_to_cluster",
            "warning",
            "Standalone to cluster: multi-key commands must stay within one slot",
            f"the target is a cluster of {t.primaries} primaries",
            "Check that clients run in cluster mode and that keys used together share a "
            "hash tag ({user:1}:cart); MOVED redirects otherwise.",
        )
    if t.keys:
        yield Finding(
            "target_not_empty",
            "warning",
            "The target already holds keys",
            f"{t.keys:,} keys on {t.address}",
            "Flush it first, or start the copy with overwrite: keys with the same name "
            "are then replaced.",
        )


def _data(f: Facts) -> Iterator[Finding]:
    s, t = f.source, f.target
    if s.volatile_hash_keys and not t.hash_field_expiry:
        yield Finding(
            "hash_field_expiry_unsupported",
            "blocking",
            "Hash fields with their own TTL: the target has no hash-field expiry",
            f"{s.volatile_hash_keys:,} hashes with field TTLs (INFO keyspace); "
            f"{t.engine} {t.version} has no HEXPIRE",
            "Migrate to Valkey 9+ or Redis 7.4+, or drop the field TTLs first.",
        )
    module_types = {k: v for k, v in f.sampled_types.items() if k not in CORE_TYPES}
    for module in sorted(set(s.modules) - set(t.modules)):
        keys = ", ".join(f"{n:,} sampled keys of type {k}" for k, n in module_types.items())
        yield Finding(
            "module_missing",
            "blocking",
            f"Module {module} is not loaded on the target",
            f"{module} {s.modules[module]} on the source" + (f"; {keys}" if keys else ""),
            f"Load {module} on the target (loadmodule) before migrating.",
        )
    if f.payload_version is not None and not payload.accepts(
        t.engine, t.release, f.payload_version
    ):
        yield Finding(
            "payload_type_aware",
            "info",
            "The target cannot RESTORE the source's DUMP payloads: keys are copied type by type",
            f"payload RDB version {f.payload_version}; {t.engine} {t.version} reads up to "
            f"{payload.writes(t.engine, t.release)}",
            "Nothing to do: strings, hashes, lists, sets, sorted sets and streams are written "
            "by their own commands, TTLs kept. Keys of a module type cannot be copied so.",
        )
        if module_types:
            yield Finding(
                "module_keys_need_restore",
                "blocking",
                "Keys of a module type can only be copied by DUMP/RESTORE",
                ", ".join(f"{n:,} sampled keys of type {k}" for k, n in module_types.items()),
                "Pick a target that reads the source's payloads, or drop those keys.",
            )
    if f.expiring_during_copy:
        yield Finding(
            "keys_expiring",
            "info",
            "Some keys will expire while the copy runs",
            f"about {f.expiring_during_copy:,} keys have a TTL shorter than the estimated "
            f"{_duration(f.duration_s)}",
            "Nothing to do: validation counts keys expired during the copy apart, not as "
            "differences.",
        )
    if s.search_indexes:
        yield Finding(
            "search_indexes",
            "warning",
            "Search indexes are not keys: they are not copied",
            "indexes " + ", ".join(s.search_indexes),
            "Create them on the target with FT.CREATE (the same schema) before the copy; "
            "the documents copied are then indexed there.",
        )
    if t.maxmemory and f.needed_memory > t.maxmemory:
        yield Finding(
            "memory_exceeds_target",
            "blocking",
            "The data will not fit in the target's maxmemory",
            f"about {_mb(f.needed_memory)} needed ({f.needed_basis}); maxmemory {_mb(t.maxmemory)}",
            "Raise maxmemory on the target, or pick a bigger one.",
        )
    elif t.maxmemory and f.needed_memory > TIGHT_SHARE * t.maxmemory:
        yield Finding(
            "memory_tight",
            "warning",
            "The data will fill the target's maxmemory to over 90 %",
            f"about {_mb(f.needed_memory)} needed ({f.needed_basis}); maxmemory {_mb(t.maxmemory)}",
            "Raise maxmemory on the target: writes after the migration need headroom.",
        )


def _server_side_code(f: Facts) -> Iterator[Finding]:
    s, t = f.source, f.target
    if s.libraries and not t.has_functions:
        yield Finding(
            "functions_unsupported",
            "warning",
            "The target has no functions: the function libraries are not copied",
            "libraries " + ", ".join(lib.name for lib in s.libraries),
            "Rewrite FCALL callers to EVAL scripts, or pick a target with FUNCTION "
            "(Redis 7+, Valkey).",
        )
    elif s.libraries:
        theirs = {lib.name: lib.code for lib in t.libraries}
        clashing = [
            lib.name for lib in s.libraries if lib.name in theirs and theirs[lib.name] != lib.code
        ]
        if clashing:
            yield Finding(
                "function_conflict",
                "warning",
                "The target has function libraries of the same name with other code",
                "libraries " + ", ".join(clashing),
                "Delete them on the target, or start the copy with overwrite.",
            )
        yield Finding(
            "functions_copied",
            "info",
            "Function libraries are copied with the keys",
            "libraries " + ", ".join(lib.name for lib in s.libraries),
            "Nothing to do: each library is loaded on the target (FUNCTION LOAD).",
        )
    if s.cached_scripts:
        yield Finding(
            "cached_scripts",
            "info",
            "Scripts cached by SCRIPT LOAD are not copied",
            f"{s.cached_scripts:,} cached scripts (INFO memory)",
            "Clients that call EVALSHA must fall back to EVAL on NOSCRIPT, as most "
            "client libraries do.",
        )


def _settings(f: Facts) -> Iterator[Finding]:
    s, t = f.source, f.target
    if s.maxmemory_policy and t.maxmemory_policy and s.maxmemory_policy != t.maxmemory_policy:
        yield Finding(
            "eviction_policy_mismatch",
            "warning",
            "The ends evict keys differently",
            f"maxmemory-policy {s.maxmemory_policy} on the source, {t.maxmemory_policy} on "
            "the target",
            f"Set maxmemory-policy {s.maxmemory_policy} on the target.",
        )
    if s.acl_users is not None and t.acl_users is not None:
        missing = sorted(set(s.acl_users) - set(t.acl_users) - {"default"})
        if missing:
            yield Finding(
                "acl_users_missing",
                "warning",
                "ACL users of the source do not exist on the target",
                "users " + ", ".join(missing),
                "Create them on the target (ACL SETUSER, or the source's ACL LIST lines) "
                "before clients move.",
            )
    persistence = []
    if s.aof != t.aof:
        persistence.append(f"appendonly {_yes(s.aof)} on the source, {_yes(t.aof)} on the target")
    if s.rdb_save is not None and t.rdb_save is not None and s.rdb_save != t.rdb_save:
        persistence.append(f"save '{s.rdb_save}' on the source, '{t.rdb_save}' on the target")
    if persistence:
        yield Finding(
            "persistence_differs",
            "info",
            "The ends persist differently",
            "; ".join(persistence),
            "Set the target's appendonly and save as the source's if it must survive "
            "restarts the same way.",
        )
    if s.engine == t.engine and t.release < s.release:
        yield Finding(
            "version_downgrade",
            "info",
            "The target runs an older release",
            f"{s.engine} {s.version} to {t.version}",
            "Check that clients use no command newer than the target's release.",
        )


def _commands(f: Facts) -> Iterator[Finding]:
    missing = sorted((c for c in f.used_commands if c not in f.target_arity), key=str)
    if missing:
        yield Finding(
            "commands_missing",
            "warning",
            "Clients use commands the target does not have",
            ", ".join(f"{c} ({f.used_commands[c]:,} calls)" for c in missing),
            "Change those clients before they move: the target answers them with "
            "'unknown command'.",
        )
    differ = sorted(
        c
        for c in f.used_commands
        if c in f.target_arity
        and c in f.source_arity
        and f.source_arity[c] != f.target_arity[c]
        and f.target_arity[c]
        and f.source_arity[c]
    )
    if differ:
        yield Finding(
            "commands_differ",
            "info",
            "Commands that take other arguments on the target",
            ", ".join(f"{c} (arity {f.source_arity[c]} to {f.target_arity[c]})" for c in differ),
            "Check those calls against the target's COMMAND DOCS.",
        )


def _mb(n: float) -> str:
    return f"{n / 1_048_576:,.1f} MiB"


def _yes(on: bool) -> str:
    return "yes" if on else "no"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "duration"
    return f"{seconds:,.0f} s" if seconds < 120 else f"{seconds / 60:,.0f} min"
