"""What programs written for Kafka expect of a broker (issue 22), with real clients against one
real `kraft serve` node (broker and controller roles)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import time
import types
import typing
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta, i64Timedelta

from bench.cluster import CLUSTER_ID, Cluster
from net.api_keys import ApiKey
from net.client import NodeConnection
from net.protocol import field_entity_type, make_entity, request_schema
from net.records import Record, encode_batch

# Topics created automatically get the node's num.partitions.
NUM_PARTITIONS = 2


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("node"), 1, **{"num.partitions": str(NUM_PARTITIONS)}
    )
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def topic_names(cluster: Cluster) -> set[str]:
    """Every topic (Metadata for all topics never creates any)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    return set(admin.list_topics(timeout=10).topics)


def log_events(cluster: Cluster, event: str) -> list[dict[str, Any]]:
    lines = cluster.nodes[1].log_path.read_text().splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    return [e for e in events if e.get("event") == event]


def metadata_request(version: int, topic: str, *, allow_auto_topic_creation: bool) -> Any:
    schema: Any = request_schema(ApiKey.METADATA, version)
    topic_type = field_entity_type(schema, "topics")
    fields: dict[str, object] = {"name": topic}
    if version >= 10:
        fields["topic_id"] = None
    values: dict[str, object] = {"topics": (make_entity(topic_type, **fields),)}
    if version >= 4:
        values["allow_auto_topic_creation"] = allow_auto_topic_creation
    if version >= 8:
        values["include_topic_authorized_operations"] = False
    if 8 <= version <= 10:
        values["include_cluster_authorized_operations"] = False
    return make_entity(schema, **values)


# --- topic auto-creation (item 1) -------------------------------------------------------------


def test_a_producer_creates_the_topic_it_writes_to(node: Cluster) -> None:
    producer = Producer({"bootstrap.servers": node.bootstrap, "message.timeout.ms": 30000})
    errors: list[KafkaError | None] = []
    for index in range(10):
        producer.produce(
            "auto-orders", f"v{index}".encode(), on_delivery=lambda e, _m: errors.append(e)
        )
    assert producer.flush(30) == 0
    assert errors == [None] * 10
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    topic = admin.list_topics(topic="auto-orders", timeout=10).topics["auto-orders"]
    assert len(topic.partitions) == NUM_PARTITIONS


def test_consumers_do_not_create_topics(node: Cluster) -> None:
    # librdkafka consumers send allow_auto_topic_creation=false (allow.auto.create.topics).
    consumer = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": "no-create",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe(["consumed-only"])
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            consumer.poll(0.5)
    finally:
        consumer.close()
    assert "consumed-only" not in topic_names(node)


@pytest.mark.parametrize("version", [1, 3])
async def test_metadata_before_v4_creates_the_topics_it_names(node: Cluster, version: int) -> None:
    name = f"auto-v{version}"
    connection = NodeConnection("127.0.0.1", node.nodes[1].broker_port or 0)
    try:
        request = metadata_request(version, name, allow_auto_topic_creation=True)
        first: Any = await connection.send(request)
        assert first.topics[0].error_code == ErrorCode.leader_not_available

        async def created() -> Any:
            while True:
                response: Any = await connection.send(request)
                topic = response.topics[0]
                if topic.error_code == ErrorCode.none and all(
                    p.error_code == ErrorCode.none for p in topic.partitions
                ):
                    return topic
                await asyncio.sleep(0.1)

        topic = await asyncio.wait_for(created(), timeout=20)
        assert len(topic.partitions) == NUM_PARTITIONS
    finally:
        await connection.close()


async def test_metadata_without_the_flag_and_internal_topics_create_nothing(node: Cluster) -> None:
    # (`__consumer_offsets` is left out: its coordinator creates it for the consumer above.)
    connection = NodeConnection("127.0.0.1", node.nodes[1].broker_port or 0)
    try:
        for version, name, allow in [
            (12, "not-allowed", False),
            (12, "__transaction_state", True),
            (12, "__cluster_metadata", True),
            (1, "__transaction_state", True),
        ]:
            request = metadata_request(version, name, allow_auto_topic_creation=allow)
            response: Any = await connection.send(request)
            assert response.topics[0].error_code == ErrorCode.unknown_topic_or_partition, name
    finally:
        await connection.close()
    await asyncio.sleep(1)
    assert topic_names(node).isdisjoint(
        {"not-allowed", "__cluster_metadata", "__transaction_state"}
    )


