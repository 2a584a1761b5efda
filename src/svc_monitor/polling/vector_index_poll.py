"""One vector index pass: FT._LIST, then FT.INFO of each index, where a search engine is
loaded; then the search latency inputs: LATENCY HISTOGRAM of the search commands and the
slow-log threshold in one round trip, and the window's stored slow-log entries
(docs/features/vector-search.md)."""

import asyncio
import logging
import time
from dataclasses import replace
from typing import Any

from svc_monitor.cluster.service import ClusterService
from svc_monitor.config import Settings
from svc_monitor.engine.capabilities import is_refusal
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.latency import merge_histograms, parse_latency_histogram
from svc_monitor.engine.search_index import SearchIndexInfo, parse_ft_info, parse_ft_list
from svc_monitor.events import now_ms
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues
from svc_monitor.slowlog.service import SlowlogService
from svc_monitor.vector_search.models import LOGGED_COMMANDS, SEARCH_COMMANDS, LatencyReading
from svc_monitor.vector_search.service import IndexPoll, SearchModule, VectorSearchService

logger = logging.getLogger(__name__)

# FT.INFO runs on the server's main thread, and on RediSearch it walks an HNSW index to
# size it: on 2.10 with 32-dimension vectors, about 0.2 ms at 500 documents, 1 ms at 5,000,
# 4 ms at 20,000 (bench/ft_info.py). So one index per round trip, and the indexes of a
# pass spread over SPREAD_SHARE of the interval: after each a pause of that share over the
# indexes, and at least PACE_FACTOR times as long as the FT.INFO took (MIN_PAUSE_S at the
# least).
# Other clients then wait behind one FT.INFO at most, and one in a few hundred of their
# calls does at 20 indexes a minute (bench/vector.py measures what they see).
SPREAD_SHARE = 0.5
PACE_FACTOR = 4.0
MIN_PAUSE_S = 0.002
# The most stored slow-log entries one pass reads for the latency figures.
MAX_SLOW_ENTRIES = 100_000
# Indexes read per pass; a server with more shows the first ones by name (logged once).
MAX_INDEXES = 256


