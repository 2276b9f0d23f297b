"""net.producer against a real node: what the sink's tasks rely on. Records arrive in order,
once, even when a request times out and is sent again."""

from __future__ import annotations

import threading

import pytest
from structlog.testing import capture_logs

from bench.cluster import Cluster
from net.client import ClusterClient
from net.producer import Producer, ProducerConfig, ProducerError
from net.records import Header, Record
from tests.spark_connector.helpers import consume_all, new_topic

pytestmark = pytest.mark.timeout(120)


async def test_records_arrive_in_order_with_keys_and_headers(node: Cluster) -> None:
    topic = new_topic(node, "produced", 2)
    async with ClusterClient(node.bootstrap) as cluster:
        producer = Producer(cluster, ProducerConfig(batch_size=2_000, linger_ms=0))
        await producer.start()
        assert producer.producer_id >= 0
        for i in range(300):
            producer.append(
                topic, i % 2, Record(b"v%d" % i, b"k%d" % i, (Header("n", str(i).encode()),))
            )
        await producer.flush()
        assert producer.records_sent == 300
    messages = consume_all(node, topic, 2)
    assert [(m.partition(), m.value()) for m in messages] == [
        (p, b"v%d" % i) for p in range(2) for i in range(p, 300, 2)
    ]
    assert all(m.key() == b"k" + m.value()[1:] for m in messages)
    assert all(m.headers() == [("n", m.value()[1:])] for m in messages)


async def test_a_request_that_times_out_is_retried_without_duplicates(node: Cluster) -> None:
    topic = new_topic(node, "retried", 1)
    async with ClusterClient(node.bootstrap) as cluster:
        producer = Producer(
            cluster,
            ProducerConfig(request_timeout_ms=800, retry_backoff_ms=200, linger_ms=0),
        )
        await producer.start()
        await producer.partition_count(topic)
        # The broker stalls with the first request unanswered; it times out and is resent, with
        # the same sequence numbers, once the broker is back.
        node.pause(1)
        resume = threading.Timer(2.5, node.resume, args=(1,))
        resume.start()
        try:
            with capture_logs() as logs:
                for i in range(50):
                    producer.append(topic, 0, Record(b"%d" % i))
                await producer.flush()
        finally:
            resume.join()
    assert any(entry["event"] == "produce_retry" for entry in logs)
    assert [m.value() for m in consume_all(node, topic, 1)] == [b"%d" % i for i in range(50)]


async def test_an_unknown_topic_is_refused(node: Cluster) -> None:
    async with ClusterClient(node.bootstrap) as cluster:
        producer = Producer(cluster, ProducerConfig())
        await producer.start()
        with pytest.raises(ProducerError, match="topic 'missing' does not exist"):
            await producer.partition_count("missing")
