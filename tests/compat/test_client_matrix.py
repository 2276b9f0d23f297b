"""The client compatibility matrix (issue 22): the common flows of each client against a real
cluster of 1 node and of 3 nodes (replication factor 3, min.insync.replicas 2), so that a
regression for any client shows in CI.

Clients: confluent-kafka 2.16 (librdkafka 2.16), Debian's kcat (1.7.1 on librdkafka 2.0.2),
kafka-python 3.0.12 and aiokafka 0.14, each driven by its own adapter (`*_flows.py` beside
this file). Every flow uses a topic of its own; what a client writes is read back with
confluent-kafka, and what a client reads is written with confluent-kafka (`common.py`), so a
failing test names the client and flow at fault.

Gaps (no test is generated for them, nothing is skipped):
- kcat has no admin operations (create, alter/describe configs, delete topics, delete records)
  and no explicit commit or committed-offset query: its group flow commits on close only
  (auto commit), which `test_consume_group` checks through confluent-kafka.
- kcat writes one set of headers for every message (`-H`), so its produce flows carry the
  same headers on each message; the other clients' carry headers of their own per message.
- kcat has no seek: its `test_seek` starts reading at the offset (`-o 17`).
Every client has an idempotent producer (kcat through librdkafka's enable.idempotence) and
every codec (none, gzip, snappy, lz4, zstd; kafka-python's through python-snappy, lz4 and
zstandard). Produce runs every acks (0, 1, all) uncompressed and every codec with acks=all.
Configs are altered with IncrementalAlterConfigs (44) by confluent-kafka and kafka-python (its
choice when the broker has it) and with AlterConfigs (33) by aiokafka, which has only that.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from bench.cluster import Cluster
from tests.compat import aiokafka_flows, confluent_flows, kafka_python_flows, kcat_flows
from tests.compat.common import (
    TIMEOUT,
    Message,
    contents,
    create_topic,
    messages,
    read,
    stored_codecs,
    stored_producer_ids,
    wait_known,
    write,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@dataclass
class Running:
    """A started cluster and its size, for the tests' parameters and assertions."""

    cluster: Cluster
    size: int

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    @property
    def data_dirs(self) -> list[Path]:
        return [node.data_dir for node in self.cluster.nodes.values()]