async def test_one_creation_at_a_time_per_topic(node: Cluster) -> None:
    connection = NodeConnection("127.0.0.1", node.nodes[1].broker_port or 0)
    request = metadata_request(12, "stampede", allow_auto_topic_creation=True)
    try:
        await connection.connect(10)
        responses: list[Any] = await asyncio.gather(*(connection.send(request) for _ in range(50)))
    finally:
        await connection.close()
    assert {r.topics[0].error_code for r in responses} <= {
        ErrorCode.leader_not_available,
        ErrorCode.none,
    }
    await asyncio.to_thread(node.wait_for, "stampede", lambda: "stampede" in topic_names(node))
    asked = [e for e in log_events(node, "topic_auto_created") if e["topic"] == "stampede"]
    # Each of the 50 requests would ask the controller without the in-flight guard.
    assert 1 <= len(asked) <= 3
    assert [e for e in asked if not e["already_existed"]] == asked[:1]


# --- cluster id (item 2) ----------------------------------------------------------------------


def test_metadata_and_describe_cluster_name_the_cluster_id(node: Cluster) -> None:
    # librdkafka's clusterid() comes from Metadata (v12 here).
    producer = Producer({"bootstrap.servers": node.bootstrap})
    assert producer.cluster_id(timeout=10) == CLUSTER_ID
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    assert admin.describe_cluster().result(timeout=10).cluster_id == CLUSTER_ID


# --- invalid topic names (item 4) -------------------------------------------------------------

INVALID_NAMES = ["bad$#!", "x" * 250, ".", ".."]


