"""Partition reassignment (KIP-455) on the active controller: moving replicas between brokers.

Pure: no I/O and no clock. As Kafka's KRaft controller (ReplicationControlManager's
alterPartitionReassignments and listPartitionReassignments, PartitionReassignmentReplicas,
PartitionReassignmentRevert):

- Starting a move to a target replica list: the target must be non-empty, without duplicates,
  and name registered brokers only (else INVALID_REPLICA_ASSIGNMENT); a registered but fenced
  broker is accepted and the move waits for it. The partition's replicas become the target
  followed by the current replicas not in it; `adding_replicas` is the target minus the current
  replicas, `removing_replicas` the current replicas minus the target. The ISR is untouched:
  the leader adds each new replica to it once caught up (AlterPartition), and the change that
  puts the last target replica in the ISR completes the move
  (`partition_change`, as PartitionChangeBuilder.completeReassignmentIfNeeded). A move that
  needs no new replica (a shrink, a reorder) completes at once.
- A new target while a move is in progress starts from the original replicas (the move is
  reverted, then the new one applied, in one change): replicas that the old move was adding and
  the new one does not want leave; the ISR keeps its members that are still replicas. When
  none would be left (only the abandoned new replicas were in sync) the request is refused
  with INVALID_REPLICA_ASSIGNMENT rather than losing the only complete replicas.
- Cancelling (a null target) reverts to the original replicas: the adding replicas leave the
  replicas, the ISR and the ELR; a leader among them is replaced. When the adding replicas are
  the whole ISR, Kafka's PartitionReassignmentRevert needs an unclean election: allowed only
  with `unclean.leader.election.enable`, else INVALID_REPLICA_ASSIGNMENT. Cancelling a
  partition without a move in progress is NO_REASSIGNMENT_IN_PROGRESS.
- Unknown topics or partitions are UNKNOWN_TOPIC_OR_PARTITION. With
  `allow_replication_factor_change` false (AlterPartitionReassignments v1) a target of another
  size than the original replicas is INVALID_REPLICATION_FACTOR.
- Listing answers every partition with a move in progress, or those of the named partitions
  (unknown ones are left out, as Kafka does).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from controller.broker_lifecycle import BrokerLifecycle, TopicPartitionEvent
from controller.image import MetadataImage, TopicImage
from controller.partition_change import (
    Assignment,
    BrokerFacts,
    ChangeCause,
    PartitionChange,
    PartitionConfig,
    TopicPartition,
    change_record,
    partition_config,
    reassign,
)
from controller.partition_state import PartitionState
from controller.records import MetadataRecord


@dataclass(frozen=True, slots=True)
class ReassignmentOutcome:
    """One partition's answer: an error (with Kafka's kind of message) or the change (None
    when nothing changes)."""

    error: ErrorCode
    message: str | None = None
    change: PartitionChange | None = None


@dataclass(frozen=True, slots=True)
class ReassignmentRequest:
    """One partition of an AlterPartitionReassignments request; `target` None cancels."""

    topic: str
    partition_id: int
    target: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class ReassignmentResult:
    """One partition's answer: `error_message` is None when `error_code` is none."""

    topic: str
    partition_id: int
    error_code: ErrorCode
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ReassignmentsOutcome:
    """The records to append, in order, the answers in request order, and the changes."""

    records: tuple[MetadataRecord, ...]
    results: tuple[ReassignmentResult, ...]
    events: tuple[TopicPartitionEvent, ...]


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    """A partition with a move in progress, as ListPartitionReassignments answers it."""

    topic: str
    partition_id: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


def start(
    state: PartitionState,
    target: Sequence[int],
    registered: Collection[int],
    brokers: BrokerFacts,
    config: PartitionConfig,
    *,
    allow_replication_factor_change: bool = True,
) -> ReassignmentOutcome:
    """Starts moving the partition to the `target` replicas (`registered`: the broker ids of
    the image); the move completes at once when no new replica has to catch up."""
    target = tuple(target)
    if not target:
        return ReassignmentOutcome(
            ErrorCode.invalid_replica_assignment, "The target replica list is empty."
        )
    if len(set(target)) != len(target):
        return ReassignmentOutcome(
            ErrorCode.invalid_replica_assignment,
            f"The target replica list {list(target)} has duplicate broker ids.",
        )
    unknown = [b for b in target if b not in registered]
    if unknown:
        return ReassignmentOutcome(
            ErrorCode.invalid_replica_assignment,
            f"The target replica list names brokers that are not registered: {unknown}.",
        )
    original = Assignment.of(state).original
    if not allow_replication_factor_change and len(target) != len(original):
        return ReassignmentOutcome(
            ErrorCode.invalid_replication_factor,
            f"The target replica list changes the replication factor from {len(original)} "
            f"to {len(target)}, which the request does not allow.",
        )
    removing = tuple(r for r in original if r not in target)
    assignment = Assignment(
        replicas=target + removing,
        adding=tuple(r for r in target if r not in original),
        removing=removing,
    )
    isr = tuple(r for r in state.isr if r in assignment.replicas)
    if state.isr and not isr:
        return ReassignmentOutcome(
            ErrorCode.invalid_replica_assignment,
            "Replacing the reassignment in progress would leave no in-sync replica: only "
            "replicas it was adding are in sync. Wait for it to complete first.",
        )
    change = reassign(state, ChangeCause.REASSIGNMENT_STARTED, assignment, isr, brokers, config)
    return ReassignmentOutcome(ErrorCode.none, None, change)


