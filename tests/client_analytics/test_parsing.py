"""CLIENT LIST parsing: replies recorded from Valkey 9.1, Redis 7.0 and Redis 6.2, plus junk."""

import pytest

from svc_monitor.engine.clients import parse_client_list

VALKEY_9_1 = (
    b"id=7 addr=127.0.0.1:60598 laddr=127.0.0.1:60579 fd=9 name=app-a age=3 idle=1 flags=N "
    b"capa= db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=10 "
    b"multi-mem=0 rbs=16392 rbp=16392 obl=0 oll=0 omem=0 tot-mem=17002 events=r "
    b"cmd=client|list user=default redir=-1 resp=2 lib-name=valkey-py lib-ver=6.2.0 "
    b"tot-net-in=168 tot-net-out=1855 tot-cmds=3\n"
)
REDIS_7_0 = (
    b"id=7 addr=127.0.0.1:52598 laddr=127.0.0.1:58413 fd=7 name= age=0 idle=0 flags=N db=0 "
    b"sub=0 psub=0 ssub=0 multi=-1 qbuf=26 qbuf-free=20448 argv-mem=10 multi-mem=0 rbs=16384 "
    b"rbp=16384 obl=0 oll=0 omem=0 tot-mem=37658 events=r cmd=client|list user=default "
    b"redir=-1 resp=2\n"
)
REDIS_6_2 = (
    b"id=7 addr=127.0.0.1:38304 laddr=127.0.0.1:39463 fd=7 name= age=0 idle=0 flags=N db=0 "
    b"sub=0 psub=0 multi=-1 qbuf=26 qbuf-free=40928 argv-mem=10 obl=0 oll=0 omem=0 "
    b"tot-mem=61466 events=r cmd=client user=default redir=-1\n"
)


class TestParseClientList:
    @pytest.mark.parametrize(
        ("reply", "tot_mem"),
        [
            pytest.param(VALKEY_9_1, 17002, id="valkey-9.1"),
            pytest.param(REDIS_7_0, 37658, id="redis-7.0"),
            pytest.param(REDIS_6_2, 61466, id="redis-6.2"),
        ],
    )
    def test_recorded_replies_give_typed_fields(self, reply: bytes, tot_mem: int):
        [client] = parse_client_list(reply)
        assert client.id == 7
        assert client.db == 0
        assert client.multi == -1
        assert client.tot_mem == tot_mem
        assert client.user == "default"
        assert client.addr is not None
        assert client.ip == "127.0.0.1"
        assert client.extra["fd"] in {"7", "9"}  # untyped fields kept as text

    def test_valkey_extras_and_library(self):
        [client] = parse_client_list(VALKEY_9_1)
        assert client.name == "app-a"
        assert client.lib_name == "valkey-py"
        assert client.extra["tot-cmds"] == "3"
        assert client.extra["capa"] == ""

    def test_junk_lines_are_skipped_and_odd_values_kept(self):
        reply = (
            "garbage without pairs\n"
            "\n"
            "id=x addr=1.2.3.4:5\n"  # no usable id
            "id=9 addr=[::1]:6379 name=odd value cmd=get qbuf=lots\n"
        )
        [client] = parse_client_list(reply)
        assert client.id == 9
        assert client.name == "odd value"
        assert client.ip == "[::1]"
        assert client.qbuf is None
