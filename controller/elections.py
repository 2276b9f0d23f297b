"""Leader elections on request (ElectLeaders) and the automatic preferred leader election.

Pure: no I/O and no clock. Each call reads the active controller's latest image and the broker
lifecycle state and gives the PartitionChangeRecords to append, the per-partition answers and
what changed. The partition rules themselves are `controller.partition_change`'s
(`elect_preferred_leader`, `elect_unclean_leader`); this module picks the partitions and
answers as Kafka's KRaft controller does:

- `elect_leaders` is ReplicationControlManager.electLeaders: no partition list means every
  partition of every topic, and then the partitions that need no election are left out of the
  answer; an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION. An UNCLEAN election
  with no clean candidate elects by the unclean recovery rules (`unclean_recovery`) among the
  replicas' logs the caller inspected, not in replica order, and records what it saw
  (an UncleanRecoveryRecord before the change).
- `rebalance_leaders` is the automatic preferred leader election (the design's
  checkLoadBalancing, Kafka's maybeBalancePartitionLeaders): every partition not led by its
  preferred replica moves there when that replica can be elected cleanly now, at most
  `max_elections` per run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from kio.schema.errors import ErrorCode

from controller.broker_lifecycle import (
    BrokerLifecycle,
    TopicPartitionEvent,
)
from controller.image import MetadataImage, TopicImage
from controller.partition_change import (
    BrokerFacts,
    ElectionOutcome,
    PartitionConfig,
    TopicPartition,
    change_record,
    elect_preferred_leader,
    elect_unclean_leader,
    partition_config,
)
from controller.partition_state import PartitionState
from controller.records import MetadataRecord, ReplicaLogState, UncleanRecoveryRecord
from controller.unclean_recovery import best_replica, usable_answers

# The strategy an operator's ElectLeaders UNCLEAN names in its UncleanRecoveryRecord.
UNCLEAN_ELECTION_STRATEGY = "elect_leaders"

# Kafka's default for the automatic preferred leader election (MAX_ELECTIONS_PER_IMBALANCE).
MAX_ELECTIONS_PER_REBALANCE = 1000

_Elect = Callable[[PartitionState, BrokerFacts, PartitionConfig], ElectionOutcome]

# Kafka's default messages of these error codes.
_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.election_not_needed: "Leader election not needed for topic partition.",
    ErrorCode.preferred_leader_not_available: (
        "The preferred leader is not in the ISR or not available."
    ),
    ErrorCode.eligible_leaders_not_available: "Eligible topic partition leaders are not available.",
}


class ElectionType(IntEnum):
    """ElectLeadersRequest's election_type."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True, slots=True)
class ElectionResult:
    """One partition's answer: `error_message` is None exactly when `error_code` is none."""

    topic: str
    partition_id: int
    error_code: ErrorCode
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ElectionsOutcome:
    """The records to append, in order, the answers, and the partition changes they make."""

    records: tuple[MetadataRecord, ...]
    results: tuple[ElectionResult, ...]
    events: tuple[TopicPartitionEvent, ...]


def elect_leaders(
    image: MetadataImage,
    lifecycle: BrokerLifecycle,
    election_type: ElectionType,
    partitions: Sequence[tuple[str, int]] | None,
    replica_logs: Mapping[TopicPartition, Sequence[ReplicaLogState]] | None = None,
) -> ElectionsOutcome:
    """An ElectLeadersRequest: elect the leaders of `partitions`, (topic name, partition id).

    Answers each distinct partition once, in request order (a repeated one is answered where
    it first appears). `partitions` None means every partition, in topic name then partition
    order, and leaves out the ones answered ELECTION_NOT_NEEDED, as Kafka does.
    `replica_logs`: for an UNCLEAN election, the replicas' answers to GetReplicaLogInfo of
    the partitions that may need an unclean leader (`unclean_candidates`).
    """
    elect = (
        elect_preferred_leader if election_type is ElectionType.PREFERRED else elect_unclean_leader
    )
    batch = _Elections(image, lifecycle, replica_logs or {})
    if partitions is None:
        for topic, partition_id, state in _every_partition(image):
            error = batch.elect(topic, partition_id, state, elect)
            if error is not ErrorCode.election_not_needed:
                batch.answer(topic.name, partition_id, error)
        return batch.outcome()

    for topic_name, partition_id in dict.fromkeys(partitions):
        batch.elect_named(topic_name, partition_id, elect)
    return batch.outcome()


