"""The replica class's hard limit in CONFIG GET client-output-buffer-limit."""

import pytest

from svc_monitor.engine.buffer_limits import replica_hard_limit


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
            268435456,
            id="redis",
        ),
        pytest.param(
            "normal 0 0 0 replica 67108864 0 0 pubsub 33554432 8388608 60", 67108864, id="valkey"
        ),
        pytest.param("normal 0 0 0 slave 0 0 0 pubsub 0 0 0", 0, id="unlimited"),
        pytest.param("normal 0 0 0 pubsub 33554432 8388608 60", None, id="no-replica-class"),
        pytest.param("slave 64mb 0 0", None, id="not-normalised"),
        pytest.param("", None, id="empty"),
    ],
)
def test_replica_hard_limit(value: str, expected: int | None) -> None:
    assert replica_hard_limit(value) == expected
