"""`/metrics`: the node's state and request statistics in Prometheus text format.

Request counts, latencies and bytes are counted as requests complete (`RequestStats`, the Kafka
listener's `RequestMetrics`). Everything else is read when scraped (`NodeMetrics.read`, on the
event loop, whose state it is): the replicas this node hosts (high watermark, log end offset,
ISR size, and Kafka's per-broker under-replicated, under-min-ISR and leader counts for the
partitions it leads), the cluster as the metadata image says (offline partitions, brokers,
fenced brokers) and the node's view of the controller quorum (role, epoch, high watermark,
lag), and the broker's KIP-227 fetch sessions (Kafka's NumIncrementalFetchSessions,
NumIncrementalFetchPartitionsCached, evictions). Unclean recoveries are counted as the node
derives their events from the metadata log (`count_event`), and the event loop's lag as the
node measures it (`observe_loop_lag`).

The text is written apart from the reading (`MetricsReading.exposition`), so that a scrape can
write it on a thread: a node hosting 10,000 replicas writes 3.8 MB, 0.35 s that would otherwise
hold the event loop (and every request waiting on it) at each scrape.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from kio.schema.index import api_key_map
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from controller.events import EventType, MetadataEvent
from controller.image import MetadataImage

__all__ = [
    "CONTENT_TYPE_LATEST",
    "FetchSessionState",
    "MetricsReading",
    "NodeMetrics",
    "QuorumState",
    "ReplicaState",
]

# Produce and fetch answer in well under a millisecond to a few seconds (long polls).
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
# Their `le` labels as prometheus_client writes them (1 -> "1.0"), and the last, unbounded one.
_LATENCY_BUCKET_LABELS = (*(repr(float(bound)) for bound in _LATENCY_BUCKETS), "+Inf")
# The event loop is late by a few milliseconds when busy; by seconds it holds up the quorum.
_LOOP_LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One replica hosted by this node, as its log and (on the leader) its ISR stand."""

    topic: str
    partition: int
    is_leader: bool
    high_watermark: int
    log_end_offset: int
    log_start_offset: int
    replicas: int
    isr: int
    min_insync_replicas: int
    # KIP-392: consumer fetches served as a follower, and redirected as leader to a follower.
    consumer_fetches_as_follower: int = 0
    consumer_fetches_redirected: int = 0


@dataclass(frozen=True, slots=True)
class QuorumState:
    """This node's view of the metadata quorum."""

    role: str
    leader_id: int
    epoch: int
    high_watermark: int
    log_end_offset: int


class _ApiCounts:
    """What `RequestStats` counted for one API: plain numbers, no lock (the event loop is the
    only writer, a scrape reads them on the same loop)."""

    __slots__ = ("bytes_in", "bytes_out", "latency_buckets", "latency_sum", "requests")

    def __init__(self) -> None:
        self.requests = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.latency_sum = 0.0
        # Per bucket of _LATENCY_BUCKETS then +Inf, the latencies in it alone (not cumulative).
        self.latency_buckets = [0] * (len(_LATENCY_BUCKETS) + 1)


class RequestStats(Collector):
    """Counts each request the Kafka listener completes, by API name.

    `observe` runs for every request, so it only adds to plain numbers (prometheus_client's
    metrics take a lock and check their state on every update, several microseconds per
    request); `collect` turns them into the Prometheus families at each scrape."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._by_api: dict[int, _ApiCounts] = {}
        registry.register(self)

    def observe(
        self,
        api_key: int,
        api_version: int,
        latency_seconds: float,
        request_bytes: int,
        response_bytes: int,
    ) -> None:
        counts = self._by_api.get(api_key)
        if counts is None:
            counts = self._by_api[api_key] = _ApiCounts()
        counts.requests += 1
        counts.bytes_in += request_bytes
        counts.bytes_out += response_bytes
        counts.latency_sum += latency_seconds
        # Prometheus' rule: a latency falls in the first bucket whose bound is at least it.
        counts.latency_buckets[bisect.bisect_left(_LATENCY_BUCKETS, latency_seconds)] += 1

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily("kraft_requests", "Requests completed", labels=["api"])
        latency = HistogramMetricFamily(
            "kraft_request_latency_seconds",
            "From a request's arrival to its response written",
            labels=["api"],
        )
        bytes_in = CounterMetricFamily(
            "kraft_request_bytes", "Bytes of requests received", labels=["api"]
        )
        bytes_out = CounterMetricFamily(
            "kraft_response_bytes", "Bytes of responses sent", labels=["api"]
        )
        for api_key, counts in sorted(self._by_api.items()):
            api = [api_key_map.get(api_key, str(api_key))]
            requests.add_metric(api, counts.requests)
            bytes_in.add_metric(api, counts.bytes_in)
            bytes_out.add_metric(api, counts.bytes_out)
            cumulative = list(itertools.accumulate(counts.latency_buckets))
            latency.add_metric(
                api, list(zip(_LATENCY_BUCKET_LABELS, cumulative, strict=True)), counts.latency_sum
            )
        yield from (requests, latency, bytes_in, bytes_out)


@dataclass(frozen=True, slots=True)
class FetchSessionState:
    """The broker's fetch session cache (KIP-227) as `/metrics` shows it."""

    sessions: int
    partitions: int
    evictions: int
    incremental_fetches: int


