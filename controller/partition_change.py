"""The controller's partition state machine: ISR, ELR, LastKnownELR and leader elections.

Pure functions, no I/O and no clock: each takes a `PartitionState`, the cluster facts it needs
(`BrokerFacts`) and the partition's effective configuration (`PartitionConfig`, which
`partition_config` derives from the topic's typed config and the cluster's switches), and
returns a `PartitionChange` (the new state and a `PartitionEvent` describing it), or None when
nothing changes. The controller turns a change into a PartitionChangeRecord of the metadata log
(`change_record`).

The rules, from reference/async-storage-and-recovery.txt (5.2.1 cases A-G, 5.3) and the
replication designs (leader election, ISR changes, preferred replica), as Kafka's KRaft
controller implements them:

- Fencing a broker removes it from the ISR (and from leadership); an ISR member that leaves
  while the new ISR is below MinISR joins the ELR (cases A, C), one that leaves an ISR still at
  MinISR or above does not (cases D, F). With the ELR enabled the ISR may become empty (5.3.3
  step 5). With it disabled the ISR keeps its last member even when that member is fenced
  (Kafka before KIP-966): it is the only replica known to hold every committed record.
- An ISR at MinISR or above clears the ELR and the LastKnownELR (case G): the high watermark can
  advance again, so the removed replicas have lost their completeness guarantee.
- A broker that registers without a clean-shutdown epoch leaves every ISR without joining the
  ELR, and leaves every ELR for the LastKnownELR (5.2 "Unclean Exclusion", 5.3.3 steps 6-8).
  While `BrokerFacts.unclean` lists it, it cannot lead, join the ISR or join the ELR.
- Leader election (online): keep the current leader while it is still an unfenced ISR member;
  otherwise the first unfenced ISR member in replica order (so the preferred replica when it
  qualifies); with an empty ISR the first unfenced ELR member, which moves to the ISR (case B).
  With no candidate: NO_LEADER, or, only when `unclean_recovery_strategy` is none and
  `unclean_leader_election_enable` is set, the first unfenced replica (a potential data-loss
  event, ISR reset to that leader, ELR and LastKnownELR cleared).
- A reassignment (KIP-455, `controller.reassignment` starts and cancels them) completes within
  whichever change first has every target replica (the replicas not being removed) in the new
  ISR, as Kafka's PartitionChangeBuilder.completeReassignmentIfNeeded does: the replicas become
  the target, the removed replicas leave the ISR, the ELR and the LastKnownELR, and a leader
  that was removed is replaced by the first clean candidate in target order.
- Every leader change bumps `leader_epoch`; every change at all bumps `partition_epoch`.
- All sets are kept in replica order, so equal memberships are equal tuples; no set ever holds
  a broker that is not a replica.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple
from uuid import UUID

from kio.schema.errors import ErrorCode

from controller.image import MetadataImage
from controller.partition_state import NO_LEADER, PartitionState
from controller.records import PartitionChangeRecord
from controller.topic_config import KAFKA_DEFAULTS, TopicConfig, UncleanRecoveryStrategy


@dataclass(frozen=True, slots=True)
class BrokerFacts:
    """What the controller knows of the brokers when it changes a partition.

    `unfenced`: registered and unfenced brokers; any other broker id is fenced or unknown.
    `unclean`: brokers that registered without a clean-shutdown epoch and have not caught up
    yet (the caller decides when they have); excluded from leadership, the ISR and the ELR.
    """

    unfenced: frozenset[int]
    unclean: frozenset[int] = frozenset()

    def can_lead_cleanly(self, broker: int) -> bool:
        """Whether the broker may be elected from the ISR or ELR, or added to the ISR."""
        return broker in self.unfenced and broker not in self.unclean

    def fencing(self, broker: int) -> BrokerFacts:
        """These facts once `broker` is fenced."""
        return BrokerFacts(self.unfenced - {broker}, self.unclean)

    def unfencing(self, broker: int) -> BrokerFacts:
        """These facts once `broker` is unfenced."""
        return BrokerFacts(self.unfenced | {broker}, self.unclean)


class TopicPartition(NamedTuple):
    """A partition, by topic id and partition index."""

    topic_id: UUID
    partition_id: int


@dataclass(frozen=True, slots=True)
class PartitionConfig:
    """The partition's effective configuration (topic overrides applied).

    `unclean_recovery_strategy` is the effective one (`partition_config`);
    `unclean_recovery_manager_enabled` is the cluster's switch it was resolved under.
    """

    min_insync_replicas: int = 1
    eligible_leader_replicas_enable: bool = True
    unclean_leader_election_enable: bool = False
    unclean_recovery_strategy: UncleanRecoveryStrategy = UncleanRecoveryStrategy.NONE
    unclean_recovery_manager_enabled: bool = True


@dataclass(frozen=True, slots=True)
class PartitionDefaults:
    """The cluster-wide side of every partition's configuration: the broker-level topic
    configs (`topics`, which a topic's overrides replace) and KIP-966's cluster switches."""

    topics: TopicConfig = KAFKA_DEFAULTS
    eligible_leader_replicas_enable: bool = True
    unclean_recovery_manager_enabled: bool = True


def partition_config(
    image: MetadataImage, topic_name: str, defaults: PartitionDefaults
) -> PartitionConfig:
    """The effective configuration of the partitions of topic `topic_name` in `image`.

    The unclean recovery strategy is the topic's (`TopicConfig.resolve` maps
    `unclean.leader.election.enable` onto it as KIP-966 does), or none with the recovery
    manager disabled: `unclean.leader.election.enable` alone decides then, as before KIP-966.
    """
    topic = image.topic_config(topic_name, defaults.topics)
    return PartitionConfig(
        min_insync_replicas=topic.min_insync_replicas,
        eligible_leader_replicas_enable=defaults.eligible_leader_replicas_enable,
        unclean_leader_election_enable=topic.unclean_leader_election_enable,
        unclean_recovery_strategy=topic.unclean_recovery_strategy
        if defaults.unclean_recovery_manager_enabled
        else UncleanRecoveryStrategy.NONE,
        unclean_recovery_manager_enabled=defaults.unclean_recovery_manager_enabled,
    )


def change_record(
    tp: TopicPartition, old: PartitionState, new: PartitionState
) -> PartitionChangeRecord:
    """The PartitionChangeRecord that turns `old` into `new` when replayed.

    Only changed fields are set; the leader is set exactly when the leader epoch moved, since
    replaying a leader bumps the leader epoch (and any change bumps the partition epoch).
    """

    def diff(before: tuple[int, ...], after: tuple[int, ...]) -> tuple[int, ...] | None:
        return None if before == after else after

    return PartitionChangeRecord(
        topic_id=tp.topic_id,
        partition_id=tp.partition_id,
        isr=diff(old.isr, new.isr),
        leader=new.leader if new.leader_epoch != old.leader_epoch else None,
        replicas=diff(old.replicas, new.replicas),
        removing_replicas=diff(old.removing_replicas, new.removing_replicas),
        adding_replicas=diff(old.adding_replicas, new.adding_replicas),
        elr=diff(old.elr, new.elr),
        last_known_elr=diff(old.last_known_elr, new.last_known_elr),
    )


class ChangeCause(StrEnum):
    """What asked for the change."""

    BROKER_FENCED = "broker_fenced"
    BROKER_UNFENCED = "broker_unfenced"
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    UNCLEAN_REGISTRATION = "unclean_registration"
    ALTER_PARTITION = "alter_partition"
    PREFERRED_ELECTION = "preferred_election"
    UNCLEAN_ELECTION = "unclean_election"
    UNCLEAN_RECOVERY = "unclean_recovery"
    REASSIGNMENT_STARTED = "reassignment_started"
    REASSIGNMENT_CANCELLED = "reassignment_cancelled"
    # A newly active controller completes a move an older one left ready.
    REASSIGNMENT_COMPLETED = "reassignment_completed"


class Election(StrEnum):
    """Where a newly elected leader came from."""

    ISR = "isr"
    ELR = "elr"
    # Any unfenced replica: the new leader may miss committed records.
    UNCLEAN = "unclean"


@dataclass(frozen=True, slots=True)
class PartitionEvent:
    """The description of one change, for the event log and the admin API.

    `election` is None when no new leader was chosen (the leader stayed, or became NO_LEADER).
    `needs_unclean_recovery`: the partition is leaderless and the configured unclean recovery
    strategy applies to it (see `needs_unclean_recovery`). `reassignment_completed`: the
    change completed a reassignment; `replicas`, `adding_replicas` and `removing_replicas` are
    the partition's after the change; `joined_isr`: the replicas a reassignment adds that
    joined the ISR in the change.
    """

    cause: ChangeCause
    old_leader: int
    new_leader: int
    leader_epoch: int
    partition_epoch: int
    election: Election | None
    potential_data_loss: bool
    needs_unclean_recovery: bool
    reassignment_completed: bool = False
    replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    joined_isr: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Assignment:
    """A partition's replica assignment: its replicas and the reassignment in progress.

    While `adding` or `removing` is non-empty a reassignment is in progress: `replicas` is
    the target followed by the replicas being removed (KIP-455).
    """

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @classmethod
    def of(cls, state: PartitionState) -> Assignment:
        return cls(state.replicas, state.adding_replicas, state.removing_replicas)

    @property
    def in_progress(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        """The replicas once the reassignment completes."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        """The replicas before the reassignment began."""
        return tuple(r for r in self.replicas if r not in self.adding)


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """A new partition state and what happened."""

    state: PartitionState
    event: PartitionEvent


@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    """One partition of an AlterPartition request, as sent by the partition's leader."""

    broker_id: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AlterPartitionOutcome:
    """The answer to an AlterPartition: an error code and, when it changed, the new state."""

    error: ErrorCode
    change: PartitionChange | None = None