@pytest.mark.parametrize("name", INVALID_NAMES, ids=["illegal-chars", "too-long", "dot", "dots"])
def test_metadata_of_an_invalid_topic_name_is_invalid_topic(node: Cluster, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    topic = admin.list_topics(topic=name, timeout=10).topics[name]
    assert topic.error is not None and topic.error.code() == KafkaError.TOPIC_EXCEPTION


def test_a_producer_fails_messages_to_an_invalid_topic_at_once(node: Cluster) -> None:
    # The producer would hold them for message.timeout.ms on UNKNOWN_TOPIC_OR_PARTITION.
    producer = Producer({"bootstrap.servers": node.bootstrap, "message.timeout.ms": 60000})
    errors: list[KafkaError | None] = []
    producer.produce("bad$#!", b"v", on_delivery=lambda error, _message: errors.append(error))
    assert producer.flush(15) == 0
    assert [error and error.code() for error in errors] == [KafkaError.TOPIC_EXCEPTION]


@pytest.fixture
def no_auto_creation(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster.combined(tmp_path, 1, **{"auto.create.topics.enable": "false"})
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def test_auto_creation_can_be_turned_off(no_auto_creation: Cluster) -> None:
    producer = Producer(
        {"bootstrap.servers": no_auto_creation.bootstrap, "message.timeout.ms": 3000}
    )
    errors: list[KafkaError | None] = []
    producer.produce("never", b"v", on_delivery=lambda error, _message: errors.append(error))
    assert producer.flush(15) == 0
    assert [error and error.code() for error in errors] == [KafkaError._MSG_TIMED_OUT]
    assert "never" not in topic_names(no_auto_creation)


# --- empty and all-unknown requests (item 6) ----------------------------------------------------

# Every API of the client listener (the controller's own APIs are served on its listener).
CLIENT_APIS = [
    ApiKey.PRODUCE,
    ApiKey.FETCH,
    ApiKey.LIST_OFFSETS,
    ApiKey.METADATA,
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.FIND_COORDINATOR,
    ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS,
    ApiKey.API_VERSIONS,
    ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS,
    ApiKey.INIT_PRODUCER_ID,
    ApiKey.OFFSET_FOR_LEADER_EPOCH,
    ApiKey.DESCRIBE_CONFIGS,
    ApiKey.CREATE_PARTITIONS,
    ApiKey.DELETE_GROUPS,
    ApiKey.ELECT_LEADERS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.OFFSET_DELETE,
    ApiKey.DESCRIBE_CLUSTER,
    ApiKey.GET_REPLICA_LOG_INFO,
]
UNKNOWN_ID = uuid.UUID(int=12345)
# What a client would name that does not exist: a topic (by name and by id), a group.
UNKNOWN_ITEMS: dict[ApiKey, dict[str, object]] = {
    ApiKey.PRODUCE: {
        "topic_data": [
            {"name": "nowhere", "partition_data": [{"index": 0, "records": None}]},
        ]
    },
    ApiKey.FETCH: {
        "topics": [
            {
                "topic": "nowhere",
                "topic_id": UNKNOWN_ID,
                "partitions": [{"partition": 0, "current_leader_epoch": -1}],
            }
        ]
    },
    ApiKey.LIST_OFFSETS: {
        "topics": [
            {
                "name": "nowhere",
                "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}],
            }
        ]
    },
    ApiKey.OFFSET_FOR_LEADER_EPOCH: {
        "topics": [{"topic": "nowhere", "partitions": [{"partition": 0, "leader_epoch": 0}]}]
    },
    # (By an internal topic's name before v10: a Metadata naming another would create it.)
    ApiKey.METADATA: {"topics": [{"name": "__transaction_state"}]},
    ApiKey.OFFSET_COMMIT: {
        "group_id": "nobody",
        "generation_id_or_member_epoch": -1,
        "generation_id": -1,
        "topics": [{"name": "nowhere", "partitions": [{"partition_index": 0}]}],
    },
    ApiKey.OFFSET_FETCH: {
        "group_id": "nobody",
        "topics": [{"name": "nowhere", "partition_indexes": [0]}],
        "groups": [
            {"group_id": "nobody", "topics": [{"name": "nowhere", "partition_indexes": [0]}]}
        ],
    },
    ApiKey.HEARTBEAT: {"group_id": "nobody", "member_id": "someone"},
    ApiKey.SYNC_GROUP: {"group_id": "nobody", "member_id": "someone"},
    ApiKey.LEAVE_GROUP: {
        "group_id": "nobody",
        "member_id": "someone",
        "members": [{"member_id": "someone"}],
    },
    ApiKey.DESCRIBE_GROUPS: {"groups": ["nobody"]},
    ApiKey.DELETE_GROUPS: {"groups_names": ["nobody"]},
    ApiKey.OFFSET_DELETE: {
        "group_id": "nobody",
        "topics": [{"name": "nowhere", "partitions": [{"partition_index": 0}]}],
    },
    ApiKey.DELETE_TOPICS: {
        "topic_names": ["nowhere"],
        "topics": [{"name": "nowhere", "topic_id": uuid.UUID(int=0)}],
    },
    ApiKey.CREATE_PARTITIONS: {"topics": [{"name": "nowhere", "count": 2}]},
    ApiKey.ELECT_LEADERS: {"topic_partitions": [{"topic": "nowhere", "partitions": [0]}]},
    ApiKey.DESCRIBE_CONFIGS: {"resources": [{"resource_type": 2, "resource_name": "nowhere"}]},
    ApiKey.INCREMENTAL_ALTER_CONFIGS: {
        "resources": [
            {
                "resource_type": 2,
                "resource_name": "nowhere",
                "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}],
            }
        ]
    },
}
# Kafka answers these without an error for what does not exist: a group that does not exist is
# Dead (DescribeGroups before v6), and a partition without a committed offset has offset -1.
ANSWERED_WITHOUT_ERROR = {ApiKey.DESCRIBE_GROUPS, ApiKey.OFFSET_FETCH}
# Fields whose neutral value would ask something else: no answer (acks=0), a follower's fetch
# (replica id 0), a fetch session, a fetch that does not wait.
ASKING_AS_A_CLIENT: dict[str, object] = {
    "acks": -1,
    "timeout": datetime.timedelta(seconds=1),
    "replica_id": -1,
    "replica_state": {"replica_id": -1, "replica_epoch": -1},
    "session_epoch": -1,
    "max_wait": datetime.timedelta(seconds=1),
    "min_bytes": 1,
    "max_bytes": 1 << 20,
    "partition_max_bytes": 1 << 20,
    "fetch_offset": 0,
}


def neutral(field_type: Any) -> object:
    """The empty value of a field: null, no items, zero."""
    origin = typing.get_origin(field_type)
    if origin in (types.UnionType, typing.Union) and type(None) in typing.get_args(field_type):
        return None
    if origin is tuple:
        return ()
    if dataclasses.is_dataclass(field_type) and isinstance(field_type, type):
        return build(field_type, {})
    if field_type is ErrorCode:
        return ErrorCode.none
    if field_type in (i32Timedelta, i64Timedelta):
        return datetime.timedelta(0)
    if field_type is uuid.UUID:
        return uuid.UUID(int=0)
    for base, value in ((bool, False), (int, 0), (str, ""), (bytes, b"")):
        if isinstance(field_type, type) and issubclass(field_type, base):
            return value
    raise TypeError(f"no neutral value for {field_type!r}")


def build(entity_type: type, values: dict[str, object]) -> Any:
    """`entity_type` with `values` (nested entities as dicts, lists of them as lists) for the
    fields it has, the others at their defaults or empty."""
    built: dict[str, object] = {}
    for entity_field in dataclasses.fields(entity_type):
        name = entity_field.name
        value = values.get(name, ASKING_AS_A_CLIENT.get(name, dataclasses.MISSING))
        if value is dataclasses.MISSING:
            if (
                entity_field.default is dataclasses.MISSING
                and entity_field.default_factory is dataclasses.MISSING
            ):
                built[name] = neutral(entity_field.type)
            continue
        if isinstance(value, dict):
            value = build(field_entity_type(entity_type, name), value)
        elif isinstance(value, list):
            value = tuple(
                build(field_entity_type(entity_type, name), item)
                if isinstance(item, dict)
                else item
                for item in value
            )
        built[name] = value
    return entity_type(**built)


def errors_in(entity: object) -> set[ErrorCode]:
    """Every error code anywhere in a response."""
    found: set[ErrorCode] = set()
    if isinstance(entity, tuple):
        for item in entity:
            found |= errors_in(item)
    elif dataclasses.is_dataclass(entity):
        for entity_field in dataclasses.fields(entity):
            value = getattr(entity, entity_field.name)
            if isinstance(value, ErrorCode):
                found.add(value)
            else:
                found |= errors_in(value)
    return found


@pytest.mark.parametrize("api_key", CLIENT_APIS, ids=[api.name for api in CLIENT_APIS])
async def test_empty_and_all_unknown_requests_are_answered(node: Cluster, api_key: ApiKey) -> None:
    connection = NodeConnection("127.0.0.1", node.nodes[1].broker_port or 0, request_timeout=15)
    try:
        await connection.connect(10)
        low, high = connection.api_versions[api_key]
        for version in sorted({low, high}):
            bodies = {"empty": {}, "all unknown": UNKNOWN_ITEMS.get(api_key, {})}
            if api_key == ApiKey.METADATA and version >= 10:
                bodies["by unknown id"] = {"topics": [{"name": None, "topic_id": UNKNOWN_ID}]}
            schema = request_schema(api_key, version)
            assert schema is not None
            for body, values in bodies.items():
                response = await connection.send(build(schema, values))
                errors = errors_in(response)
                assert response is not None, (version, body)
                assert ErrorCode.unknown_server_error not in errors, (version, body, response)
                if body != "empty" and api_key in UNKNOWN_ITEMS.keys() - ANSWERED_WITHOUT_ERROR:
                    # Each unknown item is refused with an error of its own.
                    assert errors - {ErrorCode.none}, (version, body, response)
        assert connection.connected
    finally:
        await connection.close()


# --- offsets of topics that do not exist (item 3) ----------------------------------------------


def test_offsets_of_a_topic_that_does_not_exist_are_refused_and_not_stored(node: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    admin.create_topics([NewTopic("committed", num_partitions=1)])["committed"].result(30)
    node.wait_for("committed", lambda: "committed" in topic_names(node))
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "altered"})
    try:
        # (The first commit also waits out the offsets topic's creation.)
        consumer.commit(offsets=[TopicPartition("committed", 0, 1)], asynchronous=False)
        with pytest.raises(KafkaException) as refused:
            consumer.commit(offsets=[TopicPartition("no-such-topic", 0, 3)], asynchronous=False)
        assert refused.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    finally:
        consumer.close()
    # An admin client's AlterConsumerGroupOffsets is an OffsetCommit of generation -1, per
    # partition.
    asked = ConsumerGroupTopicPartitions(
        "altered",
        [TopicPartition("committed", 0, 5), TopicPartition("no-such-topic", 0, 7)],
    )
    altered = admin.alter_consumer_group_offsets([asked])["altered"].result(timeout=30)
    assert {(p.topic, p.error and p.error.code()) for p in altered.topic_partitions} == {
        ("committed", None),
        ("no-such-topic", KafkaError.UNKNOWN_TOPIC_OR_PART),
    }

    listed = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("altered", [TopicPartition("committed", 0)])]
    )["altered"].result(timeout=30)
    assert [(p.topic, p.partition, p.offset) for p in listed.topic_partitions] == [
        ("committed", 0, 5)
    ]
    stored = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("altered")])[
        "altered"
    ].result(timeout=30)
    assert {p.topic for p in stored.topic_partitions} == {"committed"}


