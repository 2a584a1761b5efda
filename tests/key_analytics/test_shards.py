"""A cluster run's sample split and its list of nodes read: pure functions."""

import pytest

from svc_monitor.key_analytics.shards import SOURCE_CHARS, join_sources, nodes_in, split_sample
from svc_monitor.key_analytics.store import cursor_key


class TestSplitSample:
    def test_shares_follow_dbsize_and_add_up_to_the_sample_size(self):
        assert split_sample(10_000, [50_000, 30_000, 20_000]) == [5_000, 3_000, 2_000]
        shares = split_sample(1_000, [333, 333, 334])
        assert sum(shares) == 1_000
        assert max(shares) - min(shares) <= 1

    def test_a_nearly_empty_shard_still_gets_one_key_and_an_empty_one_none(self):
        shares = split_sample(100, [1_000_000, 3, 0])
        assert shares == [99, 1, 0]

    def test_a_sample_size_under_the_shard_count_goes_to_the_biggest(self):
        assert split_sample(2, [10, 30, 20]) == [0, 1, 1]

    def test_an_empty_cluster_samples_nothing(self):
        assert split_sample(10_000, [0, 0, 0]) == [0, 0, 0]


class TestSources:
    def test_one_server_is_one_node(self):
        assert nodes_in("127.0.0.1:6379") == 1
        assert nodes_in("[::1]:6379") == 1

    def test_a_cluster_lists_its_nodes(self):
        source = join_sources(["10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"])
        assert source == "10.0.0.1:7000, 10.0.0.2:7000, 10.0.0.3:7000"
        assert nodes_in(source) == 3

    @pytest.mark.parametrize("count", [20, 100, 1000])
    def test_nodes_past_the_column_are_counted(self, count: int):
        addresses = [f"10.0.{i // 250}.{i % 250}:7000" for i in range(count)]
        source = join_sources(addresses)
        assert len(source) <= SOURCE_CHARS
        assert source.endswith(" more")
        assert nodes_in(source) == count


class TestCursorKeys:
    def test_one_row_per_shard_within_the_column(self):
        connection = "0b7e8f1c-3d5a-4c2e-9f6b-1a2b3c4d5e6f"
        assert cursor_key(connection, None) == connection
        assert cursor_key(connection, "10.0.0.1:7000") == f"{connection}@10.0.0.1:7000"
        long_shards = [f"[2001:db8::1234:5678:9abc:{i}]:7000" for i in range(3)]
        keys = {cursor_key(connection, shard) for shard in long_shards}
        assert len(keys) == 3
        assert all(len(key) <= 64 for key in keys)
