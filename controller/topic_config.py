"""The topic config catalogue and the typed configuration of a topic.

The catalogue (`TOPIC_CONFIGS`) is every topic config of Kafka 3.9 / 4.x, as Kafka's LogConfig
defines it: its type, Kafka's default, its validation, and the broker setting that gives every
topic its value (the synonym, `log.retention.ms` for `retention.ms`; none for the tiered storage
ones). Some only exist for Kafka's own machinery (preallocated segments, tiered storage, message
down-conversion): they are accepted, validated, stored and described,
and change nothing here; `remote.storage.enable` is refused as true, as Kafka refuses it
without tiered storage. Values travel
as text, in Kafka's spelling, in requests and in the metadata log's ConfigRecords; validation
(`topic_config_problem`) follows Kafka's ConfigDef, messages included.

`TopicConfig` is a topic's effective configuration, typed: the topic's overrides on top of the
broker-level values (`TopicConfig.resolve`). The metadata image hands one out per topic
(`MetadataImage.topic_config`); controller and brokers read these fields, never the text.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any

from net.record_batch import Compression, TimestampType

_INT32_RANGE = (-(2**31), 2**31 - 1)
_INT64_RANGE = (-(2**63), 2**63 - 1)
_LONG_MAX = 2**63 - 1
# Java's Integer/Long.parseInt after ConfigDef trims the value: Python's int() would also take
# underscores and non-ASCII digits, which Kafka refuses.
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")


class ConfigSource(IntEnum):
    """Where an effective config value comes from (DescribeConfigs' ConfigSource)."""

    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ConfigType(IntEnum):
    """A config's data type, numbered as DescribeConfigs v3+ `ConfigType` is."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5
    DOUBLE = 6
    LIST = 7
    PASSWORD = 9


class UncleanRecoveryStrategy(StrEnum):
    """`unclean.recovery.strategy` (async-storage-and-recovery.txt 5.3.1)."""

    NONE = "none"
    PROACTIVE = "proactive"
    BALANCED = "balanced"
    MANUAL = "manual"


def _limit_or_none(value: str) -> int | None:
    """Kafka spells "no limit" as -1 (retention) or Long.MAX_VALUE (flush, timestamps)."""
    number = int(value)
    return None if number < 0 or number == _LONG_MAX else number


def _boolean(value: str) -> bool:
    return value.lower() == "true"


def _timestamp_type(value: str) -> TimestampType:
    return TimestampType.LOG_APPEND_TIME if value == "LogAppendTime" else TimestampType.CREATE_TIME


def _compression_type(value: str) -> Compression | None:
    """The codec the leader recompresses batches to; None for `producer` (kept as sent)."""
    return None if value == "producer" else _CODECS[value]


_CODECS = {
    "uncompressed": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}


def _gzip_level(value: str) -> str | None:
    # Kafka's GzipCompression.LEVEL_VALIDATOR: Deflater's levels, or its default (-1).
    level = int(value)
    return None if level == -1 or 1 <= level <= 9 else "Value must be between 1 and 9, or -1"


# A Kafka release as MetadataVersion spells it: "2.8", "0.10.2", "3.0-IV1".
_KAFKA_VERSION = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?(-IV[0-9]+)?")


def _message_format_version(value: str) -> str | None:
    return None if _KAFKA_VERSION.fullmatch(value) else f"Version {value} is not a valid version"


def _remote_storage(value: str) -> str | None:
    if value.lower() == "true":
        return (
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
            "with remote log storage."
        )
    return None


def _policies(value: str) -> frozenset[str]:
    return frozenset(item.strip() for item in value.split(","))


@dataclass(frozen=True, slots=True)
class ThrottledReplicas:
    """`leader.replication.throttled.replicas` / `follower.replication.throttled.replicas`:
    the replicas of a topic whose replication the broker-level rates bound, on the leader's
    side or the follower's: every one (`*`) or these (partition, broker) pairs."""

    every_replica: bool = False
    replicas: frozenset[tuple[int, int]] = frozenset()

    def throttles(self, partition_id: int, broker_id: int) -> bool:
        """Whether the replica of `partition_id` on `broker_id` is listed."""
        return self.every_replica or (partition_id, broker_id) in self.replicas


# Kafka's ThrottledReplicaListValidator: every item `partition:broker` (or empty), or `*`.
_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def _throttled_replicas_problem(value: str) -> str | None:
    items = [item.strip() for item in value.split(",")]
    if "".join(items) == "*" or all(_THROTTLED_REPLICA.fullmatch(item) for item in items):
        return None
    return (
        "must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


def _throttled_replicas(value: str) -> ThrottledReplicas:
    items = [item.strip() for item in value.split(",")]
    if "".join(items) == "*":
        return ThrottledReplicas(every_replica=True)
    pairs = (item.split(":") for item in items if item)
    return ThrottledReplicas(replicas=frozenset((int(p), int(b)) for p, b in pairs))


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """One topic config as Kafka's LogConfig defines it: type, default, valid values, and how
    its (valid, trimmed) text reads as the `TopicConfig` field of the same name."""

    type: ConfigType
    default: str
    # The broker setting that gives every topic its value (Kafka's synonym), if there is one.
    broker_synonym: str | None
    parse: Callable[[str], object]
    at_least: int | None = None
    at_most: int | None = None
    choices: frozenset[str] = frozenset()
    # A further check of a value of the right type: why it is refused, or None.
    check: Callable[[str], str | None] | None = None


# The topic configs this broker implements, with Kafka's defaults and validators.
TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = {
    "cleanup.policy": TopicConfigDef(
        ConfigType.LIST,
        "delete",
        "log.cleanup.policy",
        _policies,
        choices=frozenset({"delete", "compact"}),
    ),
    "compression.gzip.level": TopicConfigDef(
        ConfigType.INT, "-1", "compression.gzip.level", int, check=_gzip_level
    ),
    "compression.lz4.level": TopicConfigDef(
        ConfigType.INT, "9", "compression.lz4.level", int, at_least=1, at_most=17
    ),
    "compression.type": TopicConfigDef(
        ConfigType.STRING,
        "producer",
        "compression.type",
        _compression_type,
        choices=frozenset({*_CODECS, "producer"}),
    ),
    "compression.zstd.level": TopicConfigDef(
        ConfigType.INT, "3", "compression.zstd.level", int, at_least=-131072, at_most=22
    ),
    "delete.retention.ms": TopicConfigDef(
        ConfigType.LONG, "86400000", "log.cleaner.delete.retention.ms", int, at_least=0
    ),
    "file.delete.delay.ms": TopicConfigDef(
        ConfigType.LONG, "60000", "log.segment.delete.delay.ms", int, at_least=0
    ),
    "flush.messages": TopicConfigDef(
        ConfigType.LONG,
        str(_LONG_MAX),
        "log.flush.interval.messages",
        _limit_or_none,
        at_least=1,
    ),
    "flush.ms": TopicConfigDef(
        ConfigType.LONG, str(_LONG_MAX), "log.flush.interval.ms", _limit_or_none, at_least=0
    ),
    "follower.replication.throttled.replicas": TopicConfigDef(
        ConfigType.LIST,
        "",
        None,
        _throttled_replicas,
        check=_throttled_replicas_problem,
    ),
    "leader.replication.throttled.replicas": TopicConfigDef(
        ConfigType.LIST,
        "",
        None,
        _throttled_replicas,
        check=_throttled_replicas_problem,
    ),
    "index.interval.bytes": TopicConfigDef(
        ConfigType.INT, "4096", "log.index.interval.bytes", int, at_least=0
    ),
    "local.retention.bytes": TopicConfigDef(
        ConfigType.LONG, "-2", "log.local.retention.bytes", int, at_least=-2
    ),
    "local.retention.ms": TopicConfigDef(
        ConfigType.LONG, "-2", "log.local.retention.ms", int, at_least=-2
    ),
    "max.compaction.lag.ms": TopicConfigDef(
        ConfigType.LONG,
        str(_LONG_MAX),
        "log.cleaner.max.compaction.lag.ms",
        _limit_or_none,
        at_least=1,
    ),
    "max.message.bytes": TopicConfigDef(
        ConfigType.INT, "1048588", "message.max.bytes", int, at_least=0
    ),
    # Removed in Kafka 4.0 (no down-conversion there): accepted for the tools that still set it.
    "message.downconversion.enable": TopicConfigDef(
        ConfigType.BOOLEAN, "true", "log.message.downconversion.enable", _boolean
    ),
    # KIP-937, with Kafka 4's defaults: no bound in the past, one hour in the future.
    "message.timestamp.after.max.ms": TopicConfigDef(
        ConfigType.LONG,
        "3600000",
        "log.message.timestamp.after.max.ms",
        _limit_or_none,
        at_least=0,
    ),
    "message.timestamp.before.max.ms": TopicConfigDef(
        ConfigType.LONG,
        str(_LONG_MAX),
        "log.message.timestamp.before.max.ms",
        _limit_or_none,
        at_least=0,
    ),
    # Removed in Kafka 4.0, and ignored since 3.0 (every batch is written as magic 2).
    "message.format.version": TopicConfigDef(
        ConfigType.STRING,
        "3.0-IV1",
        "log.message.format.version",
        str,
        check=_message_format_version,
    ),
    # Deprecated by KIP-937 and removed in Kafka 4.0; accepted, the two above bound timestamps.
    "message.timestamp.difference.max.ms": TopicConfigDef(
        ConfigType.LONG,
        str(_LONG_MAX),
        "log.message.timestamp.difference.max.ms",
        _limit_or_none,
        at_least=0,
    ),
    "message.timestamp.type": TopicConfigDef(
        ConfigType.STRING,
        "CreateTime",
        "log.message.timestamp.type",
        _timestamp_type,
        choices=frozenset({"CreateTime", "LogAppendTime"}),
    ),
    "min.cleanable.dirty.ratio": TopicConfigDef(
        ConfigType.DOUBLE, "0.5", "log.cleaner.min.cleanable.ratio", float
    ),
    "min.compaction.lag.ms": TopicConfigDef(
        ConfigType.LONG, "0", "log.cleaner.min.compaction.lag.ms", int, at_least=0
    ),
    "min.insync.replicas": TopicConfigDef(
        ConfigType.INT, "1", "min.insync.replicas", int, at_least=1
    ),
    "preallocate": TopicConfigDef(ConfigType.BOOLEAN, "false", "log.preallocate", _boolean),
    "remote.log.copy.disable": TopicConfigDef(ConfigType.BOOLEAN, "false", None, _boolean),
    "remote.log.delete.on.disable": TopicConfigDef(ConfigType.BOOLEAN, "false", None, _boolean),
    "remote.storage.enable": TopicConfigDef(
        ConfigType.BOOLEAN, "false", None, _boolean, check=_remote_storage
    ),
    "retention.bytes": TopicConfigDef(ConfigType.LONG, "-1", "log.retention.bytes", _limit_or_none),
    "retention.ms": TopicConfigDef(
        ConfigType.LONG, "604800000", "log.retention.ms", _limit_or_none, at_least=-1
    ),
    # Kafka 3.x's lower bound (LegacyRecord.RECORD_OVERHEAD_V0), as `log.segment.bytes` has.
    "segment.bytes": TopicConfigDef(
        ConfigType.INT, "1073741824", "log.segment.bytes", int, at_least=14
    ),
    "segment.index.bytes": TopicConfigDef(
        ConfigType.INT, "10485760", "log.index.size.max.bytes", int, at_least=4
    ),
    "segment.jitter.ms": TopicConfigDef(
        ConfigType.LONG, "0", "log.roll.jitter.ms", int, at_least=0
    ),
    "segment.ms": TopicConfigDef(ConfigType.LONG, "604800000", "log.roll.ms", int, at_least=1),
    "unclean.leader.election.enable": TopicConfigDef(
        ConfigType.BOOLEAN, "false", "unclean.leader.election.enable", _boolean
    ),
    # KIP-966's strategy (async-storage-and-recovery.txt 5.3.1), a topic override here too.
    "unclean.recovery.strategy": TopicConfigDef(
        ConfigType.STRING,
        "balanced",
        "unclean.recovery.strategy",
        UncleanRecoveryStrategy,
        choices=frozenset(strategy.value for strategy in UncleanRecoveryStrategy),
    ),
}


def topic_config_problem(name: str, value: str) -> str | None:
    """Why `value` is no valid value of topic config `name`, in Kafka's words (its
    INVALID_CONFIG message); None if it is valid."""
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        return f"Unknown topic config name: {name}"
    problem = _value_problem(definition, value.strip())
    if problem is None:
        return None
    return f"Invalid value {value} for configuration {name}: {problem}"


def _value_problem(definition: TopicConfigDef, value: str) -> str | None:
    """Why `value` (trimmed, as Kafka's ConfigDef trims) is not valid, or None."""
    match definition.type:
        case ConfigType.INT | ConfigType.LONG:
            low, high = _INT32_RANGE if definition.type is ConfigType.INT else _INT64_RANGE
            if not _JAVA_INTEGER.fullmatch(value) or not low <= int(value) <= high:
                return f"Not a number of type {definition.type.name}"
            if definition.at_least is not None and int(value) < definition.at_least:
                return f"Value must be at least {definition.at_least}"
            if definition.at_most is not None and int(value) > definition.at_most:
                return f"Value must be no more than {definition.at_most}"
        case ConfigType.DOUBLE:
            # Kafka's only DOUBLE topic config is a ratio, validated between 0 and 1.
            try:
                number = float(value)
            except ValueError:
                return "Not a number of type DOUBLE"
            if not 0 <= number <= 1:
                return "Value must be between 0 and 1"
        case ConfigType.BOOLEAN:
            if value.lower() not in ("true", "false"):
                return "Expected value to be either true or false"
        case ConfigType.STRING:
            if definition.choices and value not in definition.choices:
                return f"String must be one of: {', '.join(sorted(definition.choices))}"
        case ConfigType.LIST:
            # An empty value or item ("", "delete,") is refused: it names no policy.
            items = [item.strip() for item in value.split(",")]
            if definition.choices and any(item not in definition.choices for item in items):
                return f"List must contain only: {', '.join(sorted(definition.choices))}"
    return None if definition.check is None else definition.check(value)


@dataclass(frozen=True, slots=True)
class TopicConfigEntry:
    """One effective config of a topic, in Kafka's spelling, with where it comes from (as
    CreateTopics v5+ `Configs` and DescribeConfigs report it)."""

    name: str
    value: str
    source: ConfigSource


def effective_topic_configs(
    overrides: Mapping[str, str], broker_values: Mapping[str, str]
) -> tuple[TopicConfigEntry, ...]:
    """Every implemented topic config with its value and source, sorted by name (as Kafka's
    CreateTopics v5+ response and DescribeConfigs list them): the topic's override, else the
    broker's value (`broker_values`, by topic config name), else Kafka's default."""
    entries = []
    for name in sorted(TOPIC_CONFIGS):
        if name in overrides:
            entries.append(
                TopicConfigEntry(name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG)
            )
        elif name in broker_values:
            entries.append(
                TopicConfigEntry(name, broker_values[name], ConfigSource.STATIC_BROKER_CONFIG)
            )
        else:
            entries.append(
                TopicConfigEntry(name, TOPIC_CONFIGS[name].default, ConfigSource.DEFAULT_CONFIG)
            )
    return tuple(entries)


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """A topic's effective configuration, one typed field per catalogue entry (the config's
    name with '_' for '.'). None means no limit where Kafka spells that -1 or Long.MAX_VALUE.

    `unclean_recovery_strategy` is the strategy in effect as KIP-966 maps the older key onto
    it (see `resolve`); whether the cluster runs the recovery manager at all is not a topic's
    to say (`partition_change.partition_config`).
    """

    cleanup_policy: frozenset[str]
    compression_gzip_level: int
    compression_lz4_level: int
    # The codec the leader recompresses appended batches to; None keeps the producer's.
    compression_type: Compression | None
    compression_zstd_level: int
    delete_retention_ms: int
    file_delete_delay_ms: int
    flush_messages: int | None
    flush_ms: int | None
    follower_replication_throttled_replicas: ThrottledReplicas
    leader_replication_throttled_replicas: ThrottledReplicas
    index_interval_bytes: int
    local_retention_bytes: int
    local_retention_ms: int
    max_compaction_lag_ms: int | None
    max_message_bytes: int
    message_downconversion_enable: bool
    message_format_version: str
    message_timestamp_after_max_ms: int | None
    message_timestamp_before_max_ms: int | None
    message_timestamp_difference_max_ms: int | None
    message_timestamp_type: TimestampType
    min_cleanable_dirty_ratio: float
    min_compaction_lag_ms: int
    min_insync_replicas: int
    preallocate: bool
    remote_log_copy_disable: bool
    remote_log_delete_on_disable: bool
    remote_storage_enable: bool
    retention_bytes: int | None
    retention_ms: int | None
    segment_bytes: int
    segment_index_bytes: int
    segment_jitter_ms: int
    segment_ms: int
    unclean_leader_election_enable: bool
    unclean_recovery_strategy: UncleanRecoveryStrategy

    @property
    def compression_level(self) -> int | None:
        """The level the topic sets for its `compression.type` codec (KIP-390); None for the
        codec's default, and for codecs without levels or `producer`."""
        levels = {
            Compression.GZIP: (self.compression_gzip_level, -1),
            Compression.LZ4: (self.compression_lz4_level, 9),
            Compression.ZSTD: (self.compression_zstd_level, 3),
        }
        if self.compression_type not in levels:
            return None
        level, default = levels[self.compression_type]
        return None if level == default else level

    @classmethod
    def resolve(
        cls, topic_overrides: Mapping[str, str], broker_defaults: TopicConfig
    ) -> TopicConfig:
        """`broker_defaults` with the topic's overrides (valid values in Kafka's spelling, by
        topic config name; names outside the catalogue are ignored) on top.

        The unclean recovery strategy, as KIP-966 maps the older key onto it: the topic's
        `unclean.recovery.strategy`, else proactive when the topic sets
        `unclean.leader.election.enable=true`, else the broker's.
        """
        # The catalogue's parsers give each field its type; the dataclass does not check.
        changes: dict[str, Any] = {
            _field_name(name): TOPIC_CONFIGS[name].parse(value.strip())
            for name, value in topic_overrides.items()
            if name in TOPIC_CONFIGS
        }
        if "unclean_recovery_strategy" not in changes and changes.get(
            "unclean_leader_election_enable"
        ):
            changes["unclean_recovery_strategy"] = UncleanRecoveryStrategy.PROACTIVE
        return dataclasses.replace(broker_defaults, **changes) if changes else broker_defaults

    @classmethod
    def of_broker(cls, broker_values: Mapping[str, str]) -> TopicConfig:
        """The broker-level configuration every topic starts from: the broker's values (by
        topic config name, in Kafka's spelling), else Kafka's defaults."""
        return cls.resolve(broker_values, KAFKA_DEFAULTS)


def _field_name(name: str) -> str:
    return name.replace(".", "_")


def _kafka_defaults() -> TopicConfig:
    # Built from the catalogue, so each default is written once (as Kafka's text).
    values: dict[str, Any] = {
        _field_name(name): definition.parse(definition.default)
        for name, definition in TOPIC_CONFIGS.items()
    }
    return TopicConfig(**values)


# Every topic config at Kafka's default.
KAFKA_DEFAULTS = _kafka_defaults()
