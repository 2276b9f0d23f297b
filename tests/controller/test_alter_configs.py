"""IncrementalAlterConfigs and AlterConfigs on the controller: ConfigRecords for topic
overrides, validated as at creation, each resource on its own (Kafka's
ConfigurationControlManager)."""

from __future__ import annotations

from uuid import UUID

import pytest
from kio.schema.errors import ErrorCode

from controller.image import MetadataImage
from controller.partition_state import PartitionState
from controller.records import ConfigRecord, ConfigResourceType, PartitionChangeRecord
from controller.topics import (
    AlterConfigsResource,
    ConfigChange,
    ConfigOperation,
    incremental_alter_configs,
    replace_configs,
)
from tests.controller.images import replay, topic

TOPIC = int(ConfigResourceType.TOPIC)
BROKER = int(ConfigResourceType.BROKER)


def image() -> MetadataImage:
    return replay(
        topic(
            "orders",
            UUID(int=1),
            PartitionState(replicas=(1,), isr=(1,), leader=1),
            configs={"retention.ms": "1000", "cleanup.policy": "delete"},
        )
    )


def alter(
    *changes: tuple[str, ConfigOperation, str | None],
    name: str = "orders",
    resource_type: int = TOPIC,
    validate_only: bool = False,
) -> tuple[list[ConfigRecord], ErrorCode, str | None]:
    outcome = incremental_alter_configs(
        image(),
        [
            AlterConfigsResource(
                resource_type,
                name,
                [ConfigChange(key, int(op), value) for key, op, value in changes],
            )
        ],
        validate_only=validate_only,
    )
    (result,) = outcome.results
    assert (result.resource_type, result.resource_name) == (resource_type, name)
    if result.error_code is not ErrorCode.none:
        assert outcome.records == ()
    configs = [record for record in outcome.records if isinstance(record, ConfigRecord)]
    assert len(configs) == len(outcome.records)  # IncrementalAlterConfigs writes ConfigRecords
    return configs, result.error_code, result.error_message


def test_set_and_delete_write_config_records_that_replay_into_the_overrides() -> None:
    records, error, _ = alter(
        ("retention.ms", ConfigOperation.DELETE, None),
        ("segment.bytes", ConfigOperation.SET, "1048576"),
    )
    assert error is ErrorCode.none
    assert records == [
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "retention.ms", None),
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "segment.bytes", "1048576"),
    ]
    after = replay(records, image())
    assert dict(after.topic_configs("orders")) == {
        "cleanup.policy": "delete",
        "segment.bytes": "1048576",
    }


def test_an_unchanged_value_and_deleting_what_is_not_set_write_nothing() -> None:
    records, error, _ = alter(
        ("retention.ms", ConfigOperation.SET, "1000"),
        ("flush.ms", ConfigOperation.DELETE, None),
    )
    assert (records, error) == ([], ErrorCode.none)


def test_append_and_subtract_edit_list_configs() -> None:
    records, error, _ = alter(("cleanup.policy", ConfigOperation.APPEND, "compact"))
    assert error is ErrorCode.none
    assert records[0].value == "delete,compact"
    records, error, _ = alter(("cleanup.policy", ConfigOperation.SUBTRACT, "compact,delete"))
    # Nothing left is no policy, which validation refuses as it would at creation.
    assert error is ErrorCode.invalid_config
    records, error, _ = alter(("cleanup.policy", ConfigOperation.SUBTRACT, "compact"))
    assert (records, error) == ([], ErrorCode.none)


def test_append_to_a_non_list_config_is_invalid() -> None:
    _, error, message = alter(("retention.ms", ConfigOperation.APPEND, "5"))
    assert error is ErrorCode.invalid_config and message and "retention.ms" in message


