"""One execution job: the source's keys copied to the target, resumable, paced by the
source's load, with a catch-up pass (docs/features/migration.md#execution).

The phases, each resumable where it stopped (the job's `state`, written after every SCAN
page with the counts that page brought):

1. `functions`: each function library of the source loaded on every target primary
   (FUNCTION LOAD; REPLACE with overwrite).
2. `copy`: every source primary and database SCANned from its stored cursor; each page
   copied in batches of BATCH_KEYS keys (copier.py), pausing after every batch as
   engine/pacing.py says for the time the source took, and waiting while the source is
   under pressure (pipe/pressure.py, the signal the pollers use).
3. `catchup`: every key SCANned again and compared with the target's (values.py); a key
   created or changed on the source since it was copied is copied again.
4. `prune`: when the target was empty at the start, its keys are SCANned and those the
   source no longer holds (deleted during the copy) are deleted from the target.

What the catch-up cannot catch: a write to the source after the catch-up pass read that
key. Stop the writers (or accept those last writes) before moving clients over; the
validation job then shows whatever differs.

A resumed page is copied again whole, with REPLACE: the target held nothing of the
source's at the start (or overwrite was asked), so every key it holds that the source
has is one of ours.
"""

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine import pacing
from svc_monitor.engine.client import EngineClient
from svc_monitor.errors import Conflict
from svc_monitor.migration import ends
from svc_monitor.migration.compare import End, Timed, compare
from svc_monitor.migration.copier import Copier, Counts, Destination, Routed
from svc_monitor.migration.findings import Facts, findings
from svc_monitor.migration.jobs import JobContext
from svc_monitor.migration.models import EndProfile
from svc_monitor.migration.values import Commands
from svc_monitor.pipe.live_view import LiveView
from svc_monitor.pipe.pressure import pressure_reason

BATCH_KEYS = 50
SCAN_COUNT = 500
PRESSURE_WAIT_S = 1.0
# The copy gives a key the source's absolute expiry; PTTL on Redis 6.2 rounds to the ms
# and the clocks of two reads differ by a few.
CATCH_UP_TTL_TOLERANCE_MS = 1_000
# Findings the copy cannot go on with; the others are the analysis's to tell.
REFUSING = frozenset(
    {
        "same_server",
        "cluster_to_standalone",
        "databases_into_cluster",
        "hash_field_expiry_unsupported",
        "module_missing",
        "memory_exceeds_target",
    }
)


def modern(end: EndProfile) -> bool:
    """PEXPIRETIME, XSETID ENTRIESADDED, XGROUP ENTRIESREAD: Redis 7.0+, every Valkey."""
    return end.engine == "valkey" or end.release >= (7, 0, 0)