@dataclass(frozen=True, slots=True)
class ElectionOutcome:
    """The answer to an ElectLeaders request for one partition."""

    error: ErrorCode
    change: PartitionChange | None = None


def fence_broker(
    state: PartitionState, broker: int, brokers: BrokerFacts, config: PartitionConfig
) -> PartitionChange | None:
    """The controller fences `broker` (missed heartbeats, or a new incarnation registered).

    It leaves the ISR (cases A, C, D) and, if it led, a new leader is elected (case B when the
    candidate comes from the ELR). ELR members stay there while fenced: that is their purpose.
    """
    brokers = brokers.fencing(broker)
    return _change(
        state,
        ChangeCause.BROKER_FENCED,
        brokers,
        config,
        target_isr=[r for r in state.isr if r != broker],
    )


def unfence_broker(
    state: PartitionState, broker: int, brokers: BrokerFacts, config: PartitionConfig
) -> PartitionChange | None:
    """`broker` is unfenced: a leaderless partition may now elect it (case B).

    It does not rejoin the ISR here: only the leader can tell it has caught up (case E).
    """
    return _change(state, ChangeCause.BROKER_UNFENCED, brokers.unfencing(broker), config, state.isr)


def shut_down_broker(
    state: PartitionState, broker: int, brokers: BrokerFacts, config: PartitionConfig
) -> PartitionChange | None:
    """`broker` is in controlled shutdown: it hands its leaderships over and leaves the ISR.

    The same moves as `fence_broker` (Kafka's controlled shutdown removes the broker from the
    ISRs and elects other leaders the same way), with its own cause: the broker is still
    running and flushes its logs before it stops, so it stays clean and, when the ISR drops
    below MinISR, joins the ELR as a complete replica (cases A, C).
    """
    brokers = brokers.fencing(broker)
    return _change(
        state,
        ChangeCause.CONTROLLED_SHUTDOWN,
        brokers,
        config,
        target_isr=[r for r in state.isr if r != broker],
    )


