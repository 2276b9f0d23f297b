"""The replication throttle's sliding-window rate quota (broker/replication_quota.py)."""

from __future__ import annotations

import pytest

from broker.replication_quota import UNTHROTTLED, ReplicationQuota


def test_without_a_bound_nothing_is_ever_exceeded() -> None:
    quota = ReplicationQuota()
    assert quota.bytes_per_second == UNTHROTTLED and not quota.throttling
    quota.record(10**15, now_ms=0)
    assert not quota.exceeded(now_ms=1)


def test_a_first_burst_is_measured_over_the_whole_window_but_the_current_sample() -> None:
    # 11 samples of 1 s: a burst is spread over at least 10 s, as Kafka's Rate does.
    quota = ReplicationQuota(1000)
    quota.record(10_000, now_ms=0)
    assert quota.rate(now_ms=0) == pytest.approx(1000)
    assert not quota.exceeded(now_ms=0)
    quota.record(1, now_ms=0)
    assert quota.exceeded(now_ms=0)
    # Half a second later the window is 10.5 s.
    assert not quota.exceeded(now_ms=500)


def test_the_rate_spans_the_samples_once_they_cover_the_window() -> None:
    quota = ReplicationQuota(1000, samples=3, sample_ms=1000)
    for second in range(3):
        quota.record(3000, now_ms=second * 1000)
    # 9000 bytes over the 3 s from the oldest sample's start to 3 s.
    assert quota.rate(now_ms=3000 - 1) == pytest.approx(9000 / 2.999)
    assert quota.exceeded(now_ms=2999)


def test_samples_older_than_the_window_no_longer_count() -> None:
    quota = ReplicationQuota(1000, samples=2, sample_ms=1000)
    quota.record(5000, now_ms=0)
    assert quota.exceeded(now_ms=100)
    # The sample started at 0 expires at 2 s (2 samples of 1 s).
    assert quota.exceeded(now_ms=1999)
    assert not quota.exceeded(now_ms=2000)
    assert quota.rate(now_ms=2000) == 0


def test_a_steady_flow_at_the_bound_stays_within_it() -> None:
    quota = ReplicationQuota(100_000, samples=11, sample_ms=1000)
    sent = 0
    for tick in range(0, 60_000, 100):
        # Send 10 KB every 100 ms while the quota allows it: the flow settles at the bound.
        if not quota.exceeded(now_ms=tick):
            quota.record(10_000, now_ms=tick)
            sent += 10_000
    assert 0.9 * 100_000 * 60 <= sent <= 1.2 * 100_000 * 60


def test_a_throttled_flow_is_held_to_its_rate() -> None:
    # A window of 2 samples of 1 s: a 1 MB flow at 200 KB/s takes about 5 s.
    quota = ReplicationQuota(200_000, samples=2, sample_ms=1000)
    sent, now_ms = 0, 0
    while sent < 1_000_000:
        if not quota.exceeded(now_ms):
            quota.record(64 * 1024, now_ms)
            sent += 64 * 1024
        now_ms += 10
    assert 4000 <= now_ms <= 6000


def test_the_bound_can_change_at_run_time() -> None:
    quota = ReplicationQuota(1000)
    quota.record(20_000, now_ms=0)
    assert quota.exceeded(now_ms=0)
    quota.bytes_per_second = 10_000
    assert not quota.exceeded(now_ms=0)
    quota.bytes_per_second = UNTHROTTLED
    assert not quota.throttling


def test_a_window_needs_a_sample() -> None:
    with pytest.raises(ValueError, match="at least one sample"):
        ReplicationQuota(1, samples=0)
