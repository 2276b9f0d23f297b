"""What the client adapters of the compatibility matrix share: the message they write and read
back, and the reference operations (confluent-kafka) that set a flow up or check another
client's writes: create a topic, write messages with their timestamps, read a partition."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster, Node

# Every client call of a flow is bounded by this (seconds): a hung client fails its test fast.
TIMEOUT = 20.0

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class Message:
    """A record as an application sees it; `offset` and `timestamp` are None when writing
    (the broker assigns the offset; the producer stamps the time) unless a flow sets them."""

    key: bytes | None
    value: bytes
    headers: Headers = ()
    timestamp: int | None = None
    offset: int | None = field(default=None, compare=False)

    def content(self) -> tuple[bytes | None, bytes, Headers]:
        return (self.key, self.value, self.headers)


def messages(count: int, prefix: str, *, per_message_headers: bool = True) -> list[Message]:
    """`count` messages with distinct keys and compressible values (single-line ASCII, as kcat
    reads them), every third without a key, and headers (the same on every message when a
    client such as kcat can only set one set of headers for all)."""
    result = []
    for i in range(count):
        key = None if i % 3 == 2 else f"{prefix}-key-{i}".encode()
        headers: Headers = (
            (("seq", str(i).encode()), ("kind", b"compat"))
            if per_message_headers
            else (("kind", b"compat"), ("origin", prefix.encode()))
        )
        # Long and repetitive: a batch of a single message still compresses, which the
        # clients check before sending a batch compressed (else they send it uncompressed).
        value = f"{prefix}-value-{i}-{'x' * (200 + i % 7)}"
        result.append(Message(key, value.encode(), headers))
    return result


def contents(read: list[Message]) -> list[tuple[bytes | None, bytes, Headers]]:
    return [m.content() for m in read]


def _led_on(node: Node, topic: str, partitions: int) -> bool:
    try:
        described = node.get(f"/v1/topics/{topic}")
    except (OSError, ValueError):
        return False
    led = [p for p in described["partitions"] if p["leader"] >= 0]
    return len(led) == len(described["partitions"]) == partitions


def wait_known(cluster: Cluster, topic: str, partitions: int) -> None:
    """Wait until every node's metadata image has `topic` with `partitions` partitions, each
    led: every broker then answers for it (a client may ask any)."""
    deadline = time.monotonic() + TIMEOUT
    while not all(_led_on(node, topic, partitions) for node in cluster.nodes.values()):
        assert time.monotonic() < deadline, f"{topic} is not led on every node"
        time.sleep(0.05)


def create_topic(
    cluster: Cluster,
    topic: str,
    *,
    partitions: int = 1,
    replication_factor: int = -1,
    configs: Mapping[str, str] | None = None,
) -> None:
    """Create `topic` with confluent-kafka and wait until every node knows it (`wait_known`)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = NewTopic(
        topic,
        num_partitions=partitions,
        replication_factor=replication_factor,
        config=dict(configs or {}),
    )
    admin.create_topics([new])[topic].result(timeout=TIMEOUT)
    wait_known(cluster, topic, partitions)


def write(bootstrap: str, topic: str, written: list[Message], partition: int = 0) -> None:
    """Write `written` to one partition with confluent-kafka (acks=all), with their
    timestamps when they have one."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    failures: list[object] = []
    for message in written:
        producer.produce(
            topic,
            value=message.value,
            key=message.key,
            headers=list(message.headers),
            partition=partition,
            timestamp=message.timestamp or 0,
            on_delivery=lambda error, _: failures.append(error) if error else None,
        )
    assert producer.flush(TIMEOUT) == 0
    assert failures == []


def confluent_message(record: Any) -> Message:
    """A message confluent-kafka's Consumer.poll returned."""
    return Message(
        record.key(),
        record.value() or b"",
        tuple((k, v or b"") for k, v in record.headers() or []),
        record.timestamp()[1],
        record.offset(),
    )


def read(bootstrap: str, topic: str, count: int, partition: int = 0) -> list[Message]:
    """The first `count` messages of one partition read with confluent-kafka (assign, no
    group offsets), and nothing after them within half a second."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"compat-reference-{topic}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        got: list[Message] = []
        deadline = time.monotonic() + TIMEOUT
        at_end = False
        while not (at_end and len(got) >= count):
            assert time.monotonic() < deadline, f"read {len(got)} of {count} from {topic}"
            record = consumer.poll(0.2)
            if record is None:
                continue
            error = record.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                at_end = True
                continue
            at_end = False
            got.append(confluent_message(record))
        return got
    finally:
        consumer.close()


def _batch_headers(data_dirs: list[Path], topic: str, partition: int) -> list[bytes]:
    """The first 61 bytes (the v2 header) of every batch of a partition, as stored on disk by
    every replica found under `data_dirs` (followers copy the leader's batches)."""
    headers: list[bytes] = []
    for data_dir in data_dirs:
        for segment in sorted((data_dir / f"{topic}-{partition}").glob("*.log")):
            data = segment.read_bytes()
            position = 0
            while position + 61 <= len(data):
                length = int.from_bytes(data[position + 8 : position + 12], "big")
                if length == 0:
                    break
                headers.append(data[position : position + 61])
                position += 12 + length
    return headers


def stored_codecs(data_dirs: list[Path], topic: str, partition: int = 0) -> set[int]:
    """The compression codec (attributes & 7, at byte 21) of every stored batch."""
    headers = _batch_headers(data_dirs, topic, partition)
    assert headers, f"no batch of {topic}-{partition} on disk"
    return {int.from_bytes(h[21:23], "big") & 7 for h in headers}


def stored_producer_ids(data_dirs: list[Path], topic: str, partition: int = 0) -> set[int]:
    """The producer id (at byte 43; -1 for none) of every stored batch."""
    headers = _batch_headers(data_dirs, topic, partition)
    assert headers, f"no batch of {topic}-{partition} on disk"
    return {int.from_bytes(h[43:51], "big", signed=True) for h in headers}
