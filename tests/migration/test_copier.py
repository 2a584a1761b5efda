"""The copy of batches of keys between real servers, by both methods, compared key by
key with what the source holds."""

from typing import Any

import pytest

from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.migration.copier import Copier, Destination, temp_key
from svc_monitor.migration.values import CORE_TYPES, KeyValue, Reader
from tests.fixtures.servers import RunningServer
from tests.migration.keyspace import load


def engine(server: RunningServer, db: int = 0) -> EngineClient:
    return EngineClient(
        EngineTarget(server.host, server.port, db=db), connect_timeout_s=2, command_timeout_s=5
    )


async def every_key(client: EngineClient) -> list[bytes]:
    keys: list[bytes] = []
    cursor: Any = 0
    while True:
        cursor, page = await client.execute("SCAN", cursor, "COUNT", 1000)
        keys.extend(page)
        if int(cursor) == 0:
            return sorted(keys)


async def values(
    client: EngineClient, keys: list[bytes], *, field_ttls: bool
) -> dict[bytes, KeyValue]:
    reader = Reader(client, field_ttls=field_ttls)
    found: dict[bytes, KeyValue] = {}
    for key in keys:
        kind = (await client.execute("TYPE", key)).decode()
        if kind in CORE_TYPES:
            at = await client.execute("PEXPIRETIME", key)
            value = await reader.read(key, kind, at if at > 0 else None)
            assert value is not None
            found[key] = value
    return found


async def copy_all(
    source: EngineClient, target: EngineClient, *, method: str, field_ttls: bool
) -> Copier:
    destination = Destination(
        target, lambda t: EngineClient(t, connect_timeout_s=2, command_timeout_s=5)
    )
    await destination.start()
    copier = Copier(
        source,
        source.target.db,
        destination,
        method=method,  # type: ignore[arg-type]
        overwrite=False,
        absolute_ttl=True,
        field_ttls=field_ttls,
        modern_streams=True,
    )
    keys = await every_key(source)
    for start in range(0, len(keys), 50):
        await copier.copy(keys[start : start + 50])
    await destination.close()
    return copier


class TestMethods:
    @pytest.mark.parametrize(
        ("src_kind", "dst_kind", "expected"),
        [
            ("redis7", "valkey", "dump_restore"),
            ("valkey", "redis7", "type_aware"),
        ],
    )
    async def test_every_type_arrives_whole(
        self, fresh: Any, src_kind: str, dst_kind: str, expected: str
    ):
        source_server, target_server = fresh(src_kind), fresh(dst_kind)
        load(source_server, 50, databases=(0,), functions=False)
        client: Any = source_server.client()
        client.xadd("x:0", {"g": "2"})
        client.xreadgroup("workers", "bob", {"x:0": ">"}, count=1)
        client.xgroup_create("x:empty", "idle", id="$", mkstream=True)
        source, target = engine(source_server), engine(target_server)
        copier = await copy_all(source, target, method="dump_restore", field_ttls=False)
        assert copier.method == expected
        keys = await every_key(source)
        assert await every_key(target) == keys
        theirs = await values(target, keys, field_ttls=False)
        for key, value in (await values(source, keys, field_ttls=False)).items():
            assert value.same_as(theirs[key], ttl_tolerance_ms=0) is None, key
        stream = theirs[b"x:0"].stream
        assert stream is not None
        pending = {(c, n) for _, c, n in stream.groups[0].pending}
        assert pending == {(b"alice", 1), (b"bob", 1)}
        await source.close()
        await target.close()

    async def test_field_ttls_travel_between_valkeys(self, fresh: Any):
        source_server, target_server = fresh("valkey"), fresh("valkey")
        client: Any = source_server.client()
        client.hset("h", mapping={"a": "1", "b": "2"})
        client.execute_command("HPEXPIREAT", "h", 4_102_444_800_000, "FIELDS", 1, "a")
        source, target = engine(source_server), engine(target_server)
        await copy_all(source, target, method="type_aware", field_ttls=True)
        got = await target.execute("HPEXPIRETIME", "h", "FIELDS", 2, "a", "b")
        assert got == [4_102_444_800_000, -1]
        await source.close()
        await target.close()


def test_a_temporary_key_stays_in_its_slot():
    from valkey.crc import key_slot

    for key in [b"user:1", b"{cart}:9", b"a{b"]:
        temp = temp_key(key, cluster=True)
        assert temp is not None
        assert key_slot(temp) == key_slot(key), key
    assert temp_key(b"odd}key", cluster=True) is None
    assert temp_key(b"x{}y", cluster=True) is None  # an empty tag is no tag