@pytest.fixture(scope="module", params=[1, 3], ids=["1node", "3nodes"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Running]:
    size: int = request.param
    settings = {
        "default.replication.factor": str(size),
        "min.insync.replicas": str(min(size, 2)),
        "offsets.topic.replication.factor": str(size),
        "offsets.topic.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        # Brokers unfenced sooner after the start.
        "broker.heartbeat.interval.ms": "500",
    }
    started = Cluster.combined(tmp_path_factory.mktemp(f"compat{size}"), size, **settings)
    started.start_all()
    try:
        started.wait_for("brokers unfenced", started.brokers_unfenced, 60.0)
        yield Running(started, size)
    finally:
        started.stop_all()


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name of the test's own (its name and parameters)."""
    return re.sub(r"[^a-zA-Z0-9._-]", "-", request.node.name)[:200]


# --- Each flow, by client. A client missing from a table lacks that flow (module docstring).

Produce = Callable[[str, str, list[Message], str, str], None]
PRODUCE: dict[str, Produce] = {
    "confluent": confluent_flows.produce,
    "kcat": kcat_flows.produce,
    "kafka-python": kafka_python_flows.produce,
    "aiokafka": aiokafka_flows.produce,
}
PRODUCE_IDEMPOTENT: dict[str, Callable[[str, str, list[Message]], None]] = {
    "confluent": confluent_flows.produce_idempotent,
    "kcat": kcat_flows.produce_idempotent,
    "kafka-python": kafka_python_flows.produce_idempotent,
    "aiokafka": aiokafka_flows.produce_idempotent,
}
CONSUME_ASSIGNED: dict[str, Callable[[str, str, int], list[Message]]] = {
    "confluent": confluent_flows.consume_assigned,
    "kcat": kcat_flows.consume_assigned,
    "kafka-python": kafka_python_flows.consume_assigned,
    "aiokafka": aiokafka_flows.consume_assigned,
}
CONSUME_FROM: dict[str, Callable[[str, str, int, int], list[Message]]] = {
    "confluent": confluent_flows.consume_from,
    "kcat": kcat_flows.consume_from,
    "kafka-python": kafka_python_flows.consume_from,
    "aiokafka": aiokafka_flows.consume_from,
}
CONSUME_GROUP: dict[str, Callable[[str, str, str, int], list[Message]]] = {
    "confluent": confluent_flows.consume_group,
    "kcat": kcat_flows.consume_group,
    "kafka-python": kafka_python_flows.consume_group,
    "aiokafka": aiokafka_flows.consume_group,
}
# kcat: no explicit commit, no committed-offset query.
COMMIT: dict[str, tuple[Callable[[str, str, str, int], None], Callable[[str, str, str], int]]] = {
    "confluent": (confluent_flows.commit, confluent_flows.committed),
    "kafka-python": (kafka_python_flows.commit, kafka_python_flows.committed),
    "aiokafka": (aiokafka_flows.commit, aiokafka_flows.committed),
}
LIST_OFFSETS: dict[
    str, tuple[Callable[[str, str, int], int], Callable[[str, str], tuple[int, int]]]
] = {
    "confluent": (confluent_flows.offset_for_time, confluent_flows.watermarks),
    "kcat": (kcat_flows.offset_for_time, kcat_flows.watermarks),
    "kafka-python": (kafka_python_flows.offset_for_time, kafka_python_flows.watermarks),
    "aiokafka": (aiokafka_flows.offset_for_time, aiokafka_flows.watermarks),
}
METADATA: dict[
    str, tuple[Callable[[str, str], dict[int, list[int]]], Callable[[str], set[str]]]
] = {
    "confluent": (confluent_flows.topic_replicas, confluent_flows.topics),
    "kcat": (kcat_flows.topic_replicas, kcat_flows.topics),
    "kafka-python": (kafka_python_flows.topic_replicas, kafka_python_flows.topics),
    "aiokafka": (aiokafka_flows.topic_replicas, aiokafka_flows.topics),
}
# kcat: no admin operations.
CreateTopic = Callable[[str, str, int, int, Mapping[str, str]], None]
CREATE_TOPIC: dict[str, CreateTopic] = {
    "confluent": confluent_flows.create_topic,
    "kafka-python": kafka_python_flows.create_topic,
    "aiokafka": aiokafka_flows.create_topic,
}
DESCRIBE_CONFIGS: dict[str, Callable[[str, str], dict[str, str]]] = {
    "confluent": confluent_flows.describe_configs,
    "kafka-python": kafka_python_flows.describe_configs,
    "aiokafka": aiokafka_flows.describe_configs,
}
ALTER_CONFIGS: dict[str, Callable[[str, str, Mapping[str, str]], None]] = {
    "confluent": confluent_flows.alter_configs,
    "kafka-python": kafka_python_flows.alter_configs,
    "aiokafka": aiokafka_flows.alter_configs,
}
DELETE_TOPIC: dict[str, Callable[[str, str], None]] = {
    "confluent": confluent_flows.delete_topic,
    "kafka-python": kafka_python_flows.delete_topic,
    "aiokafka": aiokafka_flows.delete_topic,
}
DELETE_RECORDS: dict[str, Callable[[str, str, int], int]] = {
    "confluent": confluent_flows.delete_records,
    "kafka-python": kafka_python_flows.delete_records,
    "aiokafka": aiokafka_flows.delete_records,
}

# The RecordBatch attributes' codec ids.
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# Every acks uncompressed, and every codec with acks=all.
PRODUCE_SETTINGS = [("0", "none"), ("1", "none"), *(("all", codec) for codec in CODECS)]


def wait_until(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def reference_committed(bootstrap: str, topic: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [partition] = consumer.committed([TopicPartition(topic, 0)], timeout=TIMEOUT)
        return int(partition.offset)
    finally:
        consumer.close()


@pytest.mark.parametrize(("acks", "codec"), PRODUCE_SETTINGS)
@pytest.mark.parametrize("client", PRODUCE)
def test_produce(cluster: Running, topic: str, client: str, acks: str, codec: str) -> None:
    create_topic(cluster.cluster, topic)
    written = messages(40, client, per_message_headers=client != "kcat")
    PRODUCE[client](cluster.bootstrap, topic, written, acks, codec)
    got = read(cluster.bootstrap, topic, len(written))
    assert contents(got) == contents(written)
    assert [m.offset for m in got] == list(range(len(written)))
    # The batches are stored as the client compressed them (compression.type=producer).
    assert stored_codecs(cluster.data_dirs, topic) == {CODECS[codec]}


@pytest.mark.parametrize("client", PRODUCE_IDEMPOTENT)
def test_produce_idempotent(cluster: Running, topic: str, client: str) -> None:
    create_topic(cluster.cluster, topic)
    written = messages(40, client, per_message_headers=client != "kcat")
    PRODUCE_IDEMPOTENT[client](cluster.bootstrap, topic, written)
    got = read(cluster.bootstrap, topic, len(written))
    assert contents(got) == contents(written)
    # Written as an idempotent producer: batches with a producer id from InitProducerId.
    producer_ids = stored_producer_ids(cluster.data_dirs, topic)
    assert len(producer_ids) == 1
    assert min(producer_ids) >= 0


@pytest.mark.parametrize("client", CONSUME_ASSIGNED)
def test_consume_assigned(cluster: Running, topic: str, client: str) -> None:
    create_topic(cluster.cluster, topic)
    written = messages(30, "assigned")
    write(cluster.bootstrap, topic, written)
    got = CONSUME_ASSIGNED[client](cluster.bootstrap, topic, len(written))
    assert contents(got) == contents(written)
    assert [m.offset for m in got] == list(range(len(written)))


@pytest.mark.parametrize("client", CONSUME_FROM)
def test_seek(cluster: Running, topic: str, client: str) -> None:
    create_topic(cluster.cluster, topic)
    written = messages(30, "seek")
    write(cluster.bootstrap, topic, written)
    got = CONSUME_FROM[client](cluster.bootstrap, topic, 17, 13)
    assert contents(got) == contents(written[17:])
    assert [m.offset for m in got] == list(range(17, 30))


@pytest.mark.parametrize("client", CONSUME_GROUP)
def test_consume_group(cluster: Running, topic: str, client: str) -> None:
    create_topic(cluster.cluster, topic)
    written = messages(30, "group")
    write(cluster.bootstrap, topic, written)
    group = f"{topic}-group"
    got = CONSUME_GROUP[client](cluster.bootstrap, topic, group, len(written))
    assert contents(got) == contents(written)
    # What it read is committed: the next member of the group starts after it.
    assert reference_committed(cluster.bootstrap, topic, group) == len(written)


@pytest.mark.parametrize("client", COMMIT)
def test_commit(cluster: Running, topic: str, client: str) -> None:
    create_topic(cluster.cluster, topic)
    write(cluster.bootstrap, topic, messages(10, "commit"))
    commit, committed = COMMIT[client]
    group = f"{topic}-group"
    commit(cluster.bootstrap, topic, group, 7)
    assert committed(cluster.bootstrap, topic, group) == 7
    assert reference_committed(cluster.bootstrap, topic, group) == 7
    commit(cluster.bootstrap, topic, group, 9)
    assert committed(cluster.bootstrap, topic, group) == 9


@pytest.mark.parametrize("client", LIST_OFFSETS)
def test_list_offsets_by_time(cluster: Running, topic: str, client: str) -> None:
    create_topic(cluster.cluster, topic)
    base = int(time.time() * 1000) - 60_000
    written = [
        Message(m.key, m.value, m.headers, base + 1000 * i)
        for i, m in enumerate(messages(10, "times"))
    ]
    write(cluster.bootstrap, topic, written)
    offset_for_time, watermarks = LIST_OFFSETS[client]
    # The first offset whose timestamp is at or after the one asked for.
    assert offset_for_time(cluster.bootstrap, topic, base) == 0
    assert offset_for_time(cluster.bootstrap, topic, base + 3000) == 3
    assert offset_for_time(cluster.bootstrap, topic, base + 3500) == 4
    assert offset_for_time(cluster.bootstrap, topic, base + 9000) == 9
    # None that late: Kafka answers offset -1.
    assert offset_for_time(cluster.bootstrap, topic, base + 3_600_000) == -1
    assert watermarks(cluster.bootstrap, topic) == (0, 10)


@pytest.mark.parametrize("client", METADATA)
def test_topic_metadata(cluster: Running, topic: str, client: str) -> None:
    create_topic(cluster.cluster, topic, partitions=3)
    topic_replicas, topics = METADATA[client]
    replicas = topic_replicas(cluster.bootstrap, topic)
    assert sorted(replicas) == [0, 1, 2]
    assert all(sorted(r) == sorted(cluster.cluster.nodes) for r in replicas.values())
    assert topic in topics(cluster.bootstrap)


@pytest.mark.parametrize("client", CREATE_TOPIC)
def test_admin_create_and_describe(cluster: Running, topic: str, client: str) -> None:
    CREATE_TOPIC[client](cluster.bootstrap, topic, 3, cluster.size, {"retention.ms": "3600000"})
    # Created once the controller committed it; each broker learns of it from its metadata.
    wait_known(cluster.cluster, topic, 3)
    replicas = confluent_flows.topic_replicas(cluster.bootstrap, topic)
    assert all(len(r) == cluster.size for r in replicas.values())
    configs = DESCRIBE_CONFIGS[client](cluster.bootstrap, topic)
    assert configs["retention.ms"] == "3600000"
    assert configs["cleanup.policy"] == "delete"
    assert configs["min.insync.replicas"] == str(min(cluster.size, 2))


@pytest.mark.parametrize("client", ALTER_CONFIGS)
def test_admin_alter_configs(cluster: Running, topic: str, client: str) -> None:
    create_topic(cluster.cluster, topic)
    altered = {"retention.ms": "7200000", "max.message.bytes": "500000"}
    ALTER_CONFIGS[client](cluster.bootstrap, topic, altered)
    described = DESCRIBE_CONFIGS[client](cluster.bootstrap, topic)
    assert {name: described[name] for name in altered} == altered
    # Another client sees the same.
    reference = confluent_flows.describe_configs(cluster.bootstrap, topic)
    assert {name: reference[name] for name in altered} == altered


@pytest.mark.parametrize("client", DELETE_TOPIC)
def test_admin_delete_topic(cluster: Running, topic: str, client: str) -> None:
    create_topic(cluster.cluster, topic)
    write(cluster.bootstrap, topic, messages(5, "delete"))
    DELETE_TOPIC[client](cluster.bootstrap, topic)
    wait_until(f"{topic} gone", lambda: topic not in confluent_flows.topics(cluster.bootstrap))
    # Each broker removes its replica's directory.
    wait_until(
        f"{topic}'s replicas removed",
        lambda: not any((d / f"{topic}-0").exists() for d in cluster.data_dirs),
    )


@pytest.mark.parametrize("client", DELETE_RECORDS)
def test_delete_records(cluster: Running, topic: str, client: str) -> None:
    create_topic(cluster.cluster, topic)
    written = messages(20, "trim")
    write(cluster.bootstrap, topic, written)
    assert DELETE_RECORDS[client](cluster.bootstrap, topic, 8) == 8
    assert LIST_OFFSETS[client][1](cluster.bootstrap, topic) == (8, 20)
    # A consumer from the beginning starts at the new log start offset.
    got = CONSUME_ASSIGNED[client](cluster.bootstrap, topic, 12)
    assert [m.offset for m in got] == list(range(8, 20))
    assert contents(got) == contents(written[8:])
