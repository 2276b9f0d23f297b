"""CreateTopics / DeleteTopics / CreatePartitions (controller/topics.py) against Kafka's rules.

Every refusal is checked for Kafka's error code; every success for the exact records, and for
the image those records give when replayed with the real `MetadataDelta`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import count
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from controller.image import MetadataDelta, MetadataImage
from controller.limits import (
    MAX_PARTITIONS_PER_REQUEST,
    MAX_RECORDS_PER_USER_OP,
    TOO_MANY_PARTITIONS,
    TOO_MANY_RECORDS,
    OperationTooLargeError,
)
from controller.partition_state import PartitionState
from controller.placement import PlacementBroker, place_replicas, start_for_topic
from controller.records import (
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from controller.topic_config import ConfigSource, TopicConfigEntry
from controller.topics import (
    NewTopic,
    PartitionsIncrease,
    TopicDefaults,
    create_partitions,
    create_topics,
    delete_topics,
)

DEFAULTS = TopicDefaults(num_partitions=1, replication_factor=1)


def cluster(
    broker_ids: Iterable[int], *, fenced: Iterable[int] = (), shutting_down: Iterable[int] = ()
) -> MetadataImage:
    """An image with these brokers registered, unfenced unless listed otherwise."""
    fenced, shutting_down = set(fenced), set(shutting_down)
    return MetadataImage.from_records(
        RegisterBrokerRecord(
            broker_id=broker_id,
            incarnation_id=UUID(int=broker_id + 1),
            broker_epoch=100 + broker_id,
            fenced=broker_id in fenced,
            in_controlled_shutdown=broker_id in shutting_down,
        )
        for broker_id in broker_ids
    )


def topic_ids(first: int = 1) -> Callable[[], UUID]:
    """Deterministic topic ids: UUID(int=first), UUID(int=first + 1), ..."""
    numbers = count(first)
    return lambda: UUID(int=next(numbers))


def apply(image: MetadataImage, records: Sequence[MetadataRecord]) -> MetadataImage:
    """`image` after replaying `records`, as a node replays committed entries."""
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(image.end_offset + len(records), 1)


def create(
    image: MetadataImage,
    *topics: NewTopic,
    defaults: TopicDefaults = DEFAULTS,
    first_id: int = 1,
) -> tuple[MetadataImage, list[MetadataRecord], list[ErrorCode]]:
    """Creates `topics` and replays the records: the new image, the records, the error codes."""
    outcome = create_topics(
        image, topics, defaults, validate_only=False, new_topic_id=topic_ids(first_id)
    )
    records = list(outcome.records)
    return apply(image, records), records, [result.error_code for result in outcome.results]


def create_error(image: MetadataImage, topic: NewTopic) -> ErrorCode:
    """The error code of creating `topic` alone; asserts that nothing would be written."""
    outcome = create_topics(image, [topic], DEFAULTS, validate_only=False, new_topic_id=topic_ids())
    assert len(outcome.results) == 1
    result = outcome.results[0]
    if result.error_code is not ErrorCode.none:
        assert outcome.records == ()
        assert result.error_message
        assert (result.topic_id, result.num_partitions, result.configs) == (UUID(int=0), -1, ())
    return result.error_code


# --- CreateTopics: success --------------------------------------------------------------------


def test_create_writes_topic_then_configs_then_partitions_and_replays() -> None:
    image = cluster([3, 1, 2])
    request = NewTopic(
        "orders", 3, 2, configs={"retention.ms": "1000", "cleanup.policy": "compact"}
    )
    outcome = create_topics(
        image, [request], DEFAULTS, validate_only=False, new_topic_id=topic_ids(7)
    )

    topic_id = UUID(int=7)
    placement = place_replicas(
        [PlacementBroker(1), PlacementBroker(2), PlacementBroker(3)],
        3,
        2,
        start=start_for_topic("orders"),
    )
    assert outcome.records == (
        TopicRecord("orders", topic_id),
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "cleanup.policy", "compact"),
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "retention.ms", "1000"),
        *(
            PartitionRecord(topic_id, p, tuple(replicas), tuple(replicas), replicas[0], 0, 0)
            for p, replicas in enumerate(placement)
        ),
    )
    (result,) = outcome.results
    assert (result.name, result.error_code, result.error_message) == (
        "orders",
        ErrorCode.none,
        None,
    )
    assert (result.topic_id, result.num_partitions, result.replication_factor) == (topic_id, 3, 2)

    after = apply(image, outcome.records)
    topic = after.topic("orders")
    assert topic is not None and topic.topic_id == topic_id
    assert dict(topic.partitions) == {
        p: PartitionState(tuple(replicas), tuple(replicas), replicas[0])
        for p, replicas in enumerate(placement)
    }
    assert dict(after.topic_configs("orders")) == {
        "cleanup.policy": "compact",
        "retention.ms": "1000",
    }


def test_placement_is_deterministic_and_follows_the_topic_name() -> None:
    image = cluster(range(5))
    request = [NewTopic("a", 10, 3), NewTopic("b", 10, 3)]
    first = create_topics(image, request, DEFAULTS, validate_only=False, new_topic_id=topic_ids())
    again = create_topics(image, request, DEFAULTS, validate_only=False, new_topic_id=topic_ids())
    assert first == again
    replicas_a = [
        r.replicas for r in first.records if isinstance(r, PartitionRecord) and r.topic_id.int == 1
    ]
    replicas_b = [
        r.replicas for r in first.records if isinstance(r, PartitionRecord) and r.topic_id.int == 2
    ]
    # Topics start on different brokers (CRC32 of the name), so leaders do not pile up.
    assert replicas_a != replicas_b


def test_defaults_fill_partitions_replication_factor_and_effective_configs() -> None:
    defaults = TopicDefaults(
        num_partitions=4, replication_factor=3, configs={"min.insync.replicas": "2"}
    )
    outcome = create_topics(
        cluster(range(3)),
        [NewTopic("t", configs={"segment.bytes": "1048576"})],
        defaults,
        validate_only=False,
        new_topic_id=topic_ids(),
    )
    (result,) = outcome.results
    assert (result.num_partitions, result.replication_factor) == (4, 3)
    partitions = [r for r in outcome.records if isinstance(r, PartitionRecord)]
    assert [p.partition_id for p in partitions] == [0, 1, 2, 3]
    assert all(len(p.replicas) == 3 and p.isr == p.replicas for p in partitions)
    configs = {entry.name: entry for entry in result.configs}
    assert [entry.name for entry in result.configs] == sorted(configs)
    assert configs["segment.bytes"] == TopicConfigEntry(
        "segment.bytes", "1048576", ConfigSource.DYNAMIC_TOPIC_CONFIG
    )
    assert configs["min.insync.replicas"] == TopicConfigEntry(
        "min.insync.replicas", "2", ConfigSource.STATIC_BROKER_CONFIG
    )
    assert configs["retention.ms"] == TopicConfigEntry(
        "retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG
    )
    # Only the request's overrides become records; defaults stay out of the metadata log.
    assert [r.key for r in outcome.records if isinstance(r, ConfigRecord)] == ["segment.bytes"]


def test_validate_only_gives_the_same_results_and_no_records() -> None:
    image = cluster(range(3))
    request = [NewTopic("ok", 2, 2), NewTopic("bad", 0, 1)]
    real = create_topics(image, request, DEFAULTS, validate_only=False, new_topic_id=topic_ids())
    dry = create_topics(image, request, DEFAULTS, validate_only=True, new_topic_id=topic_ids())
    assert dry.records == ()
    assert dry.results == real.results
    assert [r.error_code for r in dry.results] == [ErrorCode.none, ErrorCode.invalid_partitions]


def test_placement_uses_only_unfenced_brokers_not_in_controlled_shutdown() -> None:
    image = cluster(range(5), fenced=[1], shutting_down=[3])
    _, records, errors = create(image, NewTopic("t", 12, 3))
    assert errors == [ErrorCode.none]
    used = {b for r in records if isinstance(r, PartitionRecord) for b in r.replicas}
    assert used == {0, 2, 4}


@given(
    brokers=st.lists(st.integers(0, 100), min_size=1, max_size=7, unique=True),
    partitions=st.integers(1, 30),
    data=st.data(),
)
def test_every_created_partition_is_led_by_its_preferred_replica(
    brokers: list[int], partitions: int, data: st.DataObject
) -> None:
    replication_factor = data.draw(st.integers(1, len(brokers)))
    image, _, errors = create(cluster(brokers), NewTopic("t", partitions, replication_factor))
    assert errors == [ErrorCode.none]
    topic = image.topic("t")
    assert topic is not None and sorted(topic.partitions) == list(range(partitions))
    for state in topic.partitions.values():
        assert len(set(state.replicas)) == replication_factor
        assert state.isr == state.replicas and state.leader == state.preferred_leader
        assert (state.leader_epoch, state.partition_epoch) == (0, 0)


# --- CreateTopics: names ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "with space", "tópico", "a/b", "a:b"])
def test_invalid_topic_names_are_refused(name: str) -> None:
    assert create_error(cluster([0]), NewTopic(name, 1, 1)) is ErrorCode.invalid_topic_exception


@pytest.mark.parametrize("name", ["a" * 249, "Az09._-", "...", "_"])
def test_valid_topic_names_are_accepted(name: str) -> None:
    assert create_error(cluster([0]), NewTopic(name, 1, 1)) is ErrorCode.none


def test_the_metadata_topic_cannot_be_created() -> None:
    assert create_error(cluster([0]), NewTopic("__cluster_metadata", 1, 1)) is (
        ErrorCode.invalid_request
    )


def test_an_existing_topic_is_refused() -> None:
    image, _, _ = create(cluster([0]), NewTopic("a_b", 1, 1))
    assert create_error(image, NewTopic("a_b", 1, 1)) is ErrorCode.topic_already_exists


@pytest.mark.parametrize(("existing", "new"), [("a_b", "a.b"), ("a.b", "a_b"), ("x.y_z", "x_y.z")])
def test_names_colliding_by_dot_and_underscore_are_refused(existing: str, new: str) -> None:
    image, _, _ = create(cluster([0]), NewTopic(existing, 1, 1))
    assert create_error(image, NewTopic(new, 1, 1)) is ErrorCode.invalid_topic_exception


def test_colliding_names_within_one_request_create_only_the_first() -> None:
    image, _, errors = create(cluster([0]), NewTopic("a.b", 1, 1), NewTopic("a_b", 1, 1))
    assert errors == [ErrorCode.none, ErrorCode.invalid_topic_exception]
    assert set(image.topic_ids) == {"a.b"}


def test_a_name_twice_in_one_request_is_invalid_and_the_others_proceed() -> None:
    outcome = create_topics(
        cluster([0]),
        [NewTopic("dup", 1, 1), NewTopic("other", 1, 1), NewTopic("dup", 2, 1)],
        DEFAULTS,
        validate_only=False,
        new_topic_id=topic_ids(),
    )
    assert [(r.name, r.error_code) for r in outcome.results] == [
        ("dup", ErrorCode.invalid_request),
        ("other", ErrorCode.none),
    ]
    assert [r.name for r in outcome.records if isinstance(r, TopicRecord)] == ["other"]


# --- CreateTopics: partitions, replication factor, assignments -----------------------------------


@pytest.mark.parametrize("partitions", [0, -2, -100])
def test_non_positive_partition_counts_are_refused(partitions: int) -> None:
    assert create_error(cluster([0]), NewTopic("t", partitions, 1)) is ErrorCode.invalid_partitions


@pytest.mark.parametrize("replication_factor", [0, -2])
def test_non_positive_replication_factors_are_refused(replication_factor: int) -> None:
    assert create_error(cluster([0]), NewTopic("t", 1, replication_factor)) is (
        ErrorCode.invalid_replication_factor
    )


def test_replication_factor_above_the_usable_brokers_is_refused() -> None:
    image = cluster(range(3), fenced=[2])
    assert create_error(image, NewTopic("t", 1, 3)) is ErrorCode.invalid_replication_factor
    assert create_error(image, NewTopic("t", 1, 2)) is ErrorCode.none
    # The default replication factor is checked just the same.
    outcome = create_topics(
        image, [NewTopic("t")], TopicDefaults(1, 3), validate_only=False, new_topic_id=topic_ids()
    )
    assert outcome.results[0].error_code is ErrorCode.invalid_replication_factor


def test_no_usable_broker_refuses_the_replication_factor() -> None:
    image = cluster([0, 1], fenced=[0], shutting_down=[1])
    assert create_error(image, NewTopic("t", 1, 1)) is ErrorCode.invalid_replication_factor


def test_manual_assignment_is_written_as_given() -> None:
    image = cluster(range(4))
    assignments = [(1, [3, 0]), (0, [2, 1])]
    new_image, _, errors = create(image, NewTopic("t", assignments=assignments))
    assert errors == [ErrorCode.none]
    topic = new_image.topic("t")
    assert topic is not None
    assert {p: s.replicas for p, s in topic.partitions.items()} == {0: (2, 1), 1: (3, 0)}


def test_manual_assignment_leader_is_the_first_usable_replica() -> None:
    image = cluster(range(3), fenced=[2], shutting_down=[0])
    _, records, errors = create(image, NewTopic("t", assignments=[(0, [2, 0, 1])]))
    assert errors == [ErrorCode.none]
    (partition,) = [r for r in records if isinstance(r, PartitionRecord)]
    assert (partition.replicas, partition.isr, partition.leader) == ((2, 0, 1), (1,), 1)


@pytest.mark.parametrize(("num_partitions", "replication_factor"), [(1, -1), (-1, 2), (1, 2)])
def test_manual_assignment_with_counts_is_an_invalid_request(
    num_partitions: int, replication_factor: int
) -> None:
    topic = NewTopic("t", num_partitions, replication_factor, assignments=[(0, [0, 1])])
    assert create_error(cluster(range(2)), topic) is ErrorCode.invalid_request


@pytest.mark.parametrize(
    "assignments",
    [
        [(0, [0]), (0, [1])],  # a partition twice
        [(0, [0]), (2, [1])],  # not consecutive
        [(1, [0])],  # not starting at 0
        [(0, [0, 9])],  # an unregistered broker
        [(0, [1, 1])],  # a broker twice
        [(0, [0, 1]), (1, [2])],  # replication factors differ
        [(0, [])],  # no replicas
        [(0, [2])],  # only fenced replicas: nobody can lead
    ],
)
def test_bad_manual_assignments_are_refused(assignments: list[tuple[int, list[int]]]) -> None:
    image = cluster(range(3), fenced=[2])
    assert create_error(image, NewTopic("t", assignments=assignments)) is (
        ErrorCode.invalid_replica_assignment
    )


# --- CreateTopics: configs --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("min.insync.replicas", "0"),
        ("min.insync.replicas", "two"),
        ("min.insync.replicas", "1_0"),
        ("retention.ms", "-2"),
        ("retention.bytes", "1.5"),
        ("segment.bytes", "13"),
        ("segment.bytes", "2147483648"),
        ("segment.ms", "0"),
        ("flush.messages", "0"),
        ("flush.ms", "-1"),
        ("delete.retention.ms", "-1"),
        ("max.message.bytes", "-1"),
        ("unclean.leader.election.enable", "yes"),
        ("cleanup.policy", "both"),
        ("cleanup.policy", ""),
        ("cleanup.policy", "delete,"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("min.cleanable.dirty.ratio", "half"),
        ("message.timestamp.type", "createtime"),
        ("no.such.config", "1"),
        ("log.retention.ms", "1000"),  # a broker key, not a topic key
    ],
)
def test_bad_configs_are_refused(key: str, value: str) -> None:
    assert create_error(cluster([0]), NewTopic("t", 1, 1, configs={key: value})) is (
        ErrorCode.invalid_config
    )


def test_a_null_config_value_is_refused() -> None:
    topic = NewTopic("t", 1, 1, configs={"retention.ms": None})
    assert create_error(cluster([0]), topic) is ErrorCode.invalid_config


# Kafka's own words for each kind of bad value (LogConfig's ConfigDef validators).
BAD_CONFIG_MESSAGES = [
    (
        "min.insync.replicas",
        "0",
        "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
    ),
    (
        "min.insync.replicas",
        "1_0",
        "Invalid value 1_0 for configuration min.insync.replicas: Not a number of type INT",
    ),
    (
        "retention.bytes",
        "1.5",
        "Invalid value 1.5 for configuration retention.bytes: Not a number of type LONG",
    ),
    (
        "segment.bytes",
        "2147483648",
        "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT",
    ),
    (
        "retention.ms",
        " x ",
        "Invalid value  x  for configuration retention.ms: Not a number of type LONG",
    ),
    (
        "unclean.leader.election.enable",
        "yes",
        "Invalid value yes for configuration "
        "unclean.leader.election.enable: Expected value to be either true or false",
    ),
    (
        "cleanup.policy",
        "delete,",
        "Invalid value delete, for configuration cleanup.policy: "
        "List must contain only: compact, delete",
    ),
    (
        "min.cleanable.dirty.ratio",
        "1.5",
        "Invalid value 1.5 for configuration "
        "min.cleanable.dirty.ratio: Value must be between 0 and 1",
    ),
    (
        "min.cleanable.dirty.ratio",
        "half",
        "Invalid value half for configuration "
        "min.cleanable.dirty.ratio: Not a number of type DOUBLE",
    ),
    (
        "message.timestamp.type",
        "createtime",
        "Invalid value createtime for configuration "
        "message.timestamp.type: String must be one of: CreateTime, LogAppendTime",
    ),
    (
        "unclean.recovery.strategy",
        "fast",
        "Invalid value fast for configuration "
        "unclean.recovery.strategy: String must be one of: balanced, manual, none, proactive",
    ),
    ("no.such.config", "1", "Unknown topic config name: no.such.config"),
]


@pytest.mark.parametrize(("key", "value", "message"), BAD_CONFIG_MESSAGES)
def test_a_bad_config_is_refused_in_kafkas_words(key: str, value: str, message: str) -> None:
    outcome = create_topics(
        cluster([0]),
        [NewTopic("t", 1, 1, configs={key: value})],
        DEFAULTS,
        validate_only=False,
        new_topic_id=topic_ids(),
    )
    result = outcome.results[0]
    assert (result.error_code, result.error_message) == (ErrorCode.invalid_config, message)


def test_null_config_values_are_named_in_the_refusal() -> None:
    topic = NewTopic("t", 1, 1, configs={"retention.ms": None, "flush.ms": None})
    outcome = create_topics(
        cluster([0]), [topic], DEFAULTS, validate_only=False, new_topic_id=topic_ids()
    )
    assert outcome.results[0].error_message == (
        "Null value not supported for topic configs: flush.ms,retention.ms"
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("min.insync.replicas", " 2 "),
        ("retention.ms", "-1"),
        ("retention.bytes", "-1"),
        ("retention.bytes", "9223372036854775807"),
        ("segment.bytes", "14"),
        ("flush.messages", "1"),
        ("flush.ms", "0"),
        ("unclean.leader.election.enable", "TRUE"),
        ("cleanup.policy", "compact, delete"),
        ("cleanup.policy", "delete"),
        ("min.cleanable.dirty.ratio", "0.01"),
        ("message.timestamp.type", "LogAppendTime"),
        ("max.message.bytes", "+100"),
    ],
)
def test_valid_configs_are_written_verbatim(key: str, value: str) -> None:
    _, records, errors = create(cluster([0]), NewTopic("t", 1, 1, configs={key: value}))
    assert errors == [ErrorCode.none]
    assert ConfigRecord(ConfigResourceType.TOPIC, "t", key, value) in records


def test_min_insync_replicas_above_the_replication_factor_is_accepted() -> None:
    # Kafka accepts it; acks=all producers then get NOT_ENOUGH_REPLICAS.
    topic = NewTopic("t", 1, 1, configs={"min.insync.replicas": "3"})
    assert create_error(cluster([0]), topic) is ErrorCode.none


# --- DeleteTopics -----------------------------------------------------------------------------


def test_delete_by_name_and_by_id_removes_the_topics_and_their_configs() -> None:
    image, _, _ = create(
        cluster([0]),
        NewTopic("a", 2, 1, configs={"retention.ms": "5"}),
        NewTopic("b", 1, 1),
        NewTopic("c", 1, 1),
    )
    b_id = image.topic_ids["b"]
    outcome = delete_topics(image, ["a", b_id])
    assert outcome.records == (RemoveTopicRecord(image.topic_ids["a"]), RemoveTopicRecord(b_id))
    assert [(r.name, r.topic_id, r.error_code) for r in outcome.results] == [
        ("a", image.topic_ids["a"], ErrorCode.none),
        ("b", b_id, ErrorCode.none),
    ]
    after = apply(image, outcome.records)
    assert set(after.topic_ids) == {"c"}
    assert dict(after.topic_configs("a")) == {}


def test_deleting_unknown_topics_gives_kafkas_codes() -> None:
    image, _, _ = create(cluster([0]), NewTopic("a", 1, 1))
    outcome = delete_topics(image, ["nope", UUID(int=12345), UUID(int=0)])
    assert outcome.records == ()
    assert [(r.name, r.error_code) for r in outcome.results] == [
        ("nope", ErrorCode.unknown_topic_or_partition),
        (None, ErrorCode.unknown_topic_id),
        (None, ErrorCode.invalid_request),
    ]


def test_deleting_a_topic_twice_in_one_request_is_invalid() -> None:
    image, _, _ = create(cluster([0]), NewTopic("a", 1, 1), NewTopic("b", 1, 1))
    b_id = image.topic_ids["b"]
    outcome = delete_topics(image, ["a", b_id, "a", b_id])
    assert outcome.records == ()
    assert [r.error_code for r in outcome.results] == [ErrorCode.invalid_request] * 2


def test_a_name_and_its_own_id_delete_the_topic_once() -> None:
    image, _, _ = create(cluster([0]), NewTopic("a", 1, 1))
    a_id = image.topic_ids["a"]
    outcome = delete_topics(image, [a_id, "a"])
    assert outcome.records == (RemoveTopicRecord(a_id),)
    assert [r.error_code for r in outcome.results] == [ErrorCode.none, ErrorCode.invalid_request]


def test_internal_topics_may_be_deleted_as_in_kafka() -> None:
    image, _, _ = create(cluster([0]), NewTopic("__consumer_offsets", 1, 1))
    assert delete_topics(image, ["__consumer_offsets"]).results[0].error_code is ErrorCode.none


def test_delete_then_recreate_gets_a_new_id_and_the_same_placement() -> None:
    image, first, _ = create(cluster(range(3)), NewTopic("t", 3, 2, configs={"flush.ms": "1"}))
    old_id = image.topic_ids["t"]
    image = apply(image, delete_topics(image, ["t"]).records)
    assert image.topic("t") is None
    image, _, errors = create(image, NewTopic("t", 3, 2), first_id=99)
    assert errors == [ErrorCode.none]
    topic = image.topic("t")
    assert topic is not None and topic.topic_id == UUID(int=99) != old_id
    assert dict(image.topic_configs("t")) == {}
    old_layout = [r.replicas for r in first if isinstance(r, PartitionRecord)]
    assert [topic.partitions[p].replicas for p in range(3)] == old_layout


# --- CreatePartitions -------------------------------------------------------------------------


def test_added_partitions_continue_the_topics_placement() -> None:
    brokers = cluster(range(5))
    grown, _, _ = create(brokers, NewTopic("t", 3, 3))
    outcome = create_partitions(grown, [PartitionsIncrease("t", 8)], validate_only=False)
    assert outcome.results[0].error_code is ErrorCode.none
    assert [r.partition_id for r in outcome.records if isinstance(r, PartitionRecord)] == [
        3,
        4,
        5,
        6,
        7,
    ]
    grown = apply(grown, outcome.records)

    at_once, _, _ = create(brokers, NewTopic("t", 8, 3))
    grown_topic, at_once_topic = grown.topic("t"), at_once.topic("t")
    assert grown_topic is not None and at_once_topic is not None
    assert dict(grown_topic.partitions) == dict(at_once_topic.partitions)


def test_partition_counts_that_do_not_grow_are_refused_with_kafkas_messages() -> None:
    image, _, _ = create(cluster([0]), NewTopic("t", 3, 1))
    outcome = create_partitions(image, [PartitionsIncrease("t", 3)], validate_only=False)
    assert (outcome.results[0].error_code, outcome.results[0].error_message) == (
        ErrorCode.invalid_partitions,
        "TopicRecord already has 3 partition(s).",
    )
    outcome = create_partitions(image, [PartitionsIncrease("t", 2)], validate_only=False)
    assert (outcome.results[0].error_code, outcome.results[0].error_message) == (
        ErrorCode.invalid_partitions,
        "The topic t currently has 3 partition(s); 2 would not be an increase.",
    )
    assert outcome.records == ()


def test_adding_partitions_to_an_unknown_or_repeated_topic_is_refused() -> None:
    image, _, _ = create(cluster([0]), NewTopic("t", 1, 1))
    outcome = create_partitions(
        image,
        [PartitionsIncrease("nope", 2), PartitionsIncrease("t", 2), PartitionsIncrease("t", 3)],
        validate_only=False,
    )
    assert [(r.name, r.error_code) for r in outcome.results] == [
        ("nope", ErrorCode.unknown_topic_or_partition),
        ("t", ErrorCode.invalid_request),
    ]
    assert outcome.records == ()


def test_manual_assignments_for_the_new_partitions() -> None:
    image, _, _ = create(cluster(range(3)), NewTopic("t", 1, 2))
    topic_id = image.topic_ids["t"]
    outcome = create_partitions(
        image, [PartitionsIncrease("t", 3, [[2, 0], [1, 2]])], validate_only=False
    )
    assert outcome.records == (
        PartitionRecord(topic_id, 1, (2, 0), (2, 0), 2),
        PartitionRecord(topic_id, 2, (1, 2), (1, 2), 1),
    )


@pytest.mark.parametrize(
    "assignments",
    [
        [[0, 1]],  # one assignment for two new partitions
        [[0, 1], [1, 2], [2, 0]],  # three for two
        [[0], [1]],  # replication factor 1, the topic has 2
        [[0, 9], [1, 2]],  # an unregistered broker
        [[0, 0], [1, 2]],  # a broker twice
        [[0, 1], [3, 4]],  # only fenced replicas
    ],
)
def test_bad_assignments_for_new_partitions_are_refused(assignments: list[list[int]]) -> None:
    image, _, _ = create(cluster(range(5)), NewTopic("t", 1, 2))
    image = cluster_with_fenced(image, [3, 4])
    outcome = create_partitions(
        image, [PartitionsIncrease("t", 3, assignments)], validate_only=False
    )
    assert outcome.results[0].error_code is ErrorCode.invalid_replica_assignment
    assert outcome.records == ()


def test_adding_partitions_needs_enough_usable_brokers() -> None:
    image, _, _ = create(cluster(range(3)), NewTopic("t", 1, 3))
    image = cluster_with_fenced(image, [0])
    outcome = create_partitions(image, [PartitionsIncrease("t", 2)], validate_only=False)
    assert outcome.results[0].error_code is ErrorCode.invalid_replication_factor


def test_create_partitions_validate_only_writes_nothing() -> None:
    image, _, _ = create(cluster(range(2)), NewTopic("t", 1, 2))
    outcome = create_partitions(image, [PartitionsIncrease("t", 4)], validate_only=True)
    assert outcome.records == ()
    assert outcome.results[0].error_code is ErrorCode.none


# --- Bounds on one request (controller.limits) --------------------------------------------------


@pytest.mark.parametrize("validate_only", [False, True])
@pytest.mark.parametrize(
    "topics",
    [
        [NewTopic("big", 999_999, 1)],
        [NewTopic("a", 5_000, 1), NewTopic("b", 5_000, 1), NewTopic("c", 1, 1)],
        # -1 counts as the default (here 10,000), assignments as many as they list.
        [NewTopic("a", -1, 1), NewTopic("b", assignments=[(0, [0])])],
        # A topic refused for another reason still counts, as in Kafka.
        [NewTopic("a", 10_000, 1), NewTopic("a", 1, 1)],
    ],
)
def test_a_create_topics_over_the_partition_bound_is_refused_whole(
    topics: list[NewTopic], validate_only: bool
) -> None:
    defaults = TopicDefaults(num_partitions=MAX_PARTITIONS_PER_REQUEST, replication_factor=1)
    with pytest.raises(OperationTooLargeError) as refused:
        create_topics(cluster([0]), topics, defaults, validate_only=validate_only)
    assert refused.value.message == TOO_MANY_PARTITIONS


def test_a_create_topics_at_the_partition_bound_is_not_refused_by_it() -> None:
    # Invalid counts (0, -2) ask for nothing, as Kafka counts them.
    outcome = create_topics(
        cluster([0]),
        [NewTopic("a", MAX_PARTITIONS_PER_REQUEST - 1, 1), NewTopic("b", 0), NewTopic("c", -2)],
        DEFAULTS,
        validate_only=True,
    )
    assert [result.error_code for result in outcome.results] == [
        ErrorCode.none,
        ErrorCode.invalid_partitions,
        ErrorCode.invalid_partitions,
    ]


@pytest.mark.parametrize("validate_only", [False, True])
@pytest.mark.parametrize(
    "increases",
    [
        [PartitionsIncrease("t", 1_000_000)],
        [PartitionsIncrease("t", MAX_RECORDS_PER_USER_OP + 2)],
        [PartitionsIncrease("t", 6_001), PartitionsIncrease("u", 4_002)],
    ],
)
def test_a_create_partitions_over_the_record_bound_is_refused_whole(
    increases: list[PartitionsIncrease], validate_only: bool
) -> None:
    image, _, _ = create(cluster([0]), NewTopic("t", 1, 1), NewTopic("u", 1, 1))
    with pytest.raises(OperationTooLargeError) as refused:
        create_partitions(image, increases, validate_only=validate_only)
    assert refused.value.message == TOO_MANY_RECORDS


def test_a_create_partitions_at_the_record_bound_is_served() -> None:
    image, _, _ = create(cluster([0]), NewTopic("t", 1, 1), NewTopic("u", 1, 1))
    outcome = create_partitions(
        image,
        # u's refused increase writes nothing, so it takes none of the bound.
        [PartitionsIncrease("t", 6_001), PartitionsIncrease("u", 4_001, [[0]])],
        validate_only=False,
    )
    assert [result.error_code for result in outcome.results] == [
        ErrorCode.none,
        ErrorCode.invalid_replica_assignment,
    ]
    assert len(outcome.records) == 6_000
    outcome = create_partitions(image, [PartitionsIncrease("t", 10_001)], validate_only=False)
    assert len(outcome.records) == MAX_RECORDS_PER_USER_OP


def cluster_with_fenced(image: MetadataImage, broker_ids: Iterable[int]) -> MetadataImage:
    """`image` with these brokers re-registered fenced (a new incarnation)."""
    return apply(
        image,
        [
            RegisterBrokerRecord(
                broker_id=broker_id,
                incarnation_id=UUID(int=1000 + broker_id),
                broker_epoch=image.brokers[broker_id].broker_epoch + 1,
                fenced=True,
            )
            for broker_id in broker_ids
        ],
    )
