"""Every domain, named once (docs/architecture.md#layers).

A domain is a package at the root of svc_monitor that holds one capability: its routes,
service, store and schemas. pyproject.toml's import contracts and the layer table of
docs/architecture.md are written from these lists by `python -m scripts.import_contracts_gen`,
and tests/test_import_contracts_gen.py fails while either differs from what it writes. A new
domain is one name here, then that command.

Nothing imports this module at run time and it imports nothing: it is data the contracts
are generated from.
"""

# The base domains every feature stands on: the connections, the licence, users and roles,
# the runtime settings, the replicas. They form the layer below the features, so none may
# import a feature domain. audit/ (the instances' ACL trail) stays a feature: who did what
# in svc-monitor itself is auth's own activity log (auth/activity.py), so no base domain
# reaches for it.
BASE: tuple[str, ...] = (
    "auth",
    "connections",
    "licensing",
    "replicas",
    "runtime_settings",
)

# The feature domains, each one capability over the base domains; independent of each other
# in the Layers contract, and reaching each other only through their public modules.
FEATURE: tuple[str, ...] = (
    "agent_links",
    "anomaly",
    "audit",
    "client_analytics",
    "cluster",
    "commandstats",
    "console",
    "cve",
    "detection",
    "forecast",
    "info_history",
    "key_analytics",
    "latency_analytics",
    "live",
    "migration",
    "slowlog",
    "system",
    "traces",
    "vector_search",
    "webhooks",
)

# Left out of the boundaries contract (another domain is reached only through its service,
# models and schemas) as a whole: none today (detection/ is split below).
BOUNDARY_EXEMPT: tuple[str, ...] = ()

# Domains whose sub-packages are each a domain of their own in the boundaries contract:
# console/'s browser CLI and its MONITOR stream keep their helpers from each other; what
# both use (limits.py, socket_protocol.py) sits in console/ itself, outside either.
# detection/'s alert states keep their store to themselves; its detectors are small pipe
# consumers without a service, built by the composition roots (and the config watch by its
# poll kind), so the rest of detection/ is left out.
SPLIT: dict[str, tuple[str, ...]] = {
    "console": ("cli", "monitor"),
    "detection": ("alerts",),
}