def register_unclean_broker(
    state: PartitionState, broker: int, brokers: BrokerFacts, config: PartitionConfig
) -> PartitionChange | None:
    """`broker` registered without a clean-shutdown epoch ("Unclean Exclusion", 5.2).

    It is fenced until caught up, leaves the ISR without joining the ELR, and an ELR member
    moves to the LastKnownELR (5.3.3 steps 7, 8). With the ELR disabled this is a plain fence,
    as in Kafka, which has no other use for the unclean-shutdown flag there.
    """
    brokers = BrokerFacts(brokers.unfenced - {broker}, brokers.unclean | {broker})
    return _change(
        state,
        ChangeCause.UNCLEAN_REGISTRATION,
        brokers,
        config,
        target_isr=[r for r in state.isr if r != broker],
    )


def alter_partition(
    state: PartitionState,
    request: AlterPartitionRequest,
    brokers: BrokerFacts,
    config: PartitionConfig,
) -> AlterPartitionOutcome:
    """The leader asks to shrink (case F) or expand (case E, then G) the ISR.

    Validated in the order of Kafka's controller (ReplicationControlManager): epochs ahead of
    ours mean we are not the active controller (NOT_CONTROLLER); a stale leader epoch is
    FENCED_LEADER_EPOCH; a sender that is not the leader is INVALID_REQUEST; a stale partition
    epoch is INVALID_UPDATE_VERSION; an ISR with duplicates, non-replicas or without the leader
    is INVALID_REQUEST; fenced, unknown or unclean members are INELIGIBLE_REPLICA.
    """
    if request.leader_epoch > state.leader_epoch or request.partition_epoch > state.partition_epoch:
        return AlterPartitionOutcome(ErrorCode.not_controller)
    if request.leader_epoch < state.leader_epoch:
        return AlterPartitionOutcome(ErrorCode.fenced_leader_epoch)
    if request.broker_id != state.leader:
        return AlterPartitionOutcome(ErrorCode.invalid_request)
    if request.partition_epoch < state.partition_epoch:
        return AlterPartitionOutcome(ErrorCode.invalid_update_version)
    new_isr = request.new_isr
    if (
        len(set(new_isr)) != len(new_isr)
        or not set(new_isr) <= set(state.replicas)
        or state.leader not in new_isr
    ):
        return AlterPartitionOutcome(ErrorCode.invalid_request)
    if not all(brokers.can_lead_cleanly(r) for r in new_isr):
        return AlterPartitionOutcome(ErrorCode.ineligible_replica)
    return AlterPartitionOutcome(
        ErrorCode.none, _change(state, ChangeCause.ALTER_PARTITION, brokers, config, new_isr)
    )