class _FetchSessionCollector(Collector):
    """The fetch session cache of a node with the broker role, read at each scrape."""

    def __init__(self, state: Callable[[], FetchSessionState | None]) -> None:
        self._state = state

    def collect(self) -> Iterator[Metric]:
        state = self._state()
        if state is None:
            return
        yield GaugeMetricFamily(
            "kraft_fetch_sessions",
            "Incremental fetch sessions cached (Kafka's NumIncrementalFetchSessions)",
            value=state.sessions,
        )
        yield GaugeMetricFamily(
            "kraft_fetch_session_partitions",
            "Partitions cached over all fetch sessions (NumIncrementalFetchPartitionsCached)",
            value=state.partitions,
        )
        yield CounterMetricFamily(
            "kraft_fetch_session_evictions",
            "Fetch sessions evicted from the cache since the node started",
            value=state.evictions,
        )
        yield CounterMetricFamily(
            "kraft_fetch_session_incremental_fetches",
            "Fetch requests answered incrementally in a session since the node started",
            value=state.incremental_fetches,
        )


class StateCollector(Collector):
    """Reads the cluster as the metadata image says and the node's view of the quorum, at each
    scrape (the hosted replicas are read apart: `NodeMetrics.read`)."""

    def __init__(
        self,
        image: Callable[[], MetadataImage],
        quorum: Callable[[], QuorumState | None],
    ) -> None:
        self._image = image
        self._quorum = quorum

    def collect(self) -> Iterator[Metric]:
        yield from self._cluster_metrics(self._image())
        quorum = self._quorum()
        if quorum is not None:
            yield from self._quorum_metrics(quorum)

    @staticmethod
    def _cluster_metrics(image: MetadataImage) -> Iterator[Metric]:
        offline = sum(
            1
            for topic in image.topics.values()
            for state in topic.partitions.values()
            if not state.has_leader
        )
        yield GaugeMetricFamily(
            "kraft_offline_partitions", "Partitions without a leader, cluster-wide", value=offline
        )
        yield GaugeMetricFamily("kraft_brokers", "Registered brokers", value=len(image.brokers))
        yield GaugeMetricFamily(
            "kraft_fenced_brokers",
            "Registered brokers that are fenced",
            value=sum(1 for broker in image.brokers.values() if broker.fenced),
        )
        yield GaugeMetricFamily(
            "kraft_metadata_offset",
            "Metadata log entries this node applied",
            value=image.end_offset,
        )

    @staticmethod
    def _quorum_metrics(quorum: QuorumState) -> Iterator[Metric]:
        role = GaugeMetricFamily(
            "kraft_quorum_role", "1 for this node's role in the metadata quorum", labels=["role"]
        )
        role.add_metric([quorum.role], 1)
        yield role
        yield GaugeMetricFamily(
            "kraft_quorum_leader_id", "The quorum leader (-1: none known)", value=quorum.leader_id
        )
        yield GaugeMetricFamily("kraft_quorum_epoch", "The quorum epoch", value=quorum.epoch)
        yield GaugeMetricFamily(
            "kraft_quorum_high_watermark",
            "Committed metadata offset known here",
            value=quorum.high_watermark,
        )
        yield GaugeMetricFamily(
            "kraft_quorum_log_end_offset",
            "This node's metadata log end offset",
            value=quorum.log_end_offset,
        )
        yield GaugeMetricFamily(
            "kraft_quorum_lag",
            "How far this node's metadata log end is behind the high watermark",
            value=max(0, quorum.high_watermark - quorum.log_end_offset),
        )


