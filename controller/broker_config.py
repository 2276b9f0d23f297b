"""Dynamic broker configs: the broker settings that can change at run time.

Set through IncrementalAlterConfigs on a BROKER resource and kept as ConfigRecords in the
metadata log, as Kafka's KRaft does: the resource named "" holds the cluster-wide defaults, the
one named by a broker id that broker's own values. A broker's value of such a config is its own
dynamic value, else the cluster-wide one, else its static setting (Kafka's precedence
DYNAMIC_BROKER_CONFIG > DYNAMIC_DEFAULT_BROKER_CONFIG > STATIC_BROKER_CONFIG > DEFAULT_CONFIG).

Only the replication throttle's rates are dynamic here; every other broker setting is static.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from controller.image import ConfigResource, MetadataImage
from controller.records import ConfigResourceType
from controller.topic_config import ConfigSource, ConfigType

_LONG_MAX = 2**63 - 1
# Java's Long.parseLong after ConfigDef trims the value.
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")

# Kafka's names, type and default (Long.MAX_VALUE: no throttle) of the dynamic broker configs.
DYNAMIC_BROKER_CONFIGS: Mapping[str, tuple[ConfigType, str]] = {
    "follower.replication.throttled.rate": (ConfigType.LONG, str(_LONG_MAX)),
    "leader.replication.throttled.rate": (ConfigType.LONG, str(_LONG_MAX)),
}


def broker_resource_problem(resource_name: str) -> str | None:
    """Why `resource_name` names no BROKER config resource ("" or a broker id), or None."""
    if resource_name == "" or re.fullmatch(r"[0-9]+", resource_name):
        return None
    return f"Unable to parse broker name as a base 10 number: {resource_name}"


def static_broker_config_problem(name: str) -> str:
    """Why broker config `name`, no dynamic one, cannot be set at run time."""
    return (
        f"Cannot update these configs dynamically: {name} (the dynamic broker configs are "
        f"{', '.join(sorted(DYNAMIC_BROKER_CONFIGS))})"
    )


def dynamic_broker_config_problem(name: str, value: str) -> str | None:
    """Why `value` cannot be set as dynamic broker config `name` (Kafka's INVALID_CONFIG
    message), or None."""
    if name not in DYNAMIC_BROKER_CONFIGS:
        return static_broker_config_problem(name)
    trimmed = value.strip()
    if not _JAVA_INTEGER.fullmatch(trimmed) or not -(2**63) <= int(trimmed) <= _LONG_MAX:
        return f"Invalid value {value} for configuration {name}: Not a number of type LONG"
    if int(trimmed) < 0:
        return f"Invalid value {value} for configuration {name}: Value must be at least 0"
    return None


@dataclass(frozen=True, slots=True)
class DynamicBrokerValue:
    """A dynamic broker config's value in effect for a broker, and where it comes from."""

    value: str
    source: ConfigSource


def dynamic_broker_value(
    image: MetadataImage, broker_id: int, name: str
) -> DynamicBrokerValue | None:
    """Broker `broker_id`'s dynamic value of `name`: its own, else the cluster-wide default;
    None when neither is set (its static setting applies)."""
    own = image.configs.get(ConfigResource(ConfigResourceType.BROKER, str(broker_id)), {})
    if name in own:
        return DynamicBrokerValue(own[name], ConfigSource.DYNAMIC_BROKER_CONFIG)
    cluster = image.configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {})
    if name in cluster:
        return DynamicBrokerValue(cluster[name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    return None