def elect_preferred_leader(
    state: PartitionState, brokers: BrokerFacts, config: PartitionConfig
) -> ElectionOutcome:
    """ElectLeaders (PREFERRED): move leadership to the preferred replica (the first of AR).

    Only when it is a clean candidate now (an unfenced ISR member, or an unfenced ELR member of
    an empty ISR); otherwise PREFERRED_LEADER_NOT_AVAILABLE and nothing changes.
    """
    preferred = state.preferred_leader
    if state.leader == preferred:
        return ElectionOutcome(ErrorCode.election_not_needed)
    if not _is_clean_candidate(preferred, state.isr, state.elr, brokers):
        return ElectionOutcome(ErrorCode.preferred_leader_not_available)
    return ElectionOutcome(
        ErrorCode.none,
        _change(
            state, ChangeCause.PREFERRED_ELECTION, brokers, config, state.isr, preferred=preferred
        ),
    )


def elect_unclean_leader(
    state: PartitionState,
    brokers: BrokerFacts,
    config: PartitionConfig,
    best_replica: int | None = None,
) -> ElectionOutcome:
    """ElectLeaders (UNCLEAN), asked by an operator whatever the topic's configuration.

    A leaderless partition elects cleanly if it can, else `best_replica`, the replica whose
    log the unclean recovery rules rank first (`unclean_recovery.best_replica`), when it is
    unfenced: a potential data-loss event. ELECTION_NOT_NEEDED when it has a leader,
    ELIGIBLE_LEADERS_NOT_AVAILABLE when neither is possible.
    """
    if state.has_leader:
        return ElectionOutcome(ErrorCode.election_not_needed)
    change = _change(state, ChangeCause.UNCLEAN_ELECTION, brokers, config, state.isr)
    if (change is None or not change.state.has_leader) and best_replica is not None:
        change = elect_recovered_leader(state, best_replica, brokers, config)
    if change is None or not change.state.has_leader:
        return ElectionOutcome(ErrorCode.eligible_leaders_not_available)
    return ElectionOutcome(ErrorCode.none, change)