class Execution:
    def __init__(
        self,
        connections: ConnectionService,
        live_state: LiveView,
        *,
        pressure_wait_s: float = PRESSURE_WAIT_S,
    ) -> None:
        self._connections = connections
        self._live = live_state
        self._pressure_wait_s = pressure_wait_s

    async def preflight(
        self, source: Connection, target: Connection, *, overwrite: bool
    ) -> tuple[EndProfile, EndProfile]:
        """Both ends' profiles; Conflict (409) when the copy cannot start."""
        opened: list[EngineClient] = []
        try:
            src, tgt = self._connections.client(source), self._connections.client(target)
            src_info, tgt_info = await src.info(), await tgt.info()
            nodes = self._connections.node_client
            s = await ends.profile(
                source.name, src, await ends.primaries(src, src_info, nodes, opened)
            )
            t = await ends.profile(
                target.name, tgt, await ends.primaries(tgt, tgt_info, nodes, opened)
            )
        finally:
            for client in opened:
                await client.close()
        same = src_info.get_str("server", "run_id") == tgt_info.get_str("server", "run_id")
        facts = Facts(
            source=s,
            target=t,
            same_server=same,
            needed_memory=0,
            needed_basis="",
            payload_version=None,
        )
        refusing = [f for f in findings(facts) if f.code in REFUSING]
        if not overwrite and any(f.code == "function_conflict" for f in findings(facts)):
            refusing += [f for f in findings(facts) if f.code == "function_conflict"]
        if refusing:
            raise Conflict(
                "The copy cannot start: "
                + "; ".join(f"{f.title} ({f.evidence})" for f in refusing)
                + ". Run an analysis for the fixes."
            )
        if t.keys and not overwrite:
            raise Conflict(
                f"The target holds {t.keys:,} keys: empty it first, or start the copy with "
                "overwrite (keys of the same name are then replaced)"
            )
        return s, t

    async def run(
        self,
        context: JobContext,
        source: Connection,
        target: Connection,
        *,
        overwrite: bool,
        catch_up: bool,
        method: str,
    ) -> dict[str, object]:
        s, t = await self.preflight(source, target, overwrite=True)  # re-read at (re)start
        state: dict[str, Any] = dict(context.job.state)
        if not state.get("parts"):
            state = _fresh_state(s, t, method)
        else:
            state["resumes"] = int(state.get("resumes", 0)) + 1
        state.pop("interrupted", None)
        opened: list[EngineClient] = []
        src, tgt = self._connections.client(source), self._connections.client(target)
        destination = Destination(tgt, self._connections.node_client)
        source_routes = Destination(src, self._connections.node_client)
        try:
            await destination.start()
            await source_routes.start()
            run = _Run(self, context, state, source, s, t, destination, source_routes, opened)
            await run.functions(overwrite)
            await run.copy()
            if catch_up:
                await run.catch_up()
            if state.get("targetWasEmpty"):
                await run.prune()
            return run.report()
        finally:
            await destination.close()
            await source_routes.close()
            for client in opened:
                await client.close()

    async def wait_for_room(
        self, connection_id: str, state: dict[str, Any], cancelled: asyncio.Event
    ) -> None:
        """While the source is under pressure, wait (counted in the state)."""
        while (reason := pressure_reason(self._live, connection_id)) is not None:
            state["waitingFor"] = reason
            started = time.monotonic()
            try:
                await asyncio.wait_for(cancelled.wait(), self._pressure_wait_s)
                return
            except TimeoutError:
                pass
            state["pressureSeconds"] = (
                float(state.get("pressureSeconds", 0.0)) + time.monotonic() - started
            )
        state.pop("waitingFor", None)


def _fresh_state(s: EndProfile, t: EndProfile, method: str) -> dict[str, Any]:
    parts = [
        {"db": db, "cursor": 0, "done": False} for db, keys in sorted(s.databases.items()) if keys
    ]
    return {
        "method": "type_aware" if method == "type_aware" else "dump_restore",
        "phase": "functions",
        "parts": parts,
        "catchupParts": [dict(p) for p in parts],
        "pruneParts": [{"db": db, "cursor": 0, "done": False} for db in sorted(s.databases) or [0]],
        "counts": {
            "copied": 0,
            "bytes": 0,
            "expired": 0,
            "skipped": 0,
            "checked": 0,
            "recopied": 0,
            "removed": 0,
        },
        "skippedKeys": [],
        "totalKeys": s.keys,
        "activeSeconds": 0.0,
        "pressureSeconds": 0.0,
        "resumes": 0,
        "functions": [],
        "targetWasEmpty": t.keys == 0,
    }


