"""The topic config catalogue and typed topic configs (controller/topic_config.py), and the
image's typed config per topic."""

from __future__ import annotations

import dataclasses
from uuid import UUID

import pytest

from controller.image import MetadataImage
from controller.partition_state import PartitionState
from controller.records import ConfigRecord, ConfigResourceType, RemoveTopicRecord
from controller.topic_config import (
    KAFKA_DEFAULTS,
    TOPIC_CONFIGS,
    ConfigSource,
    ThrottledReplicas,
    TopicConfig,
    TopicConfigEntry,
    UncleanRecoveryStrategy,
    effective_topic_configs,
    topic_config_problem,
)
from net.record_batch import Compression, TimestampType
from tests.controller.images import replay, topic

ONE = PartitionState(replicas=(1,), isr=(1,), leader=1)


def config_record(name: str, key: str, value: str | None) -> ConfigRecord:
    return ConfigRecord(ConfigResourceType.TOPIC, name, key, value)


# --- the catalogue -------------------------------------------------------------------------------


def test_every_catalogue_entry_is_a_typed_field_and_its_default_is_valid() -> None:
    fields = {field.name for field in dataclasses.fields(TopicConfig)}
    assert fields == {name.replace(".", "_") for name in TOPIC_CONFIGS}
    for name, definition in TOPIC_CONFIGS.items():
        assert topic_config_problem(name, definition.default) is None, name


def test_kafka_defaults_read_as_typed_values() -> None:
    assert (
        TopicConfig(
            cleanup_policy=frozenset({"delete"}),
            compression_gzip_level=-1,
            compression_lz4_level=9,
            compression_type=None,
            compression_zstd_level=3,
            delete_retention_ms=86_400_000,
            file_delete_delay_ms=60_000,
            flush_messages=None,
            flush_ms=None,
            follower_replication_throttled_replicas=ThrottledReplicas(),
            leader_replication_throttled_replicas=ThrottledReplicas(),
            index_interval_bytes=4096,
            local_retention_bytes=-2,
            local_retention_ms=-2,
            max_compaction_lag_ms=None,
            max_message_bytes=1_048_588,
            message_downconversion_enable=True,
            message_format_version="3.0-IV1",
            message_timestamp_after_max_ms=3_600_000,
            message_timestamp_before_max_ms=None,
            message_timestamp_difference_max_ms=None,
            message_timestamp_type=TimestampType.CREATE_TIME,
            min_cleanable_dirty_ratio=0.5,
            min_compaction_lag_ms=0,
            min_insync_replicas=1,
            preallocate=False,
            remote_log_copy_disable=False,
            remote_log_delete_on_disable=False,
            remote_storage_enable=False,
            retention_bytes=None,
            retention_ms=604_800_000,
            segment_bytes=1_073_741_824,
            segment_index_bytes=10_485_760,
            segment_jitter_ms=0,
            segment_ms=604_800_000,
            unclean_leader_election_enable=False,
            unclean_recovery_strategy=UncleanRecoveryStrategy.BALANCED,
        )
        == KAFKA_DEFAULTS
    )


