"""DescribeConfigs answers and topic storage settings (broker/configs.py)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from kio.schema.errors import ErrorCode

from broker.configs import (
    BrokerConfigEntry,
    BrokerSettings,
    describe_configs_response,
    topic_log_config,
)
from controller.image import MetadataImage
from controller.records import ConfigRecord, ConfigResourceType, TopicRecord
from controller.topic_config import KAFKA_DEFAULTS, ConfigSource, ConfigType, TopicConfig
from controller.topics import TopicDefaults
from net.api_keys import ApiKey
from net.protocol import field_entity_type, make_entity, request_schema
from net.record_batch import TimestampType
from storage.log import LogConfig

IMAGE = MetadataImage.from_records(
    [
        TopicRecord(name="events", topic_id=UUID(int=7)),
        ConfigRecord(ConfigResourceType.TOPIC, "events", "retention.ms", "1000"),
        ConfigRecord(ConfigResourceType.TOPIC, "events", "cleanup.policy", "delete"),
    ]
)
SETTINGS = BrokerSettings(
    broker_id=2,
    topic_defaults=TopicDefaults(configs={"retention.ms": "5000", "segment.bytes": "4096"}),
    configs=(
        BrokerConfigEntry(
            "admin.token",
            "s3cret",
            ConfigSource.STATIC_BROKER_CONFIG,
            ConfigType.PASSWORD,
            sensitive=True,
        ),
        BrokerConfigEntry(
            "log.segment.bytes", "4096", ConfigSource.STATIC_BROKER_CONFIG, ConfigType.LONG
        ),
        BrokerConfigEntry(
            "follower.replication.throttled.rate",
            str(2**63 - 1),
            ConfigSource.DEFAULT_CONFIG,
            ConfigType.LONG,
        ),
        BrokerConfigEntry(
            "leader.replication.throttled.rate",
            "1000000",
            ConfigSource.STATIC_BROKER_CONFIG,
            ConfigType.LONG,
        ),
        BrokerConfigEntry("num.partitions", "1", ConfigSource.DEFAULT_CONFIG, ConfigType.LONG),
    ),
)


def describe(
    *resources: tuple[int, str, tuple[str, ...] | None],
    version: int = 4,
    synonyms: bool = False,
    image: MetadataImage = IMAGE,
) -> Any:
    schema = request_schema(ApiKey.DESCRIBE_CONFIGS, version)
    assert schema is not None
    resource_type = field_entity_type(schema, "resources")
    request = make_entity(
        schema,
        resources=tuple(
            make_entity(
                resource_type, resource_type=kind, resource_name=name, configuration_keys=keys
            )
            for kind, name, keys in resources
        ),
        include_synonyms=synonyms,
        include_documentation=False,
    )
    return describe_configs_response(image, SETTINGS, version, request)


def by_name(result: Any) -> dict[str, Any]:
    return {config.name: config for config in result.configs}


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_a_topic_lists_every_config_with_its_value_and_source(version: int) -> None:
    (result,) = describe((2, "events", None), version=version).results
    assert result.error_code is ErrorCode.none and result.resource_name == "events"
    configs = by_name(result)
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == (
        "1000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
    )
    assert (configs["segment.bytes"].value, configs["segment.bytes"].config_source) == (
        "4096",
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    assert (configs["segment.ms"].value, configs["segment.ms"].config_source) == (
        "604800000",
        ConfigSource.DEFAULT_CONFIG,
    )
    assert not any(config.read_only or config.is_sensitive for config in result.configs)
    assert [config.synonyms for config in result.configs] == [()] * len(result.configs)
    if version >= 3:
        assert configs["retention.ms"].config_type == ConfigType.LONG
        assert configs["unclean.leader.election.enable"].config_type == ConfigType.BOOLEAN


def test_synonyms_run_from_the_topic_override_to_kafkas_default() -> None:
    (result,) = describe((2, "events", ("retention.ms", "segment.ms")), synonyms=True).results
    configs = by_name(result)
    assert sorted(configs) == ["retention.ms", "segment.ms"]
    assert [(s.name, s.value, s.source) for s in configs["retention.ms"].synonyms] == [
        ("retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.retention.ms", "5000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG),
    ]
    assert [(s.name, s.source) for s in configs["segment.ms"].synonyms] == [
        ("log.roll.ms", ConfigSource.DEFAULT_CONFIG)
    ]


def test_this_broker_lists_its_settings_read_only_and_withholds_secrets() -> None:
    (result,) = describe((4, "2", None)).results
    assert result.error_code is ErrorCode.none
    configs = by_name(result)
    assert configs["log.segment.bytes"].value == "4096"
    assert configs["log.segment.bytes"].read_only
    assert configs["num.partitions"].config_source == ConfigSource.DEFAULT_CONFIG
    token = configs["admin.token"]
    assert (token.value, token.is_sensitive, token.config_type) == (
        None,
        True,
        ConfigType.PASSWORD,
    )


def test_the_throttle_rates_take_the_metadata_logs_dynamic_values() -> None:
    leader, follower = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
    image = MetadataImage.from_records(
        [
            ConfigRecord(ConfigResourceType.BROKER, "", leader, "300"),
            ConfigRecord(ConfigResourceType.BROKER, "", follower, "400"),
            ConfigRecord(ConfigResourceType.BROKER, "2", leader, "200"),
            ConfigRecord(ConfigResourceType.BROKER, "3", follower, "999"),
        ]
    )
    this_broker, cluster = describe(
        (4, "2", None), (4, "", None), synonyms=True, image=image
    ).results
    configs = by_name(this_broker)
    assert (configs[leader].value, configs[leader].config_source) == (
        "200",
        ConfigSource.DYNAMIC_BROKER_CONFIG,
    )
    assert [(s.value, s.source) for s in configs[leader].synonyms] == [
        ("200", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("300", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("1000000", ConfigSource.STATIC_BROKER_CONFIG),
        (str(2**63 - 1), ConfigSource.DEFAULT_CONFIG),
    ]
    # Broker 3's own value is not this broker's.
    assert (configs[follower].value, configs[follower].config_source) == (
        "400",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    assert not configs[leader].read_only and not configs[follower].read_only
    assert configs["log.segment.bytes"].read_only
    assert [(c.name, c.value, c.config_source, c.read_only) for c in cluster.configs] == [
        (follower, "400", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False),
        (leader, "300", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False),
    ]
    # Nothing dynamic set: the static setting, still changeable.
    configs = by_name(describe((4, "2", (leader,))).results[0])
    assert (configs[leader].value, configs[leader].config_source) == (
        "1000000",
        ConfigSource.STATIC_BROKER_CONFIG,
    )


def test_resources_that_cannot_be_described_get_kafkas_errors() -> None:
    results = describe(
        (2, "missing", None), (4, "3", None), (4, "", None), (8, "2", None), (2, "events", ())
    ).results
    assert [r.error_code for r in results] == [
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.invalid_request,
        ErrorCode.none,
        ErrorCode.invalid_request,
        ErrorCode.none,
    ]
    assert all(r.error_message for r in results[:2]) and results[3].error_message
    # Another broker is named in the message; the cluster-wide defaults and an empty key list
    # describe nothing.
    assert "received 3" in results[1].error_message
    assert results[2].configs == () and results[4].configs == ()
    assert [r.resource_name for r in results] == ["missing", "3", "", "2", "events"]


def test_topic_log_config_takes_every_topic_setting_and_keeps_the_brokers_others() -> None:
    broker = LogConfig(segment_bytes=4096, retention_ms=5000, index_interval_bytes=100)
    topic = TopicConfig.resolve(
        {
            "index.interval.bytes": "200",
            "segment.bytes": "2048",
            "retention.ms": "-1",
            "retention.bytes": "1048576",
            "flush.messages": "10",
            "max.message.bytes": "500",
            "cleanup.policy": "compact,delete",
            "message.timestamp.type": "LogAppendTime",
            "message.timestamp.before.max.ms": "60000",
            "delete.retention.ms": "7",
            "min.cleanable.dirty.ratio": "0.25",
            "segment.ms": "99",
            "flush.ms": "30",
        },
        KAFKA_DEFAULTS,
    )
    config = topic_log_config(broker, topic)
    assert config == LogConfig(
        segment_bytes=2048,
        segment_ms=99,
        index_interval_bytes=200,
        flush_messages=10,
        flush_ms=30,
        retention_ms=None,
        retention_bytes=1_048_576,
        max_message_bytes=500,
        message_timestamp_type=TimestampType.LOG_APPEND_TIME,
        message_timestamp_before_max_ms=60_000,
        message_timestamp_after_max_ms=3_600_000,
        cleanup_policy=frozenset({"compact", "delete"}),
        delete_retention_ms=7,
        min_cleanable_dirty_ratio=0.25,
    )
    # Kafka's defaults are the storage layer's own.
    assert topic_log_config(LogConfig(), KAFKA_DEFAULTS) == LogConfig()
