"""Unclean recovery (reference/async-storage-and-recovery.txt 5.3, KIP-966): whom to ask, whom
to elect.

Pure: no I/O and no clock. When no clean election is possible (see
`partition_change.needs_unclean_recovery`), the active controller asks replicas for the state
of their logs (GetReplicaLogInfo) and hands the answers here; `decide` says which replica to
elect, or which replicas it still waits for. The rules:

- Which replicas are asked: balanced asks the LastKnownELR (the recovery quorum of 5.3.2), or
  every replica when the LastKnownELR is empty (a partition whose replicas never formed one, e.g.
  RF 1 or the ELR disabled); proactive and manual ask every replica.
- An answer counts only if it comes from a replica of the partition whose broker is unfenced
  and gave the broker epoch it is registered with now: an answer of an earlier incarnation
  describes a log that may since have lost its tail, and a fenced broker cannot lead.
- The best replica has the highest last written leader epoch, then the highest log end offset;
  between equals, the first in replica order. A complete replica, if one answered, is the best
  (5.3.2: it holds every committed record, and any replica with a later epoch or a longer log
  in the latest epoch holds them too).
- balanced elects once every asked replica answered (one that does not keeps the partition
  leaderless); proactive elects the best answer once all answered or once its window is over;
  manual never elects by itself (the operator chooses, `choose_manually`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from controller.broker_lifecycle import (
    BrokerLifecycle,
    TopicPartitionEvent,
)
from controller.image import MetadataImage
from controller.partition_change import (
    BrokerFacts,
    ChangeCause,
    TopicPartition,
    change_record,
    elect_recovered_leader,
    needs_unclean_recovery,
    partition_config,
)
from controller.partition_state import NO_LEADER, PartitionState
from controller.records import MetadataRecord, ReplicaLogState, UncleanRecoveryRecord
from controller.topic_config import UncleanRecoveryStrategy


@dataclass(frozen=True, slots=True)
class RecoveryDecision:
    """`leader`: the replica to elect now, or None. `waiting_for`: the asked replicas without
    a usable answer. `answers`: the usable answers, in replica order."""

    leader: ReplicaLogState | None
    waiting_for: tuple[int, ...]
    answers: tuple[ReplicaLogState, ...]


def replicas_to_ask(state: PartitionState, strategy: UncleanRecoveryStrategy) -> tuple[int, ...]:
    """The replicas whose logs the recovery inspects."""
    if strategy is UncleanRecoveryStrategy.BALANCED and state.last_known_elr:
        return state.last_known_elr
    return state.replicas


def usable_answers(
    state: PartitionState,
    brokers: BrokerFacts,
    broker_epochs: Mapping[int, int],
    answers: Iterable[ReplicaLogState],
) -> tuple[ReplicaLogState, ...]:
    """The answers of unfenced replicas from their current incarnation, in replica order."""
    by_broker = {
        answer.broker_id: answer
        for answer in answers
        if answer.broker_id in brokers.unfenced
        and broker_epochs.get(answer.broker_id) == answer.broker_epoch
    }
    return tuple(by_broker[r] for r in state.replicas if r in by_broker)


def best_replica(
    state: PartitionState, answers: Iterable[ReplicaLogState]
) -> ReplicaLogState | None:
    """The answer with the highest (last written leader epoch, log end offset); the first in
    replica order between equals."""
    order = {broker: index for index, broker in enumerate(state.replicas)}
    return max(
        (answer for answer in answers if answer.broker_id in order),
        key=lambda a: (a.last_written_leader_epoch, a.log_end_offset, -order[a.broker_id]),
        default=None,
    )


def decide(
    state: PartitionState,
    strategy: UncleanRecoveryStrategy,
    brokers: BrokerFacts,
    broker_epochs: Mapping[int, int],
    answers: Iterable[ReplicaLogState],
    *,
    window_over: bool,
) -> RecoveryDecision:
    """What the recovery of a leaderless partition does with the answers received so far.

    `broker_epochs`: each registered broker's current broker epoch. `window_over`: the
    proactive strategy's window (`unclean.recovery.timeout.ms`) has passed since it began.
    """
    asked = replicas_to_ask(state, strategy)
    usable = tuple(
        a for a in usable_answers(state, brokers, broker_epochs, answers) if a.broker_id in asked
    )
    answered = {answer.broker_id for answer in usable}
    waiting_for = tuple(r for r in asked if r not in answered)
    ready = {
        UncleanRecoveryStrategy.BALANCED: not waiting_for,
        UncleanRecoveryStrategy.PROACTIVE: not waiting_for or window_over,
    }.get(strategy, False)
    leader = best_replica(state, usable) if ready else None
    return RecoveryDecision(leader, waiting_for, usable)


def lost_offsets(
    leader: ReplicaLogState, answers: Iterable[ReplicaLogState]
) -> tuple[int, int] | None:
    """The offsets [start, end) that other answering replicas hold beyond the new leader's log
    end, which they will truncate: what the recovery may have lost (replicas that did not
    answer may hold more). None when no answer reaches further."""
    furthest = max((answer.log_end_offset for answer in answers), default=leader.log_end_offset)
    if furthest <= leader.log_end_offset:
        return None
    return leader.log_end_offset, furthest


@dataclass(frozen=True, slots=True)
class PendingRecovery:
    """A leaderless partition that waits for unclean recovery under `strategy`."""

    partition: TopicPartition
    topic_name: str
    state: PartitionState
    strategy: UncleanRecoveryStrategy


@dataclass(frozen=True, slots=True)
class RecoveryOutcome:
    """The records to append (an UncleanRecoveryRecord then a PartitionChangeRecord per elected
    partition; an UncleanRecoveryRecord alone when a partition's missing replicas changed), the
    partition events, and which replicas each still-waiting partition waits for."""

    records: tuple[MetadataRecord, ...]
    events: tuple[TopicPartitionEvent, ...]
    waiting: Mapping[TopicPartition, tuple[int, ...]]


def pending_recoveries(image: MetadataImage, lifecycle: BrokerLifecycle) -> list[PendingRecovery]:
    """Every partition that needs an unclean recovery now, in topic then partition order."""
    facts = lifecycle.broker_facts(image)
    pending = []
    for name in sorted(image.topic_ids):
        topic = image.topics[image.topic_ids[name]]
        config = partition_config(image, name, lifecycle.partition_defaults)
        for partition_id in sorted(topic.partitions):
            state = topic.partitions[partition_id]
            if needs_unclean_recovery(state, facts, config):
                tp = TopicPartition(topic.topic_id, partition_id)
                pending.append(PendingRecovery(tp, name, state, config.unclean_recovery_strategy))
    return pending


def replicas_to_inspect(
    pending: Iterable[PendingRecovery], brokers: BrokerFacts
) -> dict[int, list[TopicPartition]]:
    """The unfenced replicas to ask, by broker (a fenced one's answer could not elect it)."""
    asked: dict[int, list[TopicPartition]] = {}
    for recovery in pending:
        if recovery.strategy is UncleanRecoveryStrategy.MANUAL:
            continue
        for replica in replicas_to_ask(recovery.state, recovery.strategy):
            if replica in brokers.unfenced:
                asked.setdefault(replica, []).append(recovery.partition)
    return asked


def recover(
    image: MetadataImage,
    lifecycle: BrokerLifecycle,
    replica_logs: Mapping[TopicPartition, Sequence[ReplicaLogState]],
    *,
    windows_over: Collection[TopicPartition],
    reported_waiting: Mapping[TopicPartition, tuple[int, ...]],
) -> RecoveryOutcome:
    """One round of automatic unclean recovery on `image` with the answers gathered.

    Each partition that still needs recovery (the image may have moved on since the replicas
    were asked) is decided by `decide`; `windows_over` are the partitions whose proactive
    window has passed; `reported_waiting` what the last rounds recorded each partition waits
    for, so a new UncleanRecoveryRecord is written only when that changes.
    """
    facts = lifecycle.broker_facts(image)
    epochs = {broker_id: r.broker_epoch for broker_id, r in image.brokers.items()}
    records: list[MetadataRecord] = []
    events: list[TopicPartitionEvent] = []
    waiting: dict[TopicPartition, tuple[int, ...]] = {}
    for recovery in pending_recoveries(image, lifecycle):
        if recovery.strategy is UncleanRecoveryStrategy.MANUAL:
            continue
        tp, state = recovery.partition, recovery.state
        decision = decide(
            state,
            recovery.strategy,
            facts,
            epochs,
            replica_logs.get(tp, ()),
            window_over=tp in windows_over,
        )
        config = partition_config(image, recovery.topic_name, lifecycle.partition_defaults)
        change = (
            None
            if decision.leader is None
            else elect_recovered_leader(
                state, decision.leader.broker_id, facts, config, ChangeCause.UNCLEAN_RECOVERY
            )
        )
        if change is not None:
            records.append(
                UncleanRecoveryRecord(
                    tp.topic_id,
                    tp.partition_id,
                    recovery.strategy.value,
                    change.state.leader,
                    decision.answers,
                )
            )
            records.append(change_record(tp, state, change.state))
            events.append(TopicPartitionEvent(tp, change.event))
            continue
        waiting[tp] = decision.waiting_for
        if reported_waiting.get(tp) != decision.waiting_for:
            records.append(
                UncleanRecoveryRecord(
                    tp.topic_id,
                    tp.partition_id,
                    recovery.strategy.value,
                    NO_LEADER,
                    decision.answers,
                    decision.waiting_for,
                )
            )
    return RecoveryOutcome(tuple(records), tuple(events), waiting)


def choose_manually(
    image: MetadataImage,
    lifecycle: BrokerLifecycle,
    partition: TopicPartition,
    leader: int,
    replica_logs: Sequence[ReplicaLogState],
) -> tuple[ErrorCode, str | None, RecoveryOutcome]:
    """An operator's choice of `leader` for a leaderless partition (manual recovery, or any
    strategy's partition the operator settles by hand).

    Refused when the partition is unknown (UNKNOWN_TOPIC_OR_PARTITION), has a leader
    (ELECTION_NOT_NEEDED), `leader` is not one of its replicas (INVALID_REQUEST) or is fenced
    (INELIGIBLE_REPLICA); otherwise elected as an unclean recovery with the answers given.
    """
    empty = RecoveryOutcome((), (), {})
    topic = image.topics.get(partition.topic_id)
    state = None if topic is None else topic.partitions.get(partition.partition_id)
    if topic is None or state is None:
        return ErrorCode.unknown_topic_or_partition, "No such partition.", empty
    if state.has_leader:
        return ErrorCode.election_not_needed, f"The partition is led by {state.leader}.", empty
    facts = lifecycle.broker_facts(image)
    if leader not in state.replicas:
        return ErrorCode.invalid_request, f"Broker {leader} is not a replica.", empty
    if leader not in facts.unfenced:
        return ErrorCode.ineligible_replica, f"Broker {leader} is fenced or unknown.", empty
    config = partition_config(image, topic.name, lifecycle.partition_defaults)
    change = elect_recovered_leader(state, leader, facts, config, ChangeCause.UNCLEAN_RECOVERY)
    assert change is not None
    epochs = {broker_id: r.broker_epoch for broker_id, r in image.brokers.items()}
    answers = usable_answers(state, facts, epochs, replica_logs)
    records = (
        UncleanRecoveryRecord(
            partition.topic_id,
            partition.partition_id,
            UncleanRecoveryStrategy.MANUAL.value,
            leader,
            answers,
        ),
        change_record(partition, state, change.state),
    )
    return (
        ErrorCode.none,
        None,
        RecoveryOutcome(records, (TopicPartitionEvent(partition, change.event),), {}),
    )
