"""The replication throttle's byte-rate quotas (Kafka's ReplicationQuotaManager).

A quota bounds the rate of replication bytes through one side of a broker: the leader's
(`leader.replication.throttled.rate`, what it serves to throttled followers) or the follower's
(`follower.replication.throttled.rate`, what its fetchers take for throttled replicas). The
rate is measured as Kafka's `Rate` over a `SampledStat`: samples of `sample_ms` each (Kafka's
`replication.quota.window.size.seconds`), the last `samples` of them kept
(`replication.quota.window.num`), and the bytes they hold divided by the time they span, taken
as at least `samples - 1` whole samples so that a first burst is not judged over a few
milliseconds. The quota is exceeded while that rate is above the bound; whoever checks it
then leaves the throttled replicas out of what it serves or fetches until it is not. Pure:
the caller passes the clock.
"""

from __future__ import annotations

from dataclasses import dataclass

# Kafka's default rate, Long.MAX_VALUE: no throttle.
UNTHROTTLED = 2**63 - 1
# Kafka's replication.quota.window.num and replication.quota.window.size.seconds.
DEFAULT_SAMPLES = 11
DEFAULT_SAMPLE_MS = 1000


@dataclass(slots=True)
class _Sample:
    start_ms: int
    bytes: int = 0


class ReplicationQuota:
    """A byte rate bound of `bytes_per_second` (UNTHROTTLED: none) over a sliding window of
    `samples` samples of `sample_ms`."""

    def __init__(
        self,
        bytes_per_second: int = UNTHROTTLED,
        *,
        samples: int = DEFAULT_SAMPLES,
        sample_ms: int = DEFAULT_SAMPLE_MS,
    ) -> None:
        if samples < 1 or sample_ms < 1:
            raise ValueError("a quota window needs at least one sample of at least 1 ms")
        self.bytes_per_second = bytes_per_second
        self._samples_kept = samples
        self._sample_ms = sample_ms
        # Oldest first; the last one is the current sample.
        self._samples: list[_Sample] = []

    @property
    def throttling(self) -> bool:
        """Whether a bound is set at all."""
        return self.bytes_per_second < UNTHROTTLED

    def record(self, size: int, now_ms: int) -> None:
        """`size` bytes of throttled replicas went through at `now_ms`."""
        if not self._samples or now_ms - self._samples[-1].start_ms >= self._sample_ms:
            self._samples.append(_Sample(now_ms))
            del self._samples[: -self._samples_kept]
        self._samples[-1].bytes += size

    def rate(self, now_ms: int) -> float:
        """The measured rate at `now_ms`, in bytes per second."""
        expire_before = now_ms - self._samples_kept * self._sample_ms
        live = [sample for sample in self._samples if sample.start_ms > expire_before]
        self._samples = live
        oldest_ms = live[0].start_ms if live else now_ms
        elapsed_ms = now_ms - oldest_ms
        # Kafka's Rate.windowSize: never less than all samples but the current one.
        full_samples = elapsed_ms // self._sample_ms
        if full_samples < self._samples_kept - 1:
            elapsed_ms += (self._samples_kept - 1 - full_samples) * self._sample_ms
        return sum(sample.bytes for sample in live) * 1000 / max(elapsed_ms, 1)

    def exceeded(self, now_ms: int) -> bool:
        """Whether the measured rate is above the bound (never without one)."""
        return self.throttling and self.rate(now_ms) > self.bytes_per_second


@dataclass(frozen=True, slots=True)
class ReplicationQuotas:
    """A broker's two replication quotas: what its leaders serve to throttled followers, and
    what its fetchers take for throttled replicas."""

    leader: ReplicationQuota
    follower: ReplicationQuota


@dataclass(frozen=True, slots=True)
class ThrottleSettings:
    """A node's replication throttle settings: the rates (bytes/s, UNTHROTTLED: none) of
    `leader.replication.throttled.rate` and `follower.replication.throttled.rate`, and the
    measuring window (`replication.quota.window.num` samples of
    `replication.quota.window.size.seconds`)."""

    leader_rate: int = UNTHROTTLED
    follower_rate: int = UNTHROTTLED
    samples: int = DEFAULT_SAMPLES
    sample_ms: int = DEFAULT_SAMPLE_MS

    def quotas(self) -> ReplicationQuotas:
        """Both quotas at these settings."""
        return ReplicationQuotas(
            leader=ReplicationQuota(
                self.leader_rate, samples=self.samples, sample_ms=self.sample_ms
            ),
            follower=ReplicationQuota(
                self.follower_rate, samples=self.samples, sample_ms=self.sample_ms
            ),
        )


# No throttle, Kafka's default window.
NO_THROTTLE = ThrottleSettings()
