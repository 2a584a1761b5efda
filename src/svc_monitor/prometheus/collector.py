"""The connection families, built from live state at scrape time (never from an engine).

Each scrape builds the families afresh from the latest Observation of every node and the
latest facts of the other polls (pipe/facts.py), so a removed connection leaves no
series behind, and one not observed for PROMETHEUS_STALENESS_MS drops out until it
answers again (except `svc_poll_stale`, which is there to say so). A cluster connection
shows every node it polls, each under its own host:port; a node that is also a
connection of its own shows once.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
)
from prometheus_client.metrics_core import Metric

from svc_monitor.engine.info import ParsedInfo
from svc_monitor.pipe.facts import (
    AclFacts,
    ClientFacts,
    ClusterFacts,
    CommandlogFacts,
    CommandstatsFacts,
    PatternCount,
    ReplicaBufferLimitFacts,
    SlowlogFacts,
)
from svc_monitor.pipe.live_view import LiveView
from svc_monitor.pipe.poll_counts import DURATION_BUCKETS
from svc_monitor.prometheus import catalogue as c
from svc_monitor.prometheus.catalogue import Family

# No INFO answer for this long and `svc_poll_stale` says 1 (it keeps its series).
POLL_STALE_AFTER_MS = 30_000
_CMDSTAT = "cmdstat_"


class Rows:
    """One family's samples as plain label values and values, in two parallel lists.

    prometheus_client's families build a named tuple and a label dict per sample, about
    two thirds of a scrape's time at 100 connections; the text writer reads these lists
    directly, and `metric()` makes the prometheus_client family when one is needed (the
    OTLP export). A family labelled by the connection alone (most of them) keeps each
    sample's host:port as it is, not in a list or tuple of its own: at a thousand
    connections a scrape holds ~50,000 such samples at once, and each container was one
    more object for the garbage collector to walk.
    """

    __slots__ = ("family", "keys", "single", "values")

    def __init__(self, family: Family) -> None:
        self.family = family
        self.single = not family.labels  # labelled by `connection` alone
        # The connection's host:port when `single`, else every label value in order.
        self.keys: list[str | tuple[str, ...]] = []
        self.values: list[float] = []

    def add(self, address: str, value: float) -> None:
        """A sample of a family labelled by the connection alone."""
        self.keys.append(address)
        self.values.append(value)

    def add_metric(self, labels: Sequence[str], value: float) -> None:
        self.keys.append(labels[0] if self.single else tuple(labels))
        self.values.append(value)

    def __len__(self) -> int:
        return len(self.values)

    @property
    def rows(self) -> list[tuple[tuple[str, ...], float]]:
        """Each sample as (label values, value): for tests and the OTLP export."""
        keys = ((k,) if isinstance(k, str) else k for k in self.keys)
        return list(zip(keys, self.values, strict=True))

    @property
    def samples(self) -> list[float]:
        """The values: as a family's `samples`, empty when it has none (the scrape leaves
        an empty family out)."""
        return self.values

    def metric(self) -> Metric:
        names = ["connection", *self.family.labels]
        family: CounterMetricFamily | GaugeMetricFamily
        if self.family.kind == "counter":
            family = CounterMetricFamily(self.family.name, self.family.help, labels=names)
        else:
            family = GaugeMetricFamily(self.family.name, self.family.help, labels=names)
        add = family.add_metric
        if self.single:
            for address, value in zip(self.keys, self.values, strict=True):
                add((address,), value)  # type: ignore[arg-type]
        else:
            for labels, value in zip(self.keys, self.values, strict=True):
                add(labels, value)
        return family


@dataclass(frozen=True, slots=True)
class ScrapedConnection:
    id: str
    address: str  # host:port, the `connection` label
    pushed: bool = False  # an OTLP push connection: never polled, so no svc_poll_stale


@dataclass(frozen=True, slots=True)
class _Node:
    connection_id: str
    address: str
    info: ParsedInfo
    seed: bool  # the connection's own host:port (cluster-wide facts hang on it)


class LiveStateCollector:
    """Yields the connection families of one scrape.

    Between two nodes of the families that hold many lines per node it yields None
    instead: a point where the scrape may give the event loop back. At a thousand
    connections building the commandstats families took ~50 ms in one go."""

    def __init__(
        self,
        live_state: LiveView,
        connections: Sequence[ScrapedConnection],
        *,
        now_ms: int,
        staleness_ms: int,
        full: bool = False,
    ) -> None:
        self._live_state = live_state
        self._connections = connections
        self._now_ms = now_ms
        self._oldest_ms = now_ms - staleness_ms
        self._full = full

    def collect(self) -> Iterator[Rows | Metric | None]:
        nodes = self._fresh_nodes()
        seeds = [n for n in nodes if n.seed]
        yield from self._info_families(nodes)
        yield from self._commandstats(seeds)
        yield from self._cluster(seeds)
        yield from self._logs(seeds)
        yield from self._acl_and_clients(seeds)
        yield from self._polls()

    # --- which nodes ---

    def _fresh_nodes(self) -> list[_Node]:
        nodes: list[_Node] = []
        seen: set[str] = set()
        for connection in self._connections:
            own = self._live_state.latest(connection.id)
            fresh = own is not None and own.received_at_ms >= self._oldest_ms
            if own is not None and fresh and connection.address not in seen:
                seen.add(connection.address)
                nodes.append(_Node(connection.id, connection.address, own.info, True))
            for other in self._live_state.nodes(connection.id):
                if (
                    other.node
                    and other.node not in seen
                    and other.received_at_ms >= self._oldest_ms
                ):
                    seen.add(other.node)
                    nodes.append(_Node(connection.id, other.node, other.info, False))
        return nodes

    # --- INFO ---

    def _info_families(self, nodes: list[_Node]) -> Iterator[Rows | Metric | None]:
        for spec in c.INFO_FIELDS:
            family = _new(spec.family)
            for node in nodes:
                value = node.info.get_float(spec.section, spec.field)
                if value is not None:  # a field the engine lacks: no series, not 0
                    family.add(node.address, value * spec.scale)
            yield family
        yield from self._replication(nodes)
        yield from self._persistence(nodes)
        yield from self._keyspace(nodes)
        instance = InfoMetricFamily(c.INSTANCE.name, c.INSTANCE.help, labels=["connection"])
        for node in nodes:
            instance.add_metric([node.address], _instance_labels(node.info))
        yield instance

    def _replication(self, nodes: list[_Node]) -> Iterator[Rows | Metric]:
        offset, link_up, last_io = (
            _new(c.REPLICATION_OFFSET),
            _new(c.MASTER_LINK_UP),
            _new(c.MASTER_LAST_IO),
        )
        buffer_ratio = _new(c.REPL_OUTPUT_BUFFER_RATIO)
        for node in nodes:
            info = node.info
            replica = info.get_str("replication", "role") == "slave"
            field = "slave_repl_offset" if replica else "master_repl_offset"
            if (value := info.get_float("replication", field)) is not None:
                offset.add(node.address, value)
            if not replica:
                if (ratio := self._buffer_ratio(node)) is not None:
                    buffer_ratio.add(node.address, ratio)
                continue
            if (status := info.get_str("replication", "master_link_status")) is not None:
                link_up.add(node.address, 1.0 if status == "up" else 0.0)
            io = info.get_float("replication", "master_last_io_seconds_ago")
            if io is not None and io >= 0:  # -1 while the link is down: no reading
                last_io.add(node.address, io)
        yield from (offset, link_up, last_io, buffer_ratio)

    def _buffer_ratio(self, node: _Node) -> float | None:
        """mem_clients_slaves over the replica hard limit, on a primary with a replica.

        Since Redis 7.0 (and so on Valkey) replicas share one replication buffer, and a
        replica's own buffer is its part of it: the most-lagging replica holds nearly all
        of mem_clients_slaves, so dividing the whole by one replica's limit tracks the
        replica closest to being dropped (before 7.0 it is an upper bound of it). Only the
        connection's own node: the config watch reads CONFIG on the seed alone."""
        if not node.seed or not node.info.get_float("replication", "connected_slaves"):
            return None
        used = node.info.get_float("memory", "mem_clients_slaves")
        limit = self._live_state.facts(node.connection_id, ReplicaBufferLimitFacts)
        if used is None or limit is None or limit.hard_limit_bytes <= 0:
            return None  # no CONFIG (denied, renamed) or no limit: nothing to compare with
        return used / limit.hard_limit_bytes

    def _persistence(self, nodes: list[_Node]) -> Iterator[Rows | Metric]:
        for spec, field in (
            (c.RDB_LAST_BGSAVE_OK, "rdb_last_bgsave_status"),
            (c.AOF_LAST_REWRITE_OK, "aof_last_bgrewrite_status"),
        ):
            family = _new(spec)
            for node in nodes:
                if (status := node.info.get_str("persistence", field)) is not None:
                    family.add(node.address, 1.0 if status == "ok" else 0.0)
            yield family

    def _keyspace(self, nodes: list[_Node]) -> Iterator[Rows | Metric | None]:
        total, expiring = _new(c.KEYSPACE_KEYS), _new(c.KEYSPACE_EXPIRING)
        keys, expires, ttl = _new(c.DB_KEYS), _new(c.DB_EXPIRING), _new(c.DB_AVG_TTL)
        for node in nodes:
            yield None
            keyspace = node.info.sections.get("keyspace")
            if keyspace is None:
                continue
            # An empty keyspace section is INFO saying "no keys": 0. A database line without
            # `expires` (a push of db.keys alone) says nothing about expiring keys: no series.
            all_keys: float | None = None if keyspace else 0.0
            all_expiring: float | None = None if keyspace else 0.0
            for db, fields in keyspace.items():
                if not isinstance(fields, dict):
                    continue
                labels = [node.address, db]
                if isinstance(n := fields.get("keys"), int | float):
                    keys.add_metric(labels, n)
                    all_keys = (all_keys or 0.0) + n
                if isinstance(n := fields.get("expires"), int | float):
                    expires.add_metric(labels, n)
                    all_expiring = (all_expiring or 0.0) + n
                if isinstance(n := fields.get("avg_ttl"), int | float):
                    ttl.add_metric(labels, n / 1000)
            if all_keys is not None:
                total.add(node.address, all_keys)
            if all_expiring is not None:
                expiring.add(node.address, all_expiring)
        yield from (total, expiring, keys, expires, ttl)

    # --- other polls' facts (on the connection's own host:port) ---

    def _commandstats(self, seeds: list[_Node]) -> Iterator[Rows | Metric | None]:
        calls, latency = _new(c.COMMAND_CALLS), _new(c.COMMAND_LATENCY)
        for node in seeds:
            yield None
            facts = self._live_state.facts(node.connection_id, CommandstatsFacts)
            if facts is None or facts.at_ms < self._oldest_ms:
                continue
            for key, fields in (facts.info.sections.get("commandstats") or {}).items():
                if not isinstance(fields, dict) or not key.startswith(_CMDSTAT):
                    continue
                labels = [node.address, key[len(_CMDSTAT) :]]
                if isinstance(n := fields.get("calls"), int | float):
                    calls.add_metric(labels, n)
                if isinstance(n := fields.get("usec_per_call"), int | float):
                    latency.add_metric(labels, n / 1e6)
        yield from (calls, latency)

    def _cluster(self, seeds: list[_Node]) -> Iterator[Rows | Metric]:
        families = [(_new(spec), field) for spec, field in c.CLUSTER_INFO_FIELDS]
        slot_families = (
            (_new(c.SLOT_KEYS), "key_count"),
            (_new(c.SLOT_EXPIRES), "expires_count"),
            (_new(c.SLOT_READS), "total_reads"),
            (_new(c.SLOT_WRITES), "total_writes"),
        )
        for node in seeds:
            facts = self._live_state.facts(node.connection_id, ClusterFacts)
            if facts is None or facts.at_ms < self._oldest_ms:
                continue
            for family, field in families:
                value = facts.info.get(field)
                if isinstance(value, int):
                    family.add(node.address, value)
            if not self._full:
                continue
            for slot in facts.top_slots:
                for family, field in slot_families:
                    value = getattr(slot, field)
                    if value is not None:  # the engine does not count it: no series
                        family.add_metric([node.address, str(slot.slot)], value)
        yield from (family for family, _ in families)
        if self._full:
            yield from (family for family, _ in slot_families)

    def _logs(self, seeds: list[_Node]) -> Iterator[Rows | Metric | None]:
        length, last_id = _new(c.SLOWLOG_LENGTH), _new(c.SLOWLOG_LAST_ID)
        pattern_families = (
            _new(c.SLOWLOG_PATTERN_COUNT),
            _new(c.SLOWLOG_PATTERN_AVG),
            _new(c.SLOWLOG_PATTERN_SHARE),
        )
        large_request, large_reply = (
            _new(c.COMMANDLOG_LARGE_REQUEST),
            _new(c.COMMANDLOG_LARGE_REPLY),
        )
        request_patterns, reply_patterns = (
            _new(c.COMMANDLOG_REQUEST_PATTERN),
            _new(c.COMMANDLOG_REPLY_PATTERN),
        )
        for node in seeds:
            yield None
            slowlog = self._live_state.facts(node.connection_id, SlowlogFacts)
            if slowlog is not None and slowlog.at_ms >= self._oldest_ms:
                if slowlog.length is not None:
                    length.add(node.address, slowlog.length)
                if slowlog.last_id is not None:
                    last_id.add(node.address, slowlog.last_id)
                _patterns(pattern_families, node.address, slowlog.patterns)
            commandlog = self._live_state.facts(node.connection_id, CommandlogFacts)
            if commandlog is not None and commandlog.at_ms >= self._oldest_ms:
                large_request.add(node.address, commandlog.large_request)
                large_reply.add(node.address, commandlog.large_reply)
                for pattern in commandlog.large_request_patterns:
                    request_patterns.add_metric([node.address, pattern.pattern], pattern.count)
                for pattern in commandlog.large_reply_patterns:
                    reply_patterns.add_metric([node.address, pattern.pattern], pattern.count)
        yield from (length, last_id, large_request, large_reply)
        if self._full:
            yield from (*pattern_families, request_patterns, reply_patterns)

    def _acl_and_clients(self, seeds: list[_Node]) -> Iterator[Rows | Metric | None]:
        denied, by_reason, by_user = _new(c.ACL_DENIED), _new(c.ACL_BY_REASON), _new(c.ACL_BY_USER)
        current, peak = _new(c.CLIENTS_CURRENT), _new(c.CLIENTS_PEAK)
        by_name, by_client_user = _new(c.CLIENTS_BY_NAME), _new(c.CLIENTS_BY_USER)
        for node in seeds:
            yield None
            acl = self._live_state.facts(node.connection_id, AclFacts)
            if acl is not None and acl.at_ms >= self._oldest_ms:
                denied.add(node.address, acl.denied)
                for reason, n in acl.by_reason.items():
                    by_reason.add_metric([node.address, reason], n)
                for user, n in acl.by_user.items():
                    by_user.add_metric([node.address, user], n)
            clients = self._live_state.facts(node.connection_id, ClientFacts)
            if clients is not None and clients.at_ms >= self._oldest_ms:
                current.add(node.address, clients.current)
                peak.add(node.address, clients.peak)
                for name, n in clients.by_name.items():
                    by_name.add_metric([node.address, name], n)
                for user, n in clients.by_user.items():
                    by_client_user.add_metric([node.address, user], n)
        yield from (denied, by_reason, current, peak)
        if self._full:
            yield from (by_user, by_name, by_client_user)

    # --- the polls themselves ---

    def _polls(self) -> Iterator[Rows | Metric]:
        stale = _new(c.POLL_STALE)
        fresh_after = self._now_ms - POLL_STALE_AFTER_MS
        for connection in self._connections:
            if connection.pushed:
                continue
            latest = self._live_state.latest(connection.id)
            answered = latest is not None and latest.received_at_ms >= fresh_after
            stale.add(connection.address, 0.0 if answered else 1.0)
        yield stale
        counts = self._live_state.polls
        rejected = _new(c.INFO_VALUES_REJECTED)
        for connection in self._connections:
            if (n := counts.rejected.get(connection.id)) is not None:
                rejected.add(connection.address, n)
        yield rejected
        if not self._full:
            return
        addresses = {connection.id: connection.address for connection in self._connections}
        passes = _new(c.POLLS)
        totals: dict[tuple[str, str], int] = {}
        for (connection_id, kind, _ok), n in counts.passes.items():
            if (address := addresses.get(connection_id)) is not None:
                totals[(address, kind)] = totals.get((address, kind), 0) + n
        for (address, kind), n in totals.items():
            passes.add_metric([address, kind], n)
        yield passes
        durations = HistogramMetricFamily(
            c.POLL_DURATION.name, c.POLL_DURATION.help, labels=list(c.POLL_DURATION.labels)
        )
        for kind, histogram in counts.durations.items():
            cumulative, buckets = 0, []
            for bound, n in zip((*DURATION_BUCKETS, float("inf")), histogram.counts, strict=True):
                cumulative += n
                buckets.append((_bound(bound), cumulative))
            durations.add_metric([kind], buckets, histogram.total_s)
        yield durations