def _replica_metrics(replicas: Sequence[ReplicaState]) -> Iterator[Metric]:
    """The families of the hosted replicas, and Kafka's per-broker counts of those led."""
    labels = ["topic", "partition"]
    high_watermark = GaugeMetricFamily(
        "kraft_partition_high_watermark", "High watermark of a hosted replica", labels=labels
    )
    log_end = GaugeMetricFamily(
        "kraft_partition_log_end_offset", "Log end offset of a hosted replica", labels=labels
    )
    log_start = GaugeMetricFamily(
        "kraft_partition_log_start_offset",
        "Log start offset of a hosted replica",
        labels=labels,
    )
    isr = GaugeMetricFamily(
        "kraft_partition_isr_size", "ISR size of a partition this node leads", labels=labels
    )
    from_follower = CounterMetricFamily(
        "kraft_partition_consumer_fetches_as_follower",
        "Consumer fetches (KIP-392) a follower replica served",
        labels=labels,
    )
    redirected = CounterMetricFamily(
        "kraft_partition_consumer_fetches_redirected",
        "Consumer fetches the leader answered with a follower to read from (KIP-392)",
        labels=labels,
    )
    led = [replica for replica in replicas if replica.is_leader]
    for replica in replicas:
        key = [replica.topic, str(replica.partition)]
        high_watermark.add_metric(key, replica.high_watermark)
        log_end.add_metric(key, replica.log_end_offset)
        log_start.add_metric(key, replica.log_start_offset)
        from_follower.add_metric(key, replica.consumer_fetches_as_follower)
        redirected.add_metric(key, replica.consumer_fetches_redirected)
    for replica in led:
        isr.add_metric([replica.topic, str(replica.partition)], replica.isr)
    yield from (high_watermark, log_end, log_start, isr, from_follower, redirected)
    yield GaugeMetricFamily("kraft_leader_partitions", "Partitions this node leads", value=len(led))
    yield GaugeMetricFamily(
        "kraft_under_replicated_partitions",
        "Partitions this node leads whose ISR is smaller than their replicas",
        value=sum(1 for replica in led if replica.isr < replica.replicas),
    )
    yield GaugeMetricFamily(
        "kraft_under_min_isr_partitions",
        "Partitions this node leads whose ISR is below min.insync.replicas",
        value=sum(1 for replica in led if replica.isr < replica.min_insync_replicas),
    )


class _DenialCollector(Collector):
    """The requests (or items of them) the authorizer denied, read at each scrape."""

    def __init__(self, denials: Callable[[], int]) -> None:
        self._denials = denials

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "kraft_authorization_denials",
            "Authorization decisions that denied an operation since the node started",
            value=self._denials(),
        )


class NodeMetrics:
    """The node's metrics registry: request statistics and the state read at scrape time."""

    def __init__(
        self,
        image: Callable[[], MetadataImage],
        replicas: Callable[[], Sequence[ReplicaState]],
        quorum: Callable[[], QuorumState | None],
        authorization_denials: Callable[[], int] = lambda: 0,
        fetch_sessions: Callable[[], FetchSessionState | None] = lambda: None,
    ) -> None:
        self._replicas = replicas
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = RequestStats(self.registry)
        self.registry.register(StateCollector(image, quorum))
        self.registry.register(_DenialCollector(authorization_denials))
        self.registry.register(_FetchSessionCollector(fetch_sessions))
        self._unclean_recoveries = Counter(
            "kraft_unclean_recoveries",
            "Unclean recoveries (potential data-loss events) in the metadata log this node "
            "replayed since it started",
            ["strategy"],
            registry=self.registry,
        )
        self._loop_lag = Histogram(
            "kraft_event_loop_lag_seconds",
            "How much later than asked the node's event loop ran a periodic check",
            buckets=_LOOP_LAG_BUCKETS,
            registry=self.registry,
        )

    def observe_loop_lag(self, seconds: float) -> None:
        """One measurement of the event loop's lag (`node.loop_stalls`)."""
        self._loop_lag.observe(seconds)

    def count_event(self, event: MetadataEvent) -> None:
        """Counts the potential data-loss events of unclean recoveries; give it every event
        the node derives from the metadata log (an `EventLog` listener)."""
        if event.type is EventType.UNCLEAN_RECOVERY:
            self._unclean_recoveries.labels(event.strategy or "unknown").inc()

    def read(self) -> MetricsReading:
        """Every metric as of now: called on the event loop, whose state it reads."""
        return MetricsReading(tuple(self._replicas()), tuple(self.registry.collect()))


@dataclass(frozen=True, slots=True)
class MetricsReading:
    """What a scrape read: the hosted replicas and every other metric family."""

    replicas: Sequence[ReplicaState]
    others: Sequence[Metric]

    def exposition(self) -> bytes:
        """The Prometheus text exposition (reads nothing live: any thread may write it)."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Read([*_replica_metrics(self.replicas), *self.others]))
        return generate_latest(registry)


class _Read(Collector):
    """Families read before: what a reading's exposition writes."""

    def __init__(self, families: Sequence[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)
