"""Metadata images built from records, for the controller's tests.

Brokers are registered with broker epoch `epoch_of(broker_id)` unless told otherwise, so a test
can name a stale epoch without looking it up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from uuid import UUID, uuid4

from controller.broker_lifecycle import (
    BrokerLifecycle,
    HeartbeatRequest,
    LifecycleConfig,
    RegistrationRequest,
)
from controller.image import MetadataDelta, MetadataImage
from controller.partition_change import PartitionDefaults
from controller.partition_state import PartitionState
from controller.records import (
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from controller.topic_config import KAFKA_DEFAULTS, UncleanRecoveryStrategy

NOW_MS = 1_000


def epoch_of(broker_id: int) -> int:
    """The broker epoch `broker` registers brokers with by default."""
    return 100 + broker_id


def broker(
    broker_id: int,
    *,
    epoch: int | None = None,
    fenced: bool = False,
    in_controlled_shutdown: bool = False,
) -> RegisterBrokerRecord:
    """A RegisterBrokerRecord, unfenced by default."""
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=UUID(int=broker_id),
        broker_epoch=epoch_of(broker_id) if epoch is None else epoch,
        fenced=fenced,
        in_controlled_shutdown=in_controlled_shutdown,
    )


def topic(
    name: str,
    topic_id: UUID,
    *states: PartitionState,
    configs: Mapping[str, str] | None = None,
) -> list[MetadataRecord]:
    """A topic whose partition i is `states[i]`, with its configuration overrides."""
    records: list[MetadataRecord] = [TopicRecord(name, topic_id)]
    records += [PartitionRecord.of(topic_id, i, state) for i, state in enumerate(states)]
    records += [
        ConfigRecord(ConfigResourceType.TOPIC, name, key, value)
        for key, value in (configs or {}).items()
    ]
    return records


def replay(records: Iterable[MetadataRecord], image: MetadataImage | None = None) -> MetadataImage:
    """`image` (empty by default) with `records` appended at the next offsets."""
    base = MetadataImage.EMPTY if image is None else image
    delta = MetadataDelta(base)
    count = 0
    for record in records:
        delta.replay(record)
        count += 1
    return delta.apply(base.end_offset + count, 1)


def partition_defaults(
    *,
    min_insync_replicas: int = 1,
    unclean_leader_election_enable: bool = False,
    unclean_recovery_strategy: UncleanRecoveryStrategy = UncleanRecoveryStrategy.NONE,
    eligible_leader_replicas_enable: bool = True,
    unclean_recovery_manager_enabled: bool = True,
) -> PartitionDefaults:
    """Cluster-wide partition defaults: Kafka's topic defaults with these values, and no
    unclean recovery strategy unless one is named."""
    return PartitionDefaults(
        dataclasses.replace(
            KAFKA_DEFAULTS,
            min_insync_replicas=min_insync_replicas,
            unclean_leader_election_enable=unclean_leader_election_enable,
            unclean_recovery_strategy=unclean_recovery_strategy,
        ),
        eligible_leader_replicas_enable=eligible_leader_replicas_enable,
        unclean_recovery_manager_enabled=unclean_recovery_manager_enabled,
    )


def lifecycle(image: MetadataImage, defaults: PartitionDefaults | None = None) -> BrokerLifecycle:
    """A freshly active controller's lifecycle state."""
    config = LifecycleConfig(partition_defaults=defaults or partition_defaults())
    return BrokerLifecycle.activate(image, NOW_MS, config)


def restart_unclean(
    image: MetadataImage, brokers: BrokerLifecycle, broker_id: int
) -> MetadataImage:
    """`broker_id` (fenced) registers again without a clean-shutdown marker, then is unfenced.

    It is then unfenced but "unclean until caught up" on every partition it hosts.
    """
    request = RegistrationRequest(broker_id, uuid4())
    registered = brokers.register(image, request, NOW_MS, next_offset=image.end_offset)
    image = replay(registered.change.records, image)
    heartbeat = HeartbeatRequest(broker_id, registered.broker_epoch, image.end_offset)
    unfenced = brokers.heartbeat(image, heartbeat, NOW_MS, next_offset=image.end_offset)
    assert not unfenced.is_fenced
    return replay(unfenced.change.records, image)