def _instance_labels(info: ParsedInfo) -> dict[str, str]:
    """The info series' labels: `type` always (a node that does not name itself Valkey
    is taken for Redis, as detection does), `version` and `role` only when the server
    reported them. A push without a version or role leaves the label out rather than set it to ""
    (which PromQL could not tell from a real value in a join or a `group by`)."""
    valkey = info.get_str("server", "valkey_version")
    if valkey or info.get_str("server", "server_name") == "valkey":
        # Never Valkey's redis_version: that is the 7.2.4 it claims compatibility with.
        labels = {"type": "valkey"}
        version = valkey
    else:
        labels = {"type": "redis"}
        version = info.get_str("server", "redis_version")
    if version:
        labels["version"] = version
    if role := info.get_str("replication", "role"):
        labels["role"] = role
    return labels


def _new(family: Family) -> "Rows":
    return Rows(family)


def _patterns(
    families: tuple[Rows, ...],
    address: str,
    patterns: tuple[PatternCount, ...],
) -> None:
    count, avg, share = families
    for pattern in patterns:
        labels = [address, pattern.pattern]
        count.add_metric(labels, pattern.count)
        avg.add_metric(labels, pattern.avg_duration_us / 1e6)
        share.add_metric(labels, pattern.percentage)


def _bound(value: float) -> str:
    return "+Inf" if value == float("inf") else repr(value)
