"""`/metrics` content: the Prometheus exposition of request statistics and the node's state."""

from __future__ import annotations

from uuid import UUID

from prometheus_client.parser import text_string_to_metric_families

from admin.metrics import NodeMetrics, QuorumState, ReplicaState
from controller.events import EventType, MetadataEvent
from controller.image import MetadataImage
from controller.partition_state import PartitionState
from tests.controller.images import broker, replay, topic

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(metrics: NodeMetrics) -> Samples:
    return parsed(metrics.read().exposition())


def parsed(exposition: bytes) -> Samples:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(exposition.decode())
        for sample in family.samples
    }


def test_state_is_read_at_scrape_time() -> None:
    image = replay(
        [
            broker(1),
            broker(2),
            broker(3, fenced=True),
            *topic(
                "orders",
                UUID(int=7),
                PartitionState((1, 2, 3), (1, 2, 3), leader=1),
                PartitionState((1, 2, 3), (1,), leader=1),
                PartitionState((2, 3), (), leader=-1),
            ),
        ]
    )
    hosted = [
        ReplicaState("orders", 0, True, 10, 12, 0, replicas=3, isr=3, min_insync_replicas=2),
        ReplicaState("orders", 1, True, 5, 5, 2, replicas=3, isr=1, min_insync_replicas=2),
        ReplicaState("orders", 2, False, 0, 7, 0, replicas=2, isr=0, min_insync_replicas=2),
    ]
    quorum = QuorumState("follower", leader_id=2, epoch=4, high_watermark=40, log_end_offset=37)
    metrics = NodeMetrics(lambda: image, lambda: hosted, lambda: quorum)
    found = samples(metrics)
    partition = (("partition", "1"), ("topic", "orders"))
    assert found["kraft_partition_high_watermark", partition] == 5
    assert found["kraft_partition_log_start_offset", partition] == 2
    assert found["kraft_partition_isr_size", partition] == 1
    # A follower replica has offsets but no ISR size of its own.
    follower = (("partition", "2"), ("topic", "orders"))
    assert found["kraft_partition_log_end_offset", follower] == 7
    assert ("kraft_partition_isr_size", follower) not in found
    assert found["kraft_leader_partitions", ()] == 2
    assert found["kraft_under_replicated_partitions", ()] == 1
    assert found["kraft_under_min_isr_partitions", ()] == 1
    assert found["kraft_offline_partitions", ()] == 1
    assert (found["kraft_brokers", ()], found["kraft_fenced_brokers", ()]) == (3, 1)
    assert found["kraft_quorum_role", (("role", "follower"),)] == 1
    assert found["kraft_quorum_lag", ()] == 3

    # The next scrape sees the new state.
    hosted.clear()
    assert samples(metrics)["kraft_leader_partitions", ()] == 0


def test_a_reading_is_written_as_it_was_read_whatever_changed_since() -> None:
    # A scrape reads on the event loop and writes the text on a thread: the text is the state
    # as read, never what the loop changed meanwhile.
    hosted = [ReplicaState("orders", 0, True, 10, 12, 0, replicas=3, isr=3, min_insync_replicas=2)]
    metrics = NodeMetrics(lambda: replay([]), lambda: hosted, lambda: None)
    metrics.requests.observe(0, 9, 0.002, 1_000, 60)
    reading = metrics.read()
    hosted.clear()
    metrics.requests.observe(0, 9, 0.002, 1_000, 60)
    found = parsed(reading.exposition())
    assert found["kraft_leader_partitions", ()] == 1
    assert found["kraft_partition_high_watermark", (("partition", "0"), ("topic", "orders"))] == 10
    assert found["kraft_requests_total", (("api", "produce"),)] == 1
    # The next reading sees the new state.
    assert samples(metrics)["kraft_requests_total", (("api", "produce"),)] == 2


def test_requests_are_counted_by_api_with_latency_and_bytes() -> None:
    metrics = NodeMetrics(lambda: replay([]), list, lambda: None)
    metrics.requests.observe(0, 9, 0.002, 1_000, 60)
    metrics.requests.observe(0, 9, 0.2, 500, 60)
    metrics.requests.observe(1, 12, 0.0001, 80, 5_000)
    found = samples(metrics)
    produce = (("api", "produce"),)
    assert found["kraft_requests_total", produce] == 2
    assert found["kraft_request_bytes_total", produce] == 1_500
    assert found["kraft_response_bytes_total", (("api", "fetch"),)] == 5_000
    assert found["kraft_request_latency_seconds_count", produce] == 2
    assert (
        found["kraft_request_latency_seconds_bucket", (("api", "produce"), ("le", "0.0025"))] == 1
    )
    assert "kraft_quorum_role" not in {name for name, _ in found}


def test_request_latency_buckets_follow_prometheus_rules() -> None:
    # A latency on a bound counts in that bucket; buckets are cumulative; beyond the last
    # bound only +Inf counts it; the sum adds every latency.
    metrics = NodeMetrics(lambda: replay([]), list, lambda: None)
    for latency in (0.0025, 0.0025, 0.003, 7.0):
        metrics.requests.observe(0, 9, latency, 1, 1)
    found = samples(metrics)

    def bucket(le: str) -> float:
        return found["kraft_request_latency_seconds_bucket", (("api", "produce"), ("le", le))]

    assert (bucket("0.001"), bucket("0.0025"), bucket("0.005"), bucket("5.0")) == (0, 2, 3, 3)
    assert bucket("+Inf") == 4
    assert found["kraft_request_latency_seconds_sum", (("api", "produce"),)] == 7.008


def test_unclean_recoveries_are_counted_by_strategy() -> None:
    metrics = NodeMetrics(lambda: MetadataImage.EMPTY, list, lambda: None)

    def event(kind: EventType, strategy: str | None = None) -> MetadataEvent:
        return MetadataEvent(offset=1, time="t", type=kind, strategy=strategy)

    for item in (
        event(EventType.UNCLEAN_RECOVERY, "balanced"),
        event(EventType.UNCLEAN_RECOVERY_WAITING, "balanced"),
        event(EventType.UNCLEAN_RECOVERY, "manual"),
        event(EventType.UNCLEAN_RECOVERY, "balanced"),
        event(EventType.LEADER_CHANGED),
    ):
        metrics.count_event(item)

    text = metrics.read().exposition().decode()
    assert 'kraft_unclean_recoveries_total{strategy="balanced"} 2.0' in text
    assert 'kraft_unclean_recoveries_total{strategy="manual"} 1.0' in text


def test_the_event_loops_lag_is_a_histogram() -> None:
    metrics = NodeMetrics(lambda: MetadataImage.EMPTY, list, lambda: None)
    for seconds in (0.001, 0.002, 0.3, 1.7):
        metrics.observe_loop_lag(seconds)
    found = samples(metrics)
    assert found[("kraft_event_loop_lag_seconds_count", ())] == 4
    assert found[("kraft_event_loop_lag_seconds_bucket", (("le", "0.005"),))] == 2
    assert found[("kraft_event_loop_lag_seconds_bucket", (("le", "0.25"),))] == 2
    assert found[("kraft_event_loop_lag_seconds_bucket", (("le", "0.5"),))] == 3
    assert found[("kraft_event_loop_lag_seconds_bucket", (("le", "+Inf"),))] == 4
    assert abs(found[("kraft_event_loop_lag_seconds_sum", ())] - 2.003) < 1e-9