def unclean_candidates(
    image: MetadataImage, lifecycle: BrokerLifecycle, partitions: Sequence[tuple[str, int]] | None
) -> dict[int, list[TopicPartition]]:
    """For an UNCLEAN ElectLeaders of `partitions` (None: all): the unfenced replicas to ask
    for their logs, by broker, of each leaderless partition with no clean candidate."""
    facts = lifecycle.broker_facts(image)
    asked: dict[int, list[TopicPartition]] = {}
    wanted = None if partitions is None else set(partitions)
    for topic, partition_id, state in _every_partition(image):
        if wanted is not None and (topic.name, partition_id) not in wanted:
            continue
        if state.has_leader:
            continue
        config = partition_config(image, topic.name, lifecycle.partition_defaults)
        if elect_unclean_leader(state, facts, config).error is ErrorCode.none:
            continue  # a clean election is possible
        for replica in state.replicas:
            if replica in facts.unfenced:
                asked.setdefault(replica, []).append(TopicPartition(topic.topic_id, partition_id))
    return asked


def rebalance_leaders(
    image: MetadataImage,
    lifecycle: BrokerLifecycle,
    max_elections: int = MAX_ELECTIONS_PER_REBALANCE,
) -> ElectionsOutcome:
    """The automatic preferred leader election: one run of it.

    Moves leadership to the preferred replica of every partition led by another replica (or
    by none) where `elect_preferred_leader` succeeds now, in topic name then partition order,
    at most `max_elections` of them; the caller runs it again for the rest. The results list
    only the elected partitions.
    """
    batch = _Elections(image, lifecycle)
    for topic, partition_id, state in _every_partition(image):
        if len(batch.results) >= max_elections:
            break
        if state.leader == state.preferred_leader:
            continue
        if batch.elect(topic, partition_id, state, elect_preferred_leader) is ErrorCode.none:
            batch.answer(topic.name, partition_id, ErrorCode.none)
    return batch.outcome()


def _every_partition(image: MetadataImage) -> Iterator[tuple[TopicImage, int, PartitionState]]:
    for name in sorted(image.topic_ids):
        topic = image.topics[image.topic_ids[name]]
        for partition_id in sorted(topic.partitions):
            yield topic, partition_id, topic.partitions[partition_id]


class _Elections:
    """The records, answers and events of one call."""

    def __init__(
        self,
        image: MetadataImage,
        lifecycle: BrokerLifecycle,
        replica_logs: Mapping[TopicPartition, Sequence[ReplicaLogState]] | None = None,
    ) -> None:
        self._image = image
        self._lifecycle = lifecycle
        self._replica_logs = replica_logs or {}
        self.records: list[MetadataRecord] = []
        self.results: list[ElectionResult] = []
        self.events: list[TopicPartitionEvent] = []

    def elect(
        self, topic: TopicImage, partition_id: int, state: PartitionState, elect: _Elect
    ) -> ErrorCode:
        """Runs `elect` on the partition and keeps its change, if any; its error code."""
        tp = TopicPartition(topic.topic_id, partition_id)
        config = partition_config(self._image, topic.name, self._lifecycle.partition_defaults)
        facts = self._lifecycle.broker_facts(self._image)
        answers: tuple[ReplicaLogState, ...] = ()
        if elect is elect_unclean_leader:
            epochs = {b: r.broker_epoch for b, r in self._image.brokers.items()}
            answers = usable_answers(state, facts, epochs, self._replica_logs.get(tp, ()))
            best = best_replica(state, answers)
            outcome = elect_unclean_leader(
                state, facts, config, None if best is None else best.broker_id
            )
        else:
            outcome = elect(state, facts, config)
        if outcome.change is not None:
            if outcome.change.event.potential_data_loss:
                self.records.append(
                    UncleanRecoveryRecord(
                        tp.topic_id,
                        partition_id,
                        UNCLEAN_ELECTION_STRATEGY,
                        outcome.change.state.leader,
                        answers,
                    )
                )
            self.records.append(change_record(tp, state, outcome.change.state))
            self.events.append(TopicPartitionEvent(tp, outcome.change.event))
        return outcome.error

    def elect_named(self, topic_name: str, partition_id: int, elect: _Elect) -> None:
        """Runs `elect` on a requested partition, which may not exist, and answers it."""
        topic = self._image.topic(topic_name)
        state = None if topic is None else topic.partitions.get(partition_id)
        if topic is None:
            error, message = ErrorCode.unknown_topic_or_partition, f"No such topic as {topic_name}."
        elif state is None:
            error = ErrorCode.unknown_topic_or_partition
            message = f"No such partition as {topic_name}-{partition_id}."
        else:
            error, message = self.elect(topic, partition_id, state, elect), None
        self.answer(topic_name, partition_id, error, message)

    def answer(
        self, topic: str, partition_id: int, error: ErrorCode, message: str | None = None
    ) -> None:
        if message is None and error is not ErrorCode.none:
            message = _MESSAGES.get(error, error.name)
        self.results.append(ElectionResult(topic, partition_id, error, message))

    def outcome(self) -> ElectionsOutcome:
        return ElectionsOutcome(tuple(self.records), tuple(self.results), tuple(self.events))