@pytest.mark.parametrize(
    ("name", "synonym"),
    [
        ("compression.type", "compression.type"),
        ("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"),
        ("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"),
        ("segment.index.bytes", "log.index.size.max.bytes"),
        ("index.interval.bytes", "log.index.interval.bytes"),
        ("preallocate", "log.preallocate"),
        ("remote.storage.enable", None),
        ("retention.ms", "log.retention.ms"),
        ("segment.bytes", "log.segment.bytes"),
        ("segment.ms", "log.roll.ms"),
        ("max.message.bytes", "message.max.bytes"),
        ("flush.messages", "log.flush.interval.messages"),
        ("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"),
        ("min.insync.replicas", "min.insync.replicas"),
    ],
)
def test_each_topic_config_names_its_broker_synonym(name: str, synonym: str | None) -> None:
    assert TOPIC_CONFIGS[name].broker_synonym == synonym


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("min.insync.replicas", "0", "Value must be at least 1"),
        ("min.insync.replicas", "1_0", "Not a number of type INT"),
        ("segment.bytes", "2147483648", "Not a number of type INT"),
        ("retention.ms", "9223372036854775808", "Not a number of type LONG"),
        ("retention.ms", "-2", "Value must be at least -1"),
        ("min.cleanable.dirty.ratio", "2", "Value must be between 0 and 1"),
        ("unclean.leader.election.enable", "1", "Expected value to be either true or false"),
        (
            "message.timestamp.type",
            "createtime",
            "String must be one of: CreateTime, LogAppendTime",
        ),
        ("cleanup.policy", "", "List must contain only: compact, delete"),
        (
            "compression.type",
            "brotli",
            "String must be one of: gzip, lz4, producer, snappy, uncompressed, zstd",
        ),
        ("compression.gzip.level", "0", "Value must be between 1 and 9, or -1"),
        ("compression.lz4.level", "18", "Value must be no more than 17"),
        ("compression.zstd.level", "-131073", "Value must be at least -131072"),
        ("max.compaction.lag.ms", "0", "Value must be at least 1"),
        ("min.compaction.lag.ms", "-1", "Value must be at least 0"),
        ("segment.index.bytes", "3", "Value must be at least 4"),
        ("local.retention.ms", "-3", "Value must be at least -2"),
        ("preallocate", "yes", "Expected value to be either true or false"),
        ("message.format.version", "latest", "Version latest is not a valid version"),
        (
            "remote.storage.enable",
            "true",
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
            "with remote log storage.",
        ),
    ],
)
def test_a_bad_value_is_named_with_kafkas_reason(name: str, value: str, problem: str) -> None:
    assert topic_config_problem(name, value) == (
        f"Invalid value {value} for configuration {name}: {problem}"
    )


@pytest.mark.parametrize("value", ["*", " * ", "0:1,1:2", "0:1, 1:2", "", "0:1,"])
def test_throttled_replicas_take_kafkas_list_or_the_wildcard(value: str) -> None:
    for side in ("leader", "follower"):
        name = f"{side}.replication.throttled.replicas"
        assert topic_config_problem(name, value) is None