def elect_recovered_leader(
    state: PartitionState,
    leader: int,
    brokers: BrokerFacts,
    config: PartitionConfig,
    cause: ChangeCause = ChangeCause.UNCLEAN_ELECTION,
) -> PartitionChange | None:
    """The unclean election of `leader`, the replica an unclean recovery chose: it becomes
    the only ISR member and the ELR and LastKnownELR are cleared, since its log now defines
    what is committed (5.3). None when `leader` is not an unfenced replica."""
    if leader not in state.replicas or leader not in brokers.unfenced:
        return None
    return _change(state, cause, brokers, config, (leader,), unclean_leader=leader)


def needs_unclean_recovery(
    state: PartitionState, brokers: BrokerFacts, config: PartitionConfig
) -> bool:
    """Whether the partition now waits for unclean recovery (5.3.1).

    balanced and manual: leaderless with the ISR and ELR empty, so a clean election is never
    going to be possible. proactive: leaderless with no clean candidate unfenced right now, even
    if fenced ISR or ELR members might come back. none: never.
    """
    strategy = config.unclean_recovery_strategy
    if state.has_leader or strategy is UncleanRecoveryStrategy.NONE:
        return False
    if strategy is UncleanRecoveryStrategy.PROACTIVE:
        return not any(
            _is_clean_candidate(r, state.isr, state.elr, brokers) for r in state.replicas
        )
    return not state.isr and not state.elr


def _is_clean_candidate(
    replica: int, isr: Collection[int], elr: Collection[int], brokers: BrokerFacts
) -> bool:
    # ELR members only stand when the ISR is empty, as in Kafka: a non-empty ISR with
    # ELR members is below MinISR, so its members are as complete as the ELR's.
    in_pool = replica in isr or (not isr and replica in elr)
    return in_pool and brokers.can_lead_cleanly(replica)


def _in_replica_order(replicas: tuple[int, ...], members: Iterable[int]) -> tuple[int, ...]:
    wanted = set(members)
    return tuple(r for r in replicas if r in wanted)


def reassign(
    state: PartitionState,
    cause: ChangeCause,
    assignment: Assignment,
    target_isr: Iterable[int],
    brokers: BrokerFacts,
    config: PartitionConfig,
    *,
    unclean_leader: int | None = None,
) -> PartitionChange | None:
    """Sets the partition's replica assignment and ISR, then elects and tracks the ELR as any
    change does; None if nothing moved. Members of the ISR, ELR and LastKnownELR that are not
    in `assignment.replicas` leave them. The caller (`controller.reassignment`) validated the
    assignment; `unclean_leader` forces that unfenced replica as an unclean leader."""
    return _change(
        state,
        cause,
        brokers,
        config,
        target_isr,
        unclean_leader=unclean_leader,
        assignment=assignment,
    )


def _complete_reassignment(
    assignment: Assignment, isr: tuple[int, ...]
) -> tuple[Assignment, tuple[int, ...]] | None:
    """The assignment and ISR once the reassignment completes, if `isr` lets it
    (Kafka's PartitionReassignmentReplicas.maybeCompleteReassignment): every target replica is
    in the ISR, which therefore keeps at least one member."""
    if not assignment.in_progress:
        return None
    target = assignment.target
    if not target or not set(target) <= set(isr):
        return None
    return Assignment(target), _in_replica_order(target, isr)


