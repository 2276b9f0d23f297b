"""The AlterPartition request on the active controller: leaders shrinking and expanding ISRs.

Pure apart from the broker lifecycle state it updates (which replicas caught up): no I/O and no
clock. A request gives the PartitionChangeRecords to append and each partition's answer. The
rules of one partition's change are `controller.partition_change.alter_partition`'s; this
module checks the request around them as Kafka's ReplicationControlManager.alterPartition does:

- The sender must be registered with the broker epoch it sends, else the whole request is
  refused with STALE_BROKER_EPOCH (ClusterControlManager.checkBrokerEpoch: an unknown broker
  too).
- Per partition: an unknown topic id is UNKNOWN_TOPIC_ID, an unknown partition
  UNKNOWN_TOPIC_OR_PARTITION; then the epoch, leader and ISR checks of `alter_partition`, in
  Kafka's order, and last the eligibility of the new ISR's members, where KIP-903 adds that a
  member named with a broker epoch (not -1) must be registered with that epoch: a replica that
  restarted since the leader saw it fetch is INELIGIBLE_REPLICA.
- A replica the leader adds to the ISR proved it caught up (KIP-966 case E): that is how a
  replica that restarted uncleanly ends its Unclean Exclusion.
- A new ISR equal to the current one (a retry of an applied change) is answered with the
  current state and no record, as Kafka does.
- A partition named twice in one request: the repeats are INVALID_REQUEST (Kafka does not
  check, and would validate both against the same state).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from kio.schema.errors import ErrorCode

from controller import partition_change
from controller.broker_lifecycle import (
    NO_BROKER_EPOCH,
    BrokerLifecycle,
    TopicPartitionEvent,
)
from controller.image import MetadataImage
from controller.partition_change import (
    AlterPartitionRequest,
    BrokerFacts,
    PartitionChange,
    PartitionConfig,
    TopicPartition,
    change_record,
    partition_config,
)
from controller.partition_state import PartitionState
from controller.records import MetadataRecord


@dataclass(frozen=True, slots=True)
class IsrMember:
    """A member of a requested ISR; `broker_epoch` is -1 when the request (v2 and below) has
    none, which skips the KIP-903 broker epoch check."""

    broker_id: int
    broker_epoch: int = NO_BROKER_EPOCH


@dataclass(frozen=True, slots=True)
class PartitionIsrChange:
    """One partition of an AlterPartition request, with the leader's epochs."""

    topic_id: UUID
    partition_id: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[IsrMember, ...]


@dataclass(frozen=True, slots=True)
class AlterPartitionBatch:
    """An AlterPartitionRequest: the sending leader and its partitions."""

    broker_id: int
    broker_epoch: int
    partitions: tuple[PartitionIsrChange, ...]


@dataclass(frozen=True, slots=True)
class PartitionIsrResult:
    """One partition's answer.

    `state` is the partition's state once the records are replayed (the current state when
    nothing changed) if `error_code` is none, else None.
    """

    topic_id: UUID
    partition_id: int
    error_code: ErrorCode
    state: PartitionState | None


@dataclass(frozen=True, slots=True)
class AlterPartitionBatchOutcome:
    """The AlterPartitionResponse and the records to append, in order.

    A top-level `error` other than none leaves `results`, `records` and `events` empty.
    """

    error: ErrorCode
    results: tuple[PartitionIsrResult, ...] = ()
    records: tuple[MetadataRecord, ...] = ()
    events: tuple[TopicPartitionEvent, ...] = ()


def alter_partitions(
    image: MetadataImage, lifecycle: BrokerLifecycle, request: AlterPartitionBatch
) -> AlterPartitionBatchOutcome:
    """An AlterPartitionRequest: each partition answered in request order.

    Marks in `lifecycle` the replicas added to an ISR by an accepted change as caught up.
    """
    sender = image.brokers.get(request.broker_id)
    if sender is None or sender.broker_epoch != request.broker_epoch:
        return AlterPartitionBatchOutcome(ErrorCode.stale_broker_epoch)

    results: list[PartitionIsrResult] = []
    records: list[MetadataRecord] = []
    events: list[TopicPartitionEvent] = []
    seen: set[TopicPartition] = set()
    # Worked out once per request, not per partition: a request may carry thousands.
    facts = lifecycle.broker_facts(image)
    configs: dict[str, PartitionConfig] = {}
    for asked in request.partitions:
        tp = TopicPartition(asked.topic_id, asked.partition_id)
        topic = image.topics.get(tp.topic_id)
        state = None if topic is None else topic.partitions.get(tp.partition_id)
        if topic is None:
            error = ErrorCode.unknown_topic_id
        elif state is None:
            error = ErrorCode.unknown_topic_or_partition
        elif tp in seen:
            error = ErrorCode.invalid_request
        else:
            seen.add(tp)
            config = configs.get(topic.name)
            if config is None:
                config = partition_config(image, topic.name, lifecycle.partition_defaults)
                configs[topic.name] = config
            error, change = _alter(
                image, facts, config, sender=request.broker_id, state=state, asked=asked
            )
            if change is not None:
                records.append(change_record(tp, state, change.state))
                events.append(TopicPartitionEvent(tp, change.event))
                state = change.state
        answered = state if error is ErrorCode.none else None
        results.append(PartitionIsrResult(tp.topic_id, tp.partition_id, error, answered))
    return AlterPartitionBatchOutcome(ErrorCode.none, tuple(results), tuple(records), tuple(events))


def _alter(
    image: MetadataImage,
    facts: BrokerFacts,
    config: PartitionConfig,
    *,
    sender: int,
    state: PartitionState,
    asked: PartitionIsrChange,
) -> tuple[ErrorCode, PartitionChange | None]:
    """One partition's change: its error and the change (None when nothing changes)."""
    new_isr = tuple(member.broker_id for member in asked.new_isr)
    # KIP-903: a member the leader names with another epoch than its registration's is a new
    # incarnation the leader has not seen fetch; as ineligible as a fenced broker, so it is
    # refused exactly where fenced members are.
    restarted = {
        member.broker_id
        for member in asked.new_isr
        if member.broker_epoch != NO_BROKER_EPOCH
        and image.broker_epoch(member.broker_id) != member.broker_epoch
    }
    outcome = partition_change.alter_partition(
        state,
        AlterPartitionRequest(sender, asked.leader_epoch, asked.partition_epoch, new_isr),
        BrokerFacts(facts.unfenced - restarted),
        config,
    )
    if outcome.error is not ErrorCode.none:
        return outcome.error, None
    return ErrorCode.none, outcome.change