class _Run:
    """One (re)start of an execution over its state."""

    def __init__(
        self,
        execution: Execution,
        context: JobContext,
        state: dict[str, Any],
        source: Connection,
        s: EndProfile,
        t: EndProfile,
        destination: Destination,
        source_routes: Destination,
        opened: list[EngineClient],
    ) -> None:
        self._execution = execution
        self._context = context
        self.state = state
        self._source = source
        self._s = s
        self._t = t
        self._destination = destination
        self._source_routes = source_routes
        self._opened = opened
        self._started = time.monotonic()
        self._active_before = float(state.get("activeSeconds", 0.0))
        self._copiers: dict[int, Copier] = {}

    # --- phases ---

    async def functions(self, overwrite: bool) -> None:
        if self.state["phase"] != "functions":
            return
        if self._s.libraries and self._t.has_functions:
            theirs = {lib.name: lib.code for lib in self._t.libraries}
            for lib in self._s.libraries:
                if theirs.get(lib.name) == lib.code:
                    continue
                replacing = ["REPLACE"] if overwrite or lib.name in theirs else []
                # Functions are not a key: each primary of a cluster holds its own copy.
                for client in self._destination.node_clients(0):
                    await client.execute("FUNCTION", "LOAD", *replacing, lib.code)
                self.state["functions"].append(lib.name)
        self.state["phase"] = "copy"
        await self._save()

    async def copy(self) -> None:
        if self.state["phase"] != "copy":
            return
        for part in self.state["parts"]:
            for client in self._source_routes.node_clients(part["db"]):
                await self._scan_part(part, client, self._copy_page)
        self.state["phase"] = "catchup"
        await self._save()

    async def catch_up(self) -> None:
        if self.state["phase"] != "catchup":
            return
        for part in self.state["catchupParts"]:
            for client in self._source_routes.node_clients(part["db"]):
                await self._scan_part(part, client, self._catch_up_page)
        self.state["phase"] = "prune"
        await self._save()

    async def prune(self) -> None:
        if self.state["phase"] != "prune":
            return
        for part in self.state["pruneParts"]:
            for client in self._destination.node_clients(part["db"]):
                await self._scan_part(part, client, self._prune_page)
        self.state["phase"] = "done"
        await self._save()

    def report(self) -> dict[str, object]:
        c = self.state["counts"]
        active = self._active()
        done = c["copied"] + c["expired"] + c["skipped"]
        return {
            "method": self.state["method"],
            "totalKeys": self.state["totalKeys"],
            "copiedKeys": c["copied"],
            "copiedBytes": c["bytes"],
            "expiredKeys": c["expired"],
            "skippedKeys": c["skipped"],
            "skippedExamples": self.state["skippedKeys"],
            "checkedKeys": c["checked"],
            "recopiedKeys": c["recopied"],
            "removedKeys": c["removed"],
            "functionsLoaded": self.state["functions"],
            "activeSeconds": round(active, 3),
            "pressureSeconds": round(float(self.state.get("pressureSeconds", 0.0)), 3),
            "keysPerSecond": done / active if active > 0 else None,
            "bytesPerSecond": c["bytes"] / active if active > 0 else None,
            "resumes": self.state.get("resumes", 0),
        }

    # --- the scans ---

    async def _scan_part(
        self, part: dict[str, Any], client: EngineClient, page: Callable[..., Any]
    ) -> None:
        """SCAN one server's database from the part's cursor, handing each page over and
        saving the cursor after it. On a cluster a part has one cursor per node: its
        `nodes` entry keyed by address."""
        key = client.target.address
        nodes = part.setdefault("nodes", {})
        if nodes.get(key, {}).get("done"):
            return
        cursor = int(nodes.get(key, {}).get("cursor", 0))
        cancelled = self._context.cancelled
        while not cancelled.is_set():
            await self._execution.wait_for_room(self._source.id, self.state, cancelled)
            reply = await client.execute("SCAN", cursor, "COUNT", SCAN_COUNT)
            cursor = int(reply[0])
            keys = list(dict.fromkeys(reply[1]))
            for start in range(0, len(keys), BATCH_KEYS):
                await page(part["db"], keys[start : start + BATCH_KEYS])
            nodes[key] = {"cursor": cursor, "done": cursor == 0}
            await self._save()
            if cursor == 0:
                return

    async def _copy_page(self, db: int, keys: Sequence[bytes]) -> None:
        counts = await self._paced(lambda copier: copier.copy(keys, replace_existing=True), db)
        self._add(counts)

    async def _catch_up_page(self, db: int, keys: Sequence[bytes]) -> None:
        differ = await self._differing(db, keys)
        self.state["counts"]["checked"] += len(keys)
        if differ:
            counts = await self._paced(
                lambda copier: copier.copy(differ, replace_existing=True), db
            )
            self.state["counts"]["recopied"] += counts.copied

    async def _prune_page(self, db: int, keys: Sequence[bytes]) -> None:
        by_client: dict[int, tuple[EngineClient, list[bytes]]] = {}
        for key in keys:
            client = self._source_routes.client_for(key, db)
            by_client.setdefault(id(client), (client, []))[1].append(key)
        gone: list[bytes] = []
        for client, batch in by_client.values():
            replies = await client.try_each([["EXISTS", k] for k in batch])
            gone += [k for k, r in zip(batch, replies, strict=True) if r == 0]
        for key in gone:
            removed = await self._destination.client_for(key, db).execute("DEL", key)
            self.state["counts"]["removed"] += int(removed or 0)
        await asyncio.sleep(pacing.MIN_PAUSE_S)

    async def _differing(self, db: int, keys: Sequence[bytes]) -> list[bytes]:
        """The keys whose target copy differs from the source's (or is missing)."""
        if not keys:
            return []
        source = Timed(Routed(self._source_routes, db))
        found = await compare(
            _end(self._s, source),
            _end(self._t, Routed(self._destination, db)),
            keys,
            field_ttls=self._s.hash_field_expiry and self._t.hash_field_expiry,
            tolerance_ms=CATCH_UP_TTL_TOLERANCE_MS,
        )
        await asyncio.sleep(pacing.pause_for(source.busy_s))
        return [c.key for c in found if c.outcome == "differs"]

    async def _paced(self, work: Callable[[Copier], Any], db: int) -> Counts:
        copier = self._copier(db)
        before = copier.source_busy_s
        counts: Counts = await work(copier)
        self.state["method"] = copier.method
        await asyncio.sleep(pacing.pause_for(copier.source_busy_s - before))
        return counts

    def _copier(self, db: int) -> Copier:
        copier = self._copiers.get(db)
        if copier is None or copier.method != self.state["method"]:
            copier = self._copiers[db] = Copier(
                Routed(self._source_routes, db),
                db,
                self._destination,
                method=self.state["method"],
                overwrite=True,
                absolute_ttl=modern(self._s),
                field_ttls=self._s.hash_field_expiry and self._t.hash_field_expiry,
                modern_streams=modern(self._t),
            )
        return copier

    def _add(self, counts: Counts) -> None:
        c = self.state["counts"]
        c["copied"] += counts.copied
        c["bytes"] += counts.bytes
        c["expired"] += counts.expired
        c["skipped"] += counts.skipped
        self.state["skippedKeys"] = (self.state["skippedKeys"] + counts.skipped_keys)[:20]

    def _active(self) -> float:
        return self._active_before + time.monotonic() - self._started

    async def _save(self) -> None:
        self.state["activeSeconds"] = self._active()
        c = self.state["counts"]
        total = max(1, int(self.state["totalKeys"]))
        share = {
            "functions": 0.0,
            "copy": 0.9 * min(1.0, (c["copied"] + c["expired"] + c["skipped"]) / total),
        }
        percent = 100 * share.get(
            self.state["phase"], 0.9 if self.state["phase"] != "done" else 1.0
        )
        if self.state["phase"] == "catchup":
            percent = 90 + 9 * min(1.0, c["checked"] / total)
        await self._context.report(percent, dict(self.state), save=True)


def _end(profile: EndProfile, commands: Commands) -> End:
    return End(commands, modern(profile), (profile.engine, profile.release[:2]))