def _change(
    state: PartitionState,
    cause: ChangeCause,
    brokers: BrokerFacts,
    config: PartitionConfig,
    target_isr: Iterable[int],
    *,
    preferred: int | None = None,
    unclean_leader: int | None = None,
    assignment: Assignment | None = None,
) -> PartitionChange | None:
    """Apply a target ISR (and assignment), complete a reassignment the new ISR allows, elect,
    then track the ELR and LastKnownELR; None if nothing moved.

    `preferred` forces that (already validated) clean candidate as leader; `unclean_leader`
    forces that (already validated) replica as an unclean leader.
    """
    if assignment is None:
        assignment = Assignment.of(state)
    isr = _in_replica_order(assignment.replicas, target_isr)
    completed = _complete_reassignment(assignment, isr)
    if completed is not None:
        assignment, isr = completed
    replicas = assignment.replicas
    elr_enabled = config.eligible_leader_replicas_enable
    if not isr and not elr_enabled:
        # Without the ELR the last ISR member stays, fenced or not: it is the only replica
        # known to be complete, and it will be elected again when it comes back.
        isr = _in_replica_order(replicas, state.isr)
    elr: tuple[int, ...] = _in_replica_order(replicas, state.elr) if elr_enabled else ()
    last_known_elr: tuple[int, ...]

    leader = state.leader
    election: Election | None = None
    unclean_election = False
    if preferred is not None:
        leader, election = preferred, Election.ISR if preferred in isr else Election.ELR
    elif unclean_leader is not None:
        leader, election, unclean_election = unclean_leader, Election.UNCLEAN, True
    elif not _is_clean_candidate(leader, isr, elr, brokers):
        candidates = [r for r in replicas if _is_clean_candidate(r, isr, elr, brokers)]
        # Kafka before KIP-966: any unfenced replica, without looking at the logs.
        unclean_allowed = (
            config.unclean_leader_election_enable
            and config.unclean_recovery_strategy is UncleanRecoveryStrategy.NONE
        )
        unfenced = [r for r in replicas if r in brokers.unfenced]
        if candidates:
            leader = candidates[0]
            election = Election.ISR if leader in isr else Election.ELR
        elif unclean_allowed and unfenced:
            leader, election, unclean_election = unfenced[0], Election.UNCLEAN, True
        else:
            leader = NO_LEADER

    if election is Election.ELR:
        # Case B: the elected ELR member becomes the (only) ISR member.
        isr = (leader,)
    if unclean_election:
        # The new leader's log now defines what is committed; the ELR's completeness guarantee
        # was about the old log, which the new leader may not extend.
        isr, elr, last_known_elr = (leader,), (), ()
    elif elr_enabled:
        elr, last_known_elr = _track_elr(state, replicas, isr, brokers, config.min_insync_replicas)
    else:
        elr, last_known_elr = (), ()

    if (leader, isr, elr, last_known_elr, assignment) == (
        state.leader,
        state.isr,
        state.elr,
        state.last_known_elr,
        Assignment.of(state),
    ):
        return None
    leader_epoch = state.leader_epoch + 1 if leader != state.leader else state.leader_epoch
    new_state = PartitionState(
        replicas=replicas,
        isr=isr,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=state.partition_epoch + 1,
        elr=elr,
        last_known_elr=last_known_elr,
        adding_replicas=assignment.adding,
        removing_replicas=assignment.removing,
    )
    event = PartitionEvent(
        cause=cause,
        old_leader=state.leader,
        new_leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=new_state.partition_epoch,
        election=election if leader != state.leader else None,
        potential_data_loss=unclean_election,
        needs_unclean_recovery=needs_unclean_recovery(new_state, brokers, config),
        reassignment_completed=completed is not None,
        replicas=replicas,
        adding_replicas=assignment.adding,
        removing_replicas=assignment.removing,
        joined_isr=tuple(r for r in isr if r in state.adding_replicas and r not in state.isr),
    )
    return PartitionChange(new_state, event)


def _track_elr(
    state: PartitionState,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    brokers: BrokerFacts,
    min_insync_replicas: int,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ELR and LastKnownELR that go with the new ISR `isr` (cases A, C, D, F, G; 5.3).

    At MinISR or above both are empty (case G; 5.3 "cleaned when the ISR reaches the MinISR").
    Below it, every replica that was in the ISR or ELR and is not in the new ISR stays a
    leader candidate in the ELR (cases A, C: the high watermark cannot advance, so they remain
    complete), except unclean ones, which go to the LastKnownELR instead: they may still be
    complete, so balanced recovery inspects them (5.3.2's MinISR recovery quorum). Only
    members of the new `replicas` stay in either.
    """
    if len(isr) >= min_insync_replicas:
        return (), ()
    was_candidate = (set(state.isr) | set(state.elr)) & set(replicas)
    elr = _in_replica_order(
        replicas, was_candidate - set(isr) - {r for r in was_candidate if r in brokers.unclean}
    )
    last_known_elr = _in_replica_order(
        replicas, (was_candidate | set(state.last_known_elr)) - set(isr) - set(elr)
    )
    return elr, last_known_elr