def cancel(
    state: PartitionState, brokers: BrokerFacts, config: PartitionConfig
) -> ReassignmentOutcome:
    """Cancels the move in progress: back to the original replicas."""
    assignment = Assignment.of(state)
    if not assignment.in_progress:
        return ReassignmentOutcome(
            ErrorCode.no_reassignment_in_progress,
            "No partition reassignment is in progress for this partition.",
        )
    original = Assignment(assignment.original)
    isr = tuple(r for r in state.isr if r not in assignment.adding)
    unclean_leader = None
    if state.isr and not isr:
        # Only replicas being added are in sync: reverting elects one of the original
        # replicas, which may miss acknowledged records (PartitionReassignmentRevert.unclean).
        candidates = [r for r in original.replicas if r in brokers.unfenced]
        if not config.unclean_leader_election_enable or not candidates:
            return ReassignmentOutcome(
                ErrorCode.invalid_replica_assignment,
                "Cancelling the reassignment would require an unclean leader election: only "
                "replicas it is adding are in sync.",
            )
        unclean_leader = candidates[0]
        isr = (unclean_leader,)
    change = reassign(
        state,
        ChangeCause.REASSIGNMENT_CANCELLED,
        original,
        isr,
        brokers,
        config,
        unclean_leader=unclean_leader,
    )
    return ReassignmentOutcome(ErrorCode.none, None, change)


def alter_reassignments(
    image: MetadataImage,
    lifecycle: BrokerLifecycle,
    requests: Sequence[ReassignmentRequest],
    *,
    allow_replication_factor_change: bool = True,
) -> ReassignmentsOutcome:
    """An AlterPartitionReassignmentsRequest: each partition answered in request order, every
    change in the one batch of records. A partition named twice is changed twice, the second
    change computed on the state the first left, so replaying the batch gives what was
    answered."""
    facts = lifecycle.broker_facts(image)
    states: dict[TopicPartition, PartitionState] = {}
    records: list[MetadataRecord] = []
    results: list[ReassignmentResult] = []
    events: list[TopicPartitionEvent] = []
    for asked in requests:
        topic = image.topic(asked.topic)
        found = None if topic is None else topic.partitions.get(asked.partition_id)
        if topic is None or found is None:
            results.append(
                ReassignmentResult(
                    asked.topic,
                    asked.partition_id,
                    ErrorCode.unknown_topic_or_partition,
                    f"No such partition as {asked.topic}-{asked.partition_id}.",
                )
            )
            continue
        tp = TopicPartition(topic.topic_id, asked.partition_id)
        state = states.get(tp, found)
        config = partition_config(image, topic.name, lifecycle.partition_defaults)
        if asked.target is None:
            outcome = cancel(state, facts, config)
        else:
            outcome = start(
                state,
                asked.target,
                image.brokers.keys(),
                facts,
                config,
                allow_replication_factor_change=allow_replication_factor_change,
            )
        if outcome.change is not None:
            states[tp] = outcome.change.state
            records.append(change_record(tp, state, outcome.change.state))
            events.append(TopicPartitionEvent(tp, outcome.change.event))
        results.append(
            ReassignmentResult(asked.topic, asked.partition_id, outcome.error, outcome.message)
        )
    return ReassignmentsOutcome(tuple(records), tuple(results), tuple(events))


def list_reassignments(
    image: MetadataImage, partitions: Sequence[tuple[str, int]] | None
) -> list[OngoingReassignment]:
    """The moves in progress: of every partition (`partitions` None, in topic name then
    partition order), or of the named (topic, partition) pairs that have one, in request
    order."""
    if partitions is None:
        named: Iterator[tuple[TopicImage, int]] = (
            (topic, partition_id)
            for _, topic in sorted((t.name, t) for t in image.topics.values())
            for partition_id in sorted(topic.partitions)
        )
    else:
        named = (
            (topic, partition_id)
            for name, partition_id in dict.fromkeys(partitions)
            if (topic := image.topic(name)) is not None and partition_id in topic.partitions
        )
    ongoing = []
    for topic, partition_id in named:
        state = topic.partitions[partition_id]
        if state.adding_replicas or state.removing_replicas:
            ongoing.append(
                OngoingReassignment(
                    topic.name,
                    partition_id,
                    state.replicas,
                    state.adding_replicas,
                    state.removing_replicas,
                )
            )
    return ongoing


def complete_ready(image: MetadataImage, lifecycle: BrokerLifecycle) -> ReassignmentsOutcome:
    """Completes every move in progress whose target replicas are all in the ISR already.

    Every change completes what it can, so this finds nothing in a log written by this
    controller; a newly active controller runs it once in case an older one did not."""
    facts = lifecycle.broker_facts(image)
    records: list[MetadataRecord] = []
    events: list[TopicPartitionEvent] = []
    for topic in image.topics.values():
        for partition_id, state in topic.partitions.items():
            assignment = Assignment.of(state)
            if not assignment.in_progress or not set(assignment.target) <= set(state.isr):
                continue
            config = partition_config(image, topic.name, lifecycle.partition_defaults)
            change = reassign(
                state, ChangeCause.REASSIGNMENT_COMPLETED, assignment, state.isr, facts, config
            )
            if change is not None:
                tp = TopicPartition(topic.topic_id, partition_id)
                records.append(change_record(tp, state, change.state))
                events.append(TopicPartitionEvent(tp, change.event))
    return ReassignmentsOutcome(tuple(records), (), tuple(events))