def test_values_are_validated_as_at_creation() -> None:
    assert alter(("no.such.config", ConfigOperation.SET, "1"))[1] is ErrorCode.invalid_config
    _, error, message = alter(("min.insync.replicas", ConfigOperation.SET, "zero"))
    assert error is ErrorCode.invalid_config and message and "min.insync.replicas" in message
    assert alter(("retention.ms", ConfigOperation.SET, None))[1] is ErrorCode.invalid_request


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("retention.ms", ConfigOperation.SET, "-5"),
            (
                ErrorCode.invalid_config,
                "Invalid value -5 for configuration retention.ms: Value must be at least -1",
            ),
        ),
        (
            ("nope", ConfigOperation.SET, "1"),
            (ErrorCode.invalid_config, "Unknown topic config name: nope"),
        ),
        (
            ("retention.ms", ConfigOperation.APPEND, "1"),
            (
                ErrorCode.invalid_config,
                "ConfigRecord value append is not allowed for config key: retention.ms",
            ),
        ),
        (
            ("retention.ms", ConfigOperation.SUBTRACT, "1"),
            (
                ErrorCode.invalid_config,
                "ConfigRecord value subtract is not allowed for config key: retention.ms",
            ),
        ),
        (
            ("cleanup.policy", ConfigOperation.APPEND, "bad"),
            (
                ErrorCode.invalid_config,
                "Invalid value delete,bad for configuration cleanup.policy: "
                "List must contain only: compact, delete",
            ),
        ),
        (
            ("retention.ms", ConfigOperation.SET, None),
            (ErrorCode.invalid_request, "Null value not supported for: retention.ms"),
        ),
    ],
)
def test_refusals_are_in_kafkas_words(
    change: tuple[str, ConfigOperation, str | None], expected: tuple[ErrorCode, str]
) -> None:
    _, error, message = alter(change)
    assert (error, message) == expected


def test_unknown_topics_and_duplicate_keys_are_refused() -> None:
    retention = ("retention.ms", ConfigOperation.SET, "5")
    assert alter(retention, name="missing")[1] is ErrorCode.unknown_topic_or_partition
    assert alter(retention, retention)[1] is ErrorCode.invalid_request
    assert alter(("retention.ms", 9, "5"))[1] is ErrorCode.invalid_request  # type: ignore[arg-type]


def test_each_resource_succeeds_or_fails_on_its_own_and_validate_only_writes_nothing() -> None:
    good = AlterConfigsResource(TOPIC, "orders", [ConfigChange("retention.ms", 0, "5")])
    bad = AlterConfigsResource(TOPIC, "missing", [ConfigChange("retention.ms", 0, "5")])
    outcome = incremental_alter_configs(image(), [good, bad], validate_only=False)
    assert [r.error_code for r in outcome.results] == [
        ErrorCode.none,
        ErrorCode.unknown_topic_or_partition,
    ]
    assert outcome.records == (
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "retention.ms", "5"),
    )
    twice = incremental_alter_configs(image(), [good, good], validate_only=False)
    assert [r.error_code for r in twice.results] == [ErrorCode.invalid_request] * 2
    checked = incremental_alter_configs(image(), [good], validate_only=True)
    assert checked.records == () and checked.results[0].error_code is ErrorCode.none


def test_a_new_min_insync_replicas_clears_the_elrs_chosen_against_the_old_one() -> None:
    states = (
        PartitionState(replicas=(1, 2, 3), isr=(1,), leader=1, elr=(2,), last_known_elr=(3,)),
        PartitionState(replicas=(2, 3, 1), isr=(2, 3, 1), leader=2),
        PartitionState(replicas=(3, 1, 2), isr=(), leader=-1, elr=(), last_known_elr=(1,)),
    )
    before = replay(topic("orders", UUID(int=1), *states))
    change = AlterConfigsResource(TOPIC, "orders", [ConfigChange("min.insync.replicas", 0, "1")])
    outcome = incremental_alter_configs(before, [change], validate_only=False)
    assert outcome.records == (
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "min.insync.replicas", "1"),
        PartitionChangeRecord(UUID(int=1), 0, elr=(), last_known_elr=()),
        PartitionChangeRecord(UUID(int=1), 2, elr=(), last_known_elr=()),
    )
    after = replay(outcome.records, before)
    orders = after.topic("orders")
    assert orders is not None
    assert all(not p.elr and not p.last_known_elr for p in orders.partitions.values())
    # Leaders and ISRs stay; only the partition epoch moves.
    assert [p.leader for p in orders.partitions.values()] == [1, 2, -1]
    # Other configs leave the ELRs alone.
    other = AlterConfigsResource(TOPIC, "orders", [ConfigChange("retention.ms", 0, "5")])
    assert len(incremental_alter_configs(before, [other], validate_only=False).records) == 1


# --- dynamic broker configs ----------------------------------------------------------------------

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"


