"""The CLI's per-socket token bucket, on a clock the test moves (in steps that binary
floating point holds exactly)."""

from svc_monitor.console.cli.throttle import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_refills_at_the_rate():
    clock = Clock()
    bucket = TokenBucket(rate=40, burst=50, clock=clock)
    assert sum(bucket.take() for _ in range(80)) == 50
    clock.now += 0.125  # 5 tokens
    assert sum(bucket.take() for _ in range(10)) == 5


def test_an_idle_bucket_holds_no_more_than_its_burst():
    clock = Clock()
    bucket = TokenBucket(rate=50, burst=50, clock=clock)
    clock.now += 3600
    assert sum(bucket.take() for _ in range(200)) == 50


def test_a_clock_going_backwards_refills_nothing():
    clock = Clock()
    bucket = TokenBucket(rate=8, burst=2, clock=clock)
    assert bucket.take()
    assert bucket.take()
    clock.now -= 10
    assert not bucket.take()
    clock.now += 0.125  # time counts again from the lower reading: one token
    assert bucket.take()
    assert not bucket.take()