@pytest.mark.parametrize("value", ["*,0:1", "0", "0:x", "0:1:2", "a:1", "-1:1"])
def test_throttled_replicas_refuse_anything_else_in_kafkas_words(value: str) -> None:
    assert topic_config_problem("leader.replication.throttled.replicas", value) == (
        f"Invalid value {value} for configuration leader.replication.throttled.replicas: "
        "must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


def test_throttled_replicas_read_as_the_pairs_they_list() -> None:
    config = TopicConfig.resolve(
        {
            "leader.replication.throttled.replicas": "0:1, 1:2",
            "follower.replication.throttled.replicas": "*",
        },
        KAFKA_DEFAULTS,
    )
    leader = config.leader_replication_throttled_replicas
    assert leader == ThrottledReplicas(replicas=frozenset({(0, 1), (1, 2)}))
    assert leader.throttles(0, 1) and leader.throttles(1, 2)
    assert not leader.throttles(0, 2) and not leader.throttles(1, 1)
    assert config.follower_replication_throttled_replicas.throttles(7, 9)
    assert not KAFKA_DEFAULTS.leader_replication_throttled_replicas.throttles(0, 1)


def test_unknown_names_and_trimmed_values() -> None:
    assert topic_config_problem("log.retention.ms", "1") == (
        "Unknown topic config name: log.retention.ms"
    )
    # ConfigDef trims before it validates.
    assert topic_config_problem("min.insync.replicas", " 2 ") is None
    assert topic_config_problem("unclean.recovery.strategy", " manual") is None


def test_effective_configs_name_their_source() -> None:
    entries = effective_topic_configs({"retention.ms": "5"}, {"segment.bytes": "4096"})
    assert [entry.name for entry in entries] == sorted(TOPIC_CONFIGS)
    by_name = {entry.name: entry for entry in entries}
    assert by_name["retention.ms"] == TopicConfigEntry(
        "retention.ms", "5", ConfigSource.DYNAMIC_TOPIC_CONFIG
    )
    assert by_name["segment.bytes"] == TopicConfigEntry(
        "segment.bytes", "4096", ConfigSource.STATIC_BROKER_CONFIG
    )
    assert by_name["flush.ms"] == TopicConfigEntry(
        "flush.ms", str(2**63 - 1), ConfigSource.DEFAULT_CONFIG
    )


# --- resolving a topic's typed config ------------------------------------------------------------


def test_overrides_replace_the_broker_defaults_field_by_field() -> None:
    broker = TopicConfig.of_broker({"min.insync.replicas": "2", "retention.ms": "5000"})
    assert (broker.min_insync_replicas, broker.retention_ms) == (2, 5000)
    assert broker.segment_bytes == KAFKA_DEFAULTS.segment_bytes
    config = TopicConfig.resolve(
        {
            "retention.ms": "-1",
            "flush.messages": str(2**63 - 1),
            "max.message.bytes": " 500 ",
            "cleanup.policy": "compact, delete",
            "message.timestamp.type": "LogAppendTime",
            "unclean.leader.election.enable": "TRUE",
            "min.cleanable.dirty.ratio": "0.25",
            "not.a.topic.config": "x",
        },
        broker,
    )
    assert config == dataclasses.replace(
        broker,
        retention_ms=None,
        flush_messages=None,
        max_message_bytes=500,
        cleanup_policy=frozenset({"compact", "delete"}),
        message_timestamp_type=TimestampType.LOG_APPEND_TIME,
        unclean_leader_election_enable=True,
        unclean_recovery_strategy=UncleanRecoveryStrategy.PROACTIVE,
        min_cleanable_dirty_ratio=0.25,
    )
    assert TopicConfig.resolve({}, broker) is broker


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, UncleanRecoveryStrategy.MANUAL),
        ({"unclean.leader.election.enable": "true"}, UncleanRecoveryStrategy.PROACTIVE),
        ({"unclean.leader.election.enable": "false"}, UncleanRecoveryStrategy.MANUAL),
        (
            {"unclean.leader.election.enable": "true", "unclean.recovery.strategy": "balanced"},
            UncleanRecoveryStrategy.BALANCED,
        ),
        ({"unclean.recovery.strategy": " none "}, UncleanRecoveryStrategy.NONE),
    ],
)
def test_the_strategy_maps_the_older_key_as_kip_966_does(
    overrides: dict[str, str], expected: UncleanRecoveryStrategy
) -> None:
    broker = dataclasses.replace(
        KAFKA_DEFAULTS, unclean_recovery_strategy=UncleanRecoveryStrategy.MANUAL
    )
    assert TopicConfig.resolve(overrides, broker).unclean_recovery_strategy is expected


# --- the image's typed config per topic ----------------------------------------------------------


def test_a_topic_without_overrides_has_the_broker_defaults() -> None:
    image = replay(topic("a", UUID(int=1), ONE))
    assert image.topic_config("a", KAFKA_DEFAULTS) is KAFKA_DEFAULTS
    assert image.topic_config("missing", KAFKA_DEFAULTS) is KAFKA_DEFAULTS


