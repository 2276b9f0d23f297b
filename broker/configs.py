"""Configs as a broker sees them: DescribeConfigs answers, and a topic's storage settings.

Pure: functions of the metadata image, this node's settings and the request.

- A topic's configs are every topic config the broker implements, each with its effective
  value and where it comes from: the topic's own override (DYNAMIC_TOPIC_CONFIG), this broker's
  setting of the synonym (`log.segment.bytes` for `segment.bytes`, STATIC_BROKER_CONFIG), or
  Kafka's default (DEFAULT_CONFIG). A topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION.
- A broker's configs are this node's settings, a secret (`admin.token`) sensitive and its value
  withheld. The dynamic broker configs (`controller.broker_config`: the replication throttle's
  rates) take their value from the metadata log when set there (DYNAMIC_BROKER_CONFIG for this
  broker's own, DYNAMIC_DEFAULT_BROKER_CONFIG for the cluster-wide one) and are the only ones
  not read-only. Another broker's id is INVALID_REQUEST (clients send those requests to that
  broker); the empty name lists the cluster-wide dynamic values set.
- Any other resource type is INVALID_REQUEST.
- A topic's replicas store their data with the settings of its typed configuration
  (`topic_log_config`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from controller.broker_config import DYNAMIC_BROKER_CONFIGS
from controller.image import ConfigResource, MetadataImage
from controller.records import ConfigResourceType
from controller.topic_config import (
    TOPIC_CONFIGS,
    ConfigSource,
    ConfigType,
    TopicConfig,
    effective_topic_configs,
)
from controller.topics import TopicDefaults
from net.api_keys import ApiKey
from net.protocol import NO_THROTTLE, field_entity_type, make_entity, response_schema
from storage.log import LogConfig

DESCRIBE_CONFIGS_VERSIONS = (1, 4)


@dataclass(frozen=True, slots=True)
class BrokerConfigEntry:
    """One setting of this node as DescribeConfigs reports it."""

    name: str
    value: str | None
    source: ConfigSource
    config_type: ConfigType
    sensitive: bool = False


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """What DescribeConfigs reports of this broker: its id, the values topics take from its
    settings, and its settings themselves."""

    broker_id: int
    topic_defaults: TopicDefaults
    configs: Sequence[BrokerConfigEntry]


@dataclass(frozen=True, slots=True)
class _Described:
    name: str
    value: str | None
    source: ConfigSource
    config_type: ConfigType
    sensitive: bool
    # (name, value, source) from the effective one down to Kafka's default.
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...]
    read_only: bool = False


class _ResourceError(Exception):
    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def describe_configs_response(
    image: MetadataImage,
    broker: BrokerSettings,
    version: int,
    request: Any,
    refusal: Callable[[int, str], ErrorCode | None] | None = None,
) -> Any:
    """The DescribeConfigsResponse of `version` to `request`, one result per resource asked;
    `refusal(resource type, name)` gives the authorization error of a resource the client
    may not describe (None: it may)."""
    schema = response_schema(ApiKey.DESCRIBE_CONFIGS, version)
    assert schema is not None
    result_type = field_entity_type(schema, "results")
    config_type = field_entity_type(result_type, "configs")
    synonym_type = field_entity_type(config_type, "synonyms")
    results: list[Any] = []
    for resource in request.resources:
        keys = resource.configuration_keys
        error_code, message = ErrorCode.none, None
        entries: list[_Described] = []
        refused = (
            None if refusal is None else refusal(resource.resource_type, resource.resource_name)
        )
        try:
            if refused is not None:
                raise _ResourceError(refused, "Authorization failed.")
            described = _describe(image, broker, resource.resource_type, resource.resource_name)
            entries = [entry for entry in described if keys is None or entry.name in keys]
        except _ResourceError as error:
            error_code, message = error.error_code, str(error)
        configs: tuple[Any, ...] = tuple(
            make_entity(
                config_type,
                name=entry.name,
                value=entry.value,
                read_only=entry.read_only,
                config_source=entry.source,
                is_sensitive=entry.sensitive,
                synonyms=tuple(
                    make_entity(synonym_type, name=name, value=value, source=source)
                    for name, value, source in entry.synonyms
                )
                if request.include_synonyms
                else (),
                config_type=entry.config_type,
                documentation=None,
            )
            for entry in entries
        )
        results.append(
            make_entity(
                result_type,
                error_code=error_code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
            )
        )
    return make_entity(schema, throttle_time=NO_THROTTLE, results=tuple(results))


def _describe(
    image: MetadataImage, broker: BrokerSettings, resource_type: int, resource_name: str
) -> list[_Described]:
    if resource_type == ConfigResourceType.TOPIC:
        if image.topic(resource_name) is None:
            raise _ResourceError(
                ErrorCode.unknown_topic_or_partition, f"Topic {resource_name} does not exist"
            )
        return _topic_configs(image.topic_configs(resource_name), broker.topic_defaults)
    if resource_type == ConfigResourceType.BROKER:
        if resource_name == "":
            cluster = image.configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {})
            return [
                _dynamic_default(name, value)
                for name, value in sorted(cluster.items())
                if name in DYNAMIC_BROKER_CONFIGS
            ]
        if resource_name != str(broker.broker_id):
            raise _ResourceError(
                ErrorCode.invalid_request,
                f"Unexpected broker id, expected {broker.broker_id} or empty string, but received "
                f"{resource_name}",
            )
        return [_broker_config(image, broker.broker_id, entry) for entry in broker.configs]
    raise _ResourceError(ErrorCode.invalid_request, f"Unsupported resource type {resource_type}")


def _dynamic_default(name: str, value: str) -> _Described:
    source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    config_type, default = DYNAMIC_BROKER_CONFIGS[name]
    return _Described(
        name,
        value,
        source,
        config_type,
        False,
        ((name, value, source), (name, default, ConfigSource.DEFAULT_CONFIG)),
    )


def _broker_config(image: MetadataImage, broker_id: int, entry: BrokerConfigEntry) -> _Described:
    """One setting of this broker: a dynamic config takes the metadata log's value when set,
    its synonyms listing every level down to Kafka's default."""
    value = None if entry.sensitive else entry.value
    if entry.name not in DYNAMIC_BROKER_CONFIGS:
        return _Described(
            entry.name,
            value,
            entry.source,
            entry.config_type,
            entry.sensitive,
            ((entry.name, value, entry.source),),
            read_only=True,
        )
    synonyms: list[tuple[str, str | None, ConfigSource]] = []
    own = image.configs.get(ConfigResource(ConfigResourceType.BROKER, str(broker_id)), {})
    if entry.name in own:
        synonyms.append((entry.name, own[entry.name], ConfigSource.DYNAMIC_BROKER_CONFIG))
    cluster = image.configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {})
    if entry.name in cluster:
        synonyms.append(
            (entry.name, cluster[entry.name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        )
    if entry.source is ConfigSource.STATIC_BROKER_CONFIG:
        synonyms.append((entry.name, value, entry.source))
    synonyms.append(
        (entry.name, DYNAMIC_BROKER_CONFIGS[entry.name][1], ConfigSource.DEFAULT_CONFIG)
    )
    name, effective, source = synonyms[0]
    return _Described(name, effective, source, entry.config_type, False, tuple(synonyms))


def _topic_configs(overrides: Mapping[str, str], defaults: TopicDefaults) -> list[_Described]:
    described = []
    for entry in effective_topic_configs(overrides, defaults.configs):
        definition = TOPIC_CONFIGS[entry.name]
        synonyms: list[tuple[str, str | None, ConfigSource]] = []
        if entry.name in overrides:
            synonyms.append((entry.name, overrides[entry.name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        # A config without a broker synonym (tiered storage's) has no broker-level value.
        synonym = definition.broker_synonym
        if synonym is not None and entry.name in defaults.configs:
            synonyms.append(
                (synonym, defaults.configs[entry.name], ConfigSource.STATIC_BROKER_CONFIG)
            )
        if synonym is not None:
            synonyms.append((synonym, definition.default, ConfigSource.DEFAULT_CONFIG))
        described.append(
            _Described(
                entry.name, entry.value, entry.source, definition.type, False, tuple(synonyms)
            )
        )
    return described


def topic_log_config(broker_log_config: LogConfig, topic: TopicConfig) -> LogConfig:
    """The storage settings of a topic's replicas: the topic's configuration, and the broker's
    settings that are no topic config."""
    return dataclasses.replace(
        broker_log_config,
        segment_bytes=topic.segment_bytes,
        segment_ms=topic.segment_ms,
        flush_messages=topic.flush_messages,
        flush_ms=topic.flush_ms,
        retention_ms=topic.retention_ms,
        retention_bytes=topic.retention_bytes,
        max_message_bytes=topic.max_message_bytes,
        message_timestamp_type=topic.message_timestamp_type,
        message_timestamp_before_max_ms=topic.message_timestamp_before_max_ms,
        message_timestamp_after_max_ms=topic.message_timestamp_after_max_ms,
        cleanup_policy=topic.cleanup_policy,
        delete_retention_ms=topic.delete_retention_ms,
        min_cleanable_dirty_ratio=topic.min_cleanable_dirty_ratio,
        index_interval_bytes=topic.index_interval_bytes,
        min_compaction_lag_ms=topic.min_compaction_lag_ms,
        max_compaction_lag_ms=topic.max_compaction_lag_ms,
    )