class VectorIndexPoller:
    """Reads every search index's FT.INFO into vector index history and the live view."""

    def __init__(
        self,
        vector_search: VectorSearchService,
        slowlog: SlowlogService | None = None,
        clusters: ClusterService | None = None,
    ) -> None:
        self._vector_search = vector_search
        self._slowlog = slowlog
        self._clusters = clusters
        self._modules: dict[str, SearchModule | None] = {}
        self._capped: set[str] = set()
        self._refused: dict[str, set[str]] = {}  # connection id -> latency reads refused

    async def poll(self, target: PollTarget) -> None:
        connection_id = target.connection.id
        client = target.client
        commands: list[list[Any]] = [["FT._LIST"]]
        first = connection_id not in self._modules
        if first:
            commands.append(["MODULE", "LIST"])
        replies = await client.try_each(commands)
        if isinstance(replies[0], EngineError):
            logger.debug("%s: FT._LIST refused: %s", connection_id, replies[0].message)
            return
        if first:
            self._modules[connection_id] = _search_module(replies[1])
        nodes = await self._nodes(target)
        # (node, client, index names) of each node read; the seed's list is the one above.
        listed: list[tuple[str | None, EngineClient, list[str]]] = []
        for address, node_client in nodes:
            if node_client is client:
                listed.append((address, client, parse_ft_list(replies[0])))
                continue
            [reply] = await node_client.try_each([["FT._LIST"]])
            if isinstance(reply, EngineError):
                logger.debug("%s: FT._LIST on %s: %s", connection_id, address, reply.message)
                continue
            listed.append((address, node_client, parse_ft_list(reply)))
        listed = self._capped_to_max(connection_id, listed)
        indexes: list[SearchIndexInfo] = []
        values = target.values
        interval_s = (values.vectorIndexPollIntervalMs if values else 60_000) / 1000
        spread = SPREAD_SHARE * interval_s / max(sum(len(n) for _, _, n in listed), 1)
        pause = 0.0  # none before the first
        for address, node_client, names in listed:
            for name in names:
                if pause:
                    await asyncio.sleep(pause)
                started = time.perf_counter()
                [reply] = await node_client.try_each([["FT.INFO", name]])
                pause = max(MIN_PAUSE_S, spread, PACE_FACTOR * (time.perf_counter() - started))
                if isinstance(reply, EngineError):
                    # Dropped between FT._LIST and FT.INFO ("Unknown index name"): not shown.
                    logger.debug("%s: FT.INFO %s: %s", connection_id, name, reply.message)
                    continue
                indexes.append(replace(parse_ft_info(name, reply), node=address))
        module = self._modules.get(connection_id)
        self._vector_search.record(connection_id, IndexPoll(now_ms(), module, tuple(indexes)))
        if values is not None:
            await self._latency(target, values, [c for _, c, _ in listed] or [client])

    async def _nodes(self, target: PollTarget) -> list[tuple[str | None, EngineClient]]:
        """Where the indexes are read: a cluster's every primary, reached directly (each
        shard has its own indexes), named by host:port; else the server itself (None)."""
        identity = target.identity
        if self._clusters is None or identity is None or not identity.cluster_enabled:
            return [(None, target.client)]
        found = await self._clusters.primary_clients(target.connection, target.client)
        return [(address, node_client) for address, node_client in found]

    def _capped_to_max(
        self, connection_id: str, listed: list[tuple[str | None, EngineClient, list[str]]]
    ) -> list[tuple[str | None, EngineClient, list[str]]]:
        """At most MAX_INDEXES in all, the first by name of each node in node order."""
        total = sum(len(names) for _, _, names in listed)
        if total <= MAX_INDEXES:
            return listed
        if connection_id not in self._capped:
            self._capped.add(connection_id)
            logger.warning(
                "%s: %d search indexes; the first %d are read", connection_id, total, MAX_INDEXES
            )
        kept: list[tuple[str | None, EngineClient, list[str]]] = []
        room = MAX_INDEXES
        for address, node_client, names in listed:
            kept.append((address, node_client, names[:room]))
            room -= len(kept[-1][2])
        return kept

    async def _latency(
        self, target: PollTarget, values: RuntimeSettingsValues, clients: list[EngineClient]
    ) -> None:
        identity = target.identity
        assert identity is not None  # _applies
        connection_id = target.connection.id
        refused = self._refused.setdefault(connection_id, set())
        asks: dict[str, list[Any]] = {}
        if "config" not in refused:
            asks["config"] = ["CONFIG", "GET", "slowlog-log-slower-than"]
        if "histogram" not in refused and identity.has_latency_histogram():
            asks["histogram"] = ["LATENCY", "HISTOGRAM", *SEARCH_COMMANDS]
        replies = dict(zip(asks, await target.client.try_each(list(asks.values())), strict=True))
        histograms: list[Any] = [replies.get("histogram")]
        if "histogram" in asks:
            # A cluster's calls are spread over its shards: every primary's histogram, summed.
            for other in clients:
                if other is not target.client:
                    histograms.extend(await other.try_each([asks["histogram"]]))
        for name, reply in replies.items():
            if isinstance(reply, EngineError) and is_refusal(reply):
                # Not asked again until forgotten: a NOPERM user's refusals would pile
                # up in the ACL log we audit.
                refused.add(name)
        captured_at = now_ms()
        entries: list[tuple[str, str | None, int]] = []
        if self._slowlog is not None and identity.capabilities.has_slow_log:
            entries = await self._slowlog.durations_since(
                connection_id,
                since_ms=captured_at - self._vector_search.latency_window_ms,
                commands=LOGGED_COMMANDS,
                limit=MAX_SLOW_ENTRIES,
            )
        read = [
            parse_latency_histogram(h)
            for h in histograms
            if h is not None and not isinstance(h, EngineError)
        ]
        parsed = merge_histograms(read) if read else None
        reading = LatencyReading(
            captured_at=captured_at,
            histograms=parsed,
            slow_entries=entries,
            slow_log_threshold_us=_threshold(replies.get("config")),
            slow_log_name="commandlog" if identity.capabilities.has_command_log else "slowlog",
        )
        self._vector_search.record_latency(connection_id, reading, values)

    async def forget(self, connection_id: str) -> None:
        # Removed or edited: the next pass asks MODULE LIST again.
        self._modules.pop(connection_id, None)
        self._capped.discard(connection_id)
        self._refused.pop(connection_id, None)
        self._vector_search.forget(connection_id)

    def kind(self) -> PollKind:
        return PollKind(
            name="vector_index",
            interval_ms=_interval,
            poll=self.poll,
            applies=_applies,
            forget=self.forget,
            # Paced, a pass over large indexes runs for seconds: it would hold the other
            # polls of the connection up (as key analytics would), so it does not take turns.
            takes_turns=False,
        )


def _applies(target: PollTarget) -> bool:
    identity = target.identity
    return identity is not None and identity.capabilities.has_vector_search


def _threshold(reply: Any) -> int | None:
    """slowlog-log-slower-than from CONFIG GET (None when refused or unreadable)."""
    if not isinstance(reply, list) or len(reply) < 2:
        return None
    try:
        return int(reply[1])
    except (TypeError, ValueError):
        return None


def _interval(values: RuntimeSettingsValues, _: Settings) -> int:
    return values.vectorIndexPollIntervalMs


def _search_module(reply: Any) -> SearchModule | None:
    """The search engine in MODULE LIST (RediSearch and Valkey Search are both `search`;
    Redis 8 lists its built-in one as `search` too). None when refused or not listed."""
    if not isinstance(reply, list):
        return None
    for entry in reply:
        fields = (
            dict(zip(entry[::2], entry[1::2], strict=False)) if isinstance(entry, list) else entry
        )
        if not isinstance(fields, dict):
            continue
        fields = {_text(k): v for k, v in fields.items()}
        name = _text(fields.get("name", ""))
        if name.lower() == "search":
            version = fields.get("ver")
            return SearchModule(name=name, version=None if version is None else _text(version))
    return None


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
