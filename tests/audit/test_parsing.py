"""ACL LOG parsing: entries recorded from Valkey 9.1 and Redis 6.2."""

from svc_monitor.engine.acl import parse_acl_log

VALKEY_9_1 = [
    [b"count", 1, b"reason", b"command", b"context", b"toplevel", b"object", b"set",
     b"username", b"limited", b"age-seconds", b"0.002", b"client-info",
     b"id=6 addr=127.0.0.1:60584 name= cmd=set user=limited", b"entry-id", 2,
     b"timestamp-created", 1795317934344, b"timestamp-last-updated", 1795317934344],
]  # fmt: skip
REDIS_6_2 = [
    [b"count", 2, b"reason", b"auth", b"context", b"toplevel", b"object", b"AUTH",
     b"username", b"limited", b"age-seconds", b"1.5", b"client-info",
     b"id=5 addr=127.0.0.1:38292 name= cmd=auth user=default"],
]  # fmt: skip


class TestParseAclLog:
    def test_valkey_entries_carry_id_and_times(self):
        [entry] = parse_acl_log(VALKEY_9_1)
        assert (entry.reason, entry.object, entry.username, entry.count) == (
            "command",
            "set",
            "limited",
            1,
        )
        assert entry.entry_id == 2
        assert entry.timestamp_created == entry.timestamp_last_updated == 1795317934344
        assert entry.client.addr == "127.0.0.1:60584"

    def test_redis_6_entries_lack_them(self):
        [entry] = parse_acl_log(REDIS_6_2)
        assert entry.age_seconds == 1.5
        assert entry.entry_id is entry.timestamp_created is None

    def test_resp3_maps_and_junk(self):
        as_map = {b"count": 1, b"reason": b"key", b"object": b"k", b"username": b"u"}
        entries = parse_acl_log([as_map, [b"odd"], b"junk", [b"count", b"x", b"reason", b"a"]])
        assert [(e.reason, e.object) for e in entries] == [("key", "k")]
        assert parse_acl_log(b"not a list") == []