def test_typed_configs_are_computed_once_per_change_of_the_topics_overrides() -> None:
    image = replay(
        topic("a", UUID(int=1), ONE, configs={"retention.ms": "1000"})
        + topic("b", UUID(int=2), ONE, configs={"min.insync.replicas": "2"})
    )
    a, b = image.topic_config("a", KAFKA_DEFAULTS), image.topic_config("b", KAFKA_DEFAULTS)
    assert (a.retention_ms, b.min_insync_replicas) == (1000, 2)
    assert image.topic_config("a", KAFKA_DEFAULTS) is a

    changed = replay([config_record("b", "min.insync.replicas", "3")], image)
    # Only the topic whose overrides changed has a new config; the other's is the same object.
    assert changed.topic_config("a", KAFKA_DEFAULTS) is a
    assert changed.topic_config("b", KAFKA_DEFAULTS).min_insync_replicas == 3
    # The older image still answers with its own overrides.
    assert image.topic_config("b", KAFKA_DEFAULTS).min_insync_replicas == 2

    deleted = replay([config_record("b", "min.insync.replicas", None)], changed)
    assert deleted.topic_config("b", KAFKA_DEFAULTS) is KAFKA_DEFAULTS


def test_other_broker_defaults_give_another_config() -> None:
    image = replay(topic("a", UUID(int=1), ONE, configs={"retention.ms": "1000"}))
    broker = TopicConfig.of_broker({"min.insync.replicas": "2"})
    assert image.topic_config("a", KAFKA_DEFAULTS).min_insync_replicas == 1
    config = image.topic_config("a", broker)
    assert (config.min_insync_replicas, config.retention_ms) == (2, 1000)
    # Equal defaults, even as another object, find the config already computed.
    assert image.topic_config("a", dataclasses.replace(broker)) is config


def test_a_topic_created_again_under_its_name_starts_from_its_new_overrides() -> None:
    image = replay(topic("a", UUID(int=1), ONE, configs={"retention.ms": "1000"}))
    assert image.topic_config("a", KAFKA_DEFAULTS).retention_ms == 1000
    removed = replay([RemoveTopicRecord(UUID(int=1))], image)
    assert removed.topic_config("a", KAFKA_DEFAULTS) is KAFKA_DEFAULTS
    again = replay(topic("a", UUID(int=2), ONE, configs={"segment.ms": "5"}), removed)
    config = again.topic_config("a", KAFKA_DEFAULTS)
    assert (config.retention_ms, config.segment_ms) == (KAFKA_DEFAULTS.retention_ms, 5)


def test_a_loaded_snapshot_gives_the_same_typed_configs() -> None:
    image = replay(topic("a", UUID(int=1), ONE, configs={"cleanup.policy": "compact"}))
    loaded = MetadataImage.from_records(image.to_records(), image.end_offset, image.epoch)
    assert loaded == image
    assert loaded.topic_config("a", KAFKA_DEFAULTS) == image.topic_config("a", KAFKA_DEFAULTS)


def test_compression_type_reads_as_the_codec_to_recompress_to() -> None:
    assert KAFKA_DEFAULTS.compression_type is None
    for value, codec in [
        ("uncompressed", Compression.NONE),
        ("gzip", Compression.GZIP),
        ("snappy", Compression.SNAPPY),
        ("lz4", Compression.LZ4),
        ("zstd", Compression.ZSTD),
    ]:
        assert TopicConfig.resolve(
            {"compression.type": value}, KAFKA_DEFAULTS
        ).compression_type == (codec)
    assert topic_config_problem("remote.storage.enable", "false") is None


def test_the_compression_level_is_the_one_set_for_the_topics_codec() -> None:
    def level(overrides: dict[str, str]) -> int | None:
        return TopicConfig.resolve(overrides, KAFKA_DEFAULTS).compression_level

    assert level({"compression.type": "gzip"}) is None  # Kafka's default level
    assert level({"compression.type": "gzip", "compression.gzip.level": "9"}) == 9
    assert level({"compression.type": "zstd", "compression.zstd.level": "-5"}) == -5
    assert level({"compression.type": "lz4", "compression.lz4.level": "12"}) == 12
    assert level({"compression.type": "zstd", "compression.gzip.level": "9"}) is None
    assert level({"compression.type": "snappy"}) is None
    assert level({"compression.gzip.level": "9"}) is None  # producer: never recompressed