# --- per-record errors (item 5) -----------------------------------------------------------------


def produce_one_batch(
    cluster: Cluster, topic: str, messages: list[tuple[bytes | None, int]]
) -> list[KafkaError | None]:
    """Each (key, timestamp) with a value of its index, all in one batch; each one's error."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            # Long enough that nothing is sent before flush() below sends all at once (with
            # 500 ms, a loaded CI machine once saw the first and last records sent apart from
            # the others, and delivered).
            "linger.ms": 10000,
            "message.timeout.ms": 30000,
        }
    )
    # The partition known before the first record, so all of them queue for it together.
    producer.list_topics(topic, timeout=10)
    errors: dict[int, KafkaError | None] = {}
    for index, (key, timestamp) in enumerate(messages):
        producer.produce(
            topic,
            str(index).encode(),
            key=key,
            timestamp=timestamp,
            on_delivery=lambda e, m: errors.__setitem__(int(m.value() or b""), e),
        )
    assert producer.flush(30) == 0
    return [errors[index] for index in range(len(messages))]


def high_watermark(cluster: Cluster, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "watermarks"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def create_topic(cluster: Cluster, name: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=1, config=configs)])[name].result(30)
    cluster.wait_for(name, lambda: name in topic_names(cluster))


# librdkafka fails the records a response names with INVALID_RECORD (with two or more of them;
# a single one takes the partition's error) and the others of their batch with a local error of
# their own, instead of all with the partition's error.
NAMED = KafkaError.INVALID_RECORD
OTHER = KafkaError._INVALID_DIFFERENT_RECORD


def test_a_batch_with_keyless_records_to_a_compacted_topic_names_them(node: Cluster) -> None:
    create_topic(node, "compacted", {"cleanup.policy": "compact"})
    now = int(time.time() * 1000)
    keys = [b"a", None, None, b"d"]
    errors = produce_one_batch(node, "compacted", [(key, now) for key in keys])
    assert [error and error.code() for error in errors] == [OTHER, NAMED, NAMED, OTHER]
    assert high_watermark(node, "compacted") == 0


async def test_a_batch_with_records_out_of_the_timestamp_bounds_names_them(node: Cluster) -> None:
    await asyncio.to_thread(
        create_topic, node, "bounded", {"message.timestamp.before.max.ms": "60000"}
    )
    now = int(time.time() * 1000)
    hour_ago = now - 3_600_000
    stamps = [now, hour_ago, hour_ago]
    errors = await asyncio.to_thread(
        produce_one_batch, node, "bounded", [(b"k", stamp) for stamp in stamps]
    )
    assert [error and error.code() for error in errors] == [OTHER, NAMED, NAMED]

    # Over the wire, Kafka's answer: the partition's error, each record at fault by its index
    # with its reason, and a message.
    schema: Any = request_schema(ApiKey.PRODUCE, 9)
    records = encode_batch([Record(b"v", key=b"k", timestamp=stamp) for stamp in stamps])
    request = build(
        schema,
        {
            "topic_data": [
                {"name": "bounded", "partition_data": [{"index": 0, "records": records}]}
            ],
        },
    )
    connection = NodeConnection("127.0.0.1", node.nodes[1].broker_port or 0)
    try:
        response: Any = await connection.send(request)
    finally:
        await connection.close()
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.invalid_timestamp
    assert [e.batch_index for e in answer.record_errors] == [1, 2]
    assert all(
        e.batch_index_error_message.startswith(f"Timestamp {hour_ago} of message with offset")
        for e in answer.record_errors
    )
    assert answer.error_message == "One or more records have been rejected due to invalid timestamp"
    assert await asyncio.to_thread(high_watermark, node, "bounded") == 0