@pytest.mark.parametrize("name", ["", "1", "42"])
def test_the_throttle_rates_are_dynamic_broker_configs_of_a_broker_or_the_cluster(
    name: str,
) -> None:
    records, error, _ = alter(
        (LEADER_RATE, ConfigOperation.SET, "1048576"),
        (FOLLOWER_RATE, ConfigOperation.SET, " 0 "),
        name=name,
        resource_type=BROKER,
    )
    assert error is ErrorCode.none
    assert records == [
        ConfigRecord(ConfigResourceType.BROKER, name, LEADER_RATE, "1048576"),
        ConfigRecord(ConfigResourceType.BROKER, name, FOLLOWER_RATE, " 0 "),
    ]
    after = replay(records, image())
    deleted, error, _ = alter(
        (LEADER_RATE, ConfigOperation.DELETE, None), name=name, resource_type=BROKER
    )
    # Deleting what this image never had writes nothing; on `after` it removes the value.
    assert (deleted, error) == ([], ErrorCode.none)
    outcome = incremental_alter_configs(
        after,
        [AlterConfigsResource(BROKER, name, [ConfigChange(LEADER_RATE, 1, None)])],
        validate_only=False,
    )
    assert outcome.records == (ConfigRecord(ConfigResourceType.BROKER, name, LEADER_RATE, None),)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            (LEADER_RATE, ConfigOperation.SET, "-1"),
            f"Invalid value -1 for configuration {LEADER_RATE}: Value must be at least 0",
        ),
        (
            (FOLLOWER_RATE, ConfigOperation.SET, "1e6"),
            f"Invalid value 1e6 for configuration {FOLLOWER_RATE}: Not a number of type LONG",
        ),
        (
            (FOLLOWER_RATE, ConfigOperation.SET, "9223372036854775808"),
            f"Invalid value 9223372036854775808 for configuration {FOLLOWER_RATE}: "
            "Not a number of type LONG",
        ),
        (
            ("log.retention.ms", ConfigOperation.SET, "5"),
            "Cannot update these configs dynamically: log.retention.ms (the dynamic broker "
            f"configs are {FOLLOWER_RATE}, {LEADER_RATE})",
        ),
        (
            (LEADER_RATE, ConfigOperation.APPEND, "5"),
            f"ConfigRecord value append is not allowed for config key: {LEADER_RATE}",
        ),
    ],
)
def test_broker_config_refusals_are_clear(
    change: tuple[str, ConfigOperation, str | None], expected: str
) -> None:
    _, error, message = alter(change, name="1", resource_type=BROKER)
    assert (error, message) == (ErrorCode.invalid_config, expected)


def test_a_broker_resource_is_the_cluster_or_a_broker_id() -> None:
    _, error, message = alter(
        (LEADER_RATE, ConfigOperation.SET, "5"), name="broker-1", resource_type=BROKER
    )
    assert (error, message) == (
        ErrorCode.invalid_request,
        "Unable to parse broker name as a base 10 number: broker-1",
    )
    rate = (LEADER_RATE, ConfigOperation.SET, "5")
    assert alter(rate, rate, name="1", resource_type=BROKER)[1] is ErrorCode.invalid_request


def test_alter_configs_replaces_the_whole_set_of_overrides() -> None:
    # AlterConfigs (non-incremental): what it names is the new set; a null value deletes.
    outcome = replace_configs(
        image(),
        [
            AlterConfigsResource(
                TOPIC,
                "orders",
                [
                    ConfigChange("retention.ms", int(ConfigOperation.SET), "2000"),
                    ConfigChange("segment.ms", int(ConfigOperation.DELETE), None),
                ],
            )
        ],
        validate_only=False,
    )
    assert [result.error_code for result in outcome.results] == [ErrorCode.none]
    after = replay(list(outcome.records), image())
    assert dict(after.topic_configs("orders")) == {"retention.ms": "2000"}


def test_alter_configs_with_a_bad_value_changes_nothing() -> None:
    outcome = replace_configs(
        image(),
        [
            AlterConfigsResource(
                TOPIC, "orders", [ConfigChange("retention.ms", int(ConfigOperation.SET), "soon")]
            )
        ],
        validate_only=False,
    )
    assert [result.error_code for result in outcome.results] == [ErrorCode.invalid_config]
    assert outcome.records == ()
