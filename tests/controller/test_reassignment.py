"""Partition reassignment on the active controller (controller/reassignment.py, and the
completion rule of controller/partition_change.py).

Images are built from records, and every change is checked by replaying its records: the
controller's replay and every node's give the same state. Covers the validation of targets,
the stages of a move (replicas grow to target + old, the new replicas join the ISR through
AlterPartition, the change adding the last one completes the move), shrinks and reorders that
complete at once, moves waiting for a fenced broker, cancelling (with Kafka's unclean corner),
replacing a move in progress, the ELR, many partitions in one request, listing, a newly active
controller, UnregisterBroker, and invariants over random sequences of operations.
"""

from __future__ import annotations

from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from controller import partition_change, reassignment
from controller.alter_partition import (
    AlterPartitionBatch,
    IsrMember,
    PartitionIsrChange,
    alter_partitions,
)
from controller.broker_lifecycle import BrokerLifecycle
from controller.events import EventType, derive_events
from controller.image import MetadataImage
from controller.partition_change import (
    BrokerFacts,
    ChangeCause,
    PartitionConfig,
    TopicPartition,
    change_record,
)
from controller.partition_state import NO_LEADER, PartitionState
from controller.reassignment import (
    OngoingReassignment,
    ReassignmentRequest,
    alter_reassignments,
    complete_ready,
    list_reassignments,
)
from controller.records import MetadataRecord, PartitionChangeRecord, UnregisterBrokerRecord
from tests.controller.images import (
    broker,
    epoch_of,
    lifecycle,
    partition_defaults,
    replay,
    topic,
)

T = UUID(int=7)
U = UUID(int=8)
BROKERS = (1, 2, 3, 4, 5)
ALL_UP = BrokerFacts(frozenset(BROKERS))
CONFIG = PartitionConfig()


def cluster(
    *states: PartitionState,
    fenced: tuple[int, ...] = (),
    configs: dict[str, str] | None = None,
) -> MetadataImage:
    """Brokers 1-5 (those in `fenced` fenced) and topic "t" with the given partitions and
    configuration overrides."""
    records: list[MetadataRecord] = [broker(b, fenced=b in fenced) for b in BROKERS]
    records += topic("t", T, *states, configs=configs)
    return replay(records)


def reassign(
    image: MetadataImage, brokers: BrokerLifecycle, *asked: ReassignmentRequest
) -> tuple[reassignment.ReassignmentsOutcome, MetadataImage]:
    """The outcome of an AlterPartitionReassignments and the image once its records replay."""
    outcome = alter_reassignments(image, brokers, asked)
    return outcome, replay(outcome.records, image)


def isr_change(
    image: MetadataImage, brokers: BrokerLifecycle, partition_id: int, new_isr: tuple[int, ...]
) -> tuple[tuple[MetadataRecord, ...], MetadataImage]:
    """The leader of partition `partition_id` of "t" asks for `new_isr`; the records and the
    image after them (the request must be accepted)."""
    state = image.partition(T, partition_id)
    assert state is not None
    outcome = alter_partitions(
        image,
        brokers,
        AlterPartitionBatch(
            state.leader,
            epoch_of(state.leader),
            (
                PartitionIsrChange(
                    T,
                    partition_id,
                    state.leader_epoch,
                    state.partition_epoch,
                    tuple(IsrMember(b) for b in new_isr),
                ),
            ),
        ),
    )
    assert [r.error_code for r in outcome.results] == [ErrorCode.none]
    return outcome.records, replay(outcome.records, image)


def partition(image: MetadataImage, partition_id: int = 0) -> PartitionState:
    state = image.partition(T, partition_id)
    assert state is not None
    return state


# -- the stages of a move ------------------------------------------------------------------------


def test_a_move_grows_the_replicas_then_completes_when_the_last_new_replica_joins_the_isr() -> None:
    image = cluster(PartitionState((1, 2), (1, 2), leader=1, leader_epoch=3, partition_epoch=9))
    brokers = lifecycle(image)

    outcome, image = reassign(image, brokers, ReassignmentRequest("t", 0, (3, 4)))
    assert [r.error_code for r in outcome.results] == [ErrorCode.none]
    started = partition(image)
    # AR = target + old; the ISR and the leader stay until the new replicas catch up.
    assert started == PartitionState(
        replicas=(3, 4, 1, 2),
        isr=(1, 2),
        leader=1,
        leader_epoch=3,
        partition_epoch=10,
        adding_replicas=(3, 4),
        removing_replicas=(1, 2),
    )
    assert [e.event.cause for e in outcome.events] == [ChangeCause.REASSIGNMENT_STARTED]

    # Replica 3 catches up: it joins the ISR, the move goes on.
    _, image = isr_change(image, brokers, 0, (1, 2, 3))
    assert partition(image).isr == (3, 1, 2)
    assert partition(image).adding_replicas == (3, 4)

    # Replica 4 catches up: the same record completes the move, and the target's first replica
    # leads since the old leader left.
    records, image = isr_change(image, brokers, 0, (1, 2, 3, 4))
    assert len(records) == 1
    assert partition(image) == PartitionState(
        replicas=(3, 4), isr=(3, 4), leader=3, leader_epoch=4, partition_epoch=12
    )
    assert list_reassignments(image, None) == []


def test_the_change_that_adds_a_new_replica_to_the_isr_names_it() -> None:
    moving = PartitionState(
        (3, 4, 1, 2), (1, 2), leader=1, adding_replicas=(3, 4), removing_replicas=(1, 2)
    )
    outcome = partition_change.alter_partition(
        moving, partition_change.AlterPartitionRequest(1, 0, 0, (1, 2, 3)), ALL_UP, CONFIG
    )
    assert outcome.change is not None
    assert outcome.change.event.joined_isr == (3,)
    assert not outcome.change.event.reassignment_completed


def test_a_leader_that_stays_in_the_target_keeps_leading() -> None:
    image = cluster(PartitionState((1, 2), (1, 2), leader=2))
    brokers = lifecycle(image)
    _, image = reassign(image, brokers, ReassignmentRequest("t", 0, (3, 2)))
    _, image = isr_change(image, brokers, 0, (1, 2, 3))
    assert partition(image) == PartitionState(
        replicas=(3, 2), isr=(3, 2), leader=2, leader_epoch=0, partition_epoch=2
    )


def test_a_move_to_a_fenced_broker_waits_for_it() -> None:
    image = cluster(PartitionState((1, 2), (1, 2), leader=1), fenced=(4,))
    brokers = lifecycle(image)
    outcome, image = reassign(image, brokers, ReassignmentRequest("t", 0, (1, 4)))
    assert [r.error_code for r in outcome.results] == [ErrorCode.none]
    assert partition(image).adding_replicas == (4,)
    # The leader cannot add a fenced replica to the ISR: the move waits, 2 keeps its copy.
    state = partition(image)
    refused = alter_partitions(
        image,
        brokers,
        AlterPartitionBatch(
            1,
            epoch_of(1),
            (
                PartitionIsrChange(
                    T,
                    0,
                    state.leader_epoch,
                    state.partition_epoch,
                    (IsrMember(1), IsrMember(2), IsrMember(4)),
                ),
            ),
        ),
    )
    assert [r.error_code for r in refused.results] == [ErrorCode.ineligible_replica]
    assert partition(image).replicas == (1, 4, 2)
    assert list_reassignments(image, [("t", 0)]) == [
        OngoingReassignment("t", 0, (1, 4, 2), (4,), (2,))
    ]


def test_a_shrink_completes_at_once_and_the_removed_leader_hands_over() -> None:
    image = cluster(PartitionState((1, 2, 3), (1, 2, 3), leader=1, leader_epoch=2))
    outcome, image = reassign(image, lifecycle(image), ReassignmentRequest("t", 0, (3, 2)))
    assert partition(image) == PartitionState(
        replicas=(3, 2), isr=(3, 2), leader=3, leader_epoch=3, partition_epoch=1
    )
    event = outcome.events[0].event
    assert event.reassignment_completed
    assert (event.old_leader, event.new_leader) == (1, 3)


def test_a_reorder_applies_at_once_and_the_same_replicas_change_nothing() -> None:
    image = cluster(PartitionState((1, 2, 3), (1, 2, 3), leader=1))
    brokers = lifecycle(image)
    outcome, _ = reassign(image, brokers, ReassignmentRequest("t", 0, (1, 2, 3)))
    assert outcome.records == ()
    assert [r.error_code for r in outcome.results] == [ErrorCode.none]
    outcome, image = reassign(image, brokers, ReassignmentRequest("t", 0, (2, 3, 1)))
    assert outcome.records == (PartitionChangeRecord(T, 0, replicas=(2, 3, 1), isr=(2, 3, 1)),)
    assert partition(image).leader == 1  # the preferred leader election moves it later
    assert partition(image).preferred_leader == 2


def test_an_increase_of_the_replication_factor_keeps_every_old_replica() -> None:
    image = cluster(PartitionState((1, 2), (1, 2), leader=1))
    brokers = lifecycle(image)
    _, image = reassign(image, brokers, ReassignmentRequest("t", 0, (1, 2, 3)))
    assert partition(image).replicas == (1, 2, 3)
    assert (partition(image).adding_replicas, partition(image).removing_replicas) == ((3,), ())
    _, image = isr_change(image, brokers, 0, (1, 2, 3))
    assert partition(image).replicas == (1, 2, 3)
    assert partition(image).adding_replicas == ()


# -- validation ----------------------------------------------------------------------------------


def test_bad_targets_are_refused_and_change_nothing() -> None:
    image = cluster(PartitionState((1, 2), (1, 2), leader=1), fenced=(5,))
    outcome, _ = reassign(
        image,
        lifecycle(image),
        ReassignmentRequest("t", 0, ()),
        ReassignmentRequest("t", 0, (1, 1)),
        ReassignmentRequest("t", 0, (1, 9)),
        ReassignmentRequest("t", 7, (1, 2)),
        ReassignmentRequest("nope", 0, (1, 2)),
        ReassignmentRequest("t", 0, None),
    )
    assert [r.error_code for r in outcome.results] == [
        ErrorCode.invalid_replica_assignment,
        ErrorCode.invalid_replica_assignment,
        ErrorCode.invalid_replica_assignment,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.no_reassignment_in_progress,
    ]
    assert all(r.error_message for r in outcome.results)
    assert outcome.records == ()
    # A registered broker, fenced or not, is a valid target.
    accepted, _ = reassign(image, lifecycle(image), ReassignmentRequest("t", 0, (1, 5)))
    assert [r.error_code for r in accepted.results] == [ErrorCode.none]


def test_a_request_that_forbids_changing_the_replication_factor() -> None:
    image = cluster(PartitionState((1, 2), (1, 2), leader=1))
    outcome = alter_reassignments(
        image,
        lifecycle(image),
        [ReassignmentRequest("t", 0, (1, 2, 3)), ReassignmentRequest("t", 0, (3, 4))],
        allow_replication_factor_change=False,
    )
    assert [r.error_code for r in outcome.results] == [
        ErrorCode.invalid_replication_factor,
        ErrorCode.none,
    ]


# -- cancelling and replacing a move -------------------------------------------------------------


def test_cancelling_goes_back_to_the_original_replicas() -> None:
    image = cluster(PartitionState((1, 2), (1, 2), leader=1))
    brokers = lifecycle(image)
    _, image = reassign(image, brokers, ReassignmentRequest("t", 0, (3, 4)))
    _, image = isr_change(image, brokers, 0, (1, 2, 3))
    outcome, image = reassign(image, brokers, ReassignmentRequest("t", 0, None))
    assert [e.event.cause for e in outcome.events] == [ChangeCause.REASSIGNMENT_CANCELLED]
    state = partition(image)
    assert (state.replicas, state.isr, state.leader) == ((1, 2), (1, 2), 1)
    assert (state.adding_replicas, state.removing_replicas) == ((), ())


def test_cancelling_replaces_a_leader_the_move_was_adding() -> None:
    image = cluster(
        PartitionState(
            (3, 1, 2),
            (3, 1),
            leader=3,
            leader_epoch=4,
            adding_replicas=(3,),
            removing_replicas=(2,),
        )
    )
    _, image = reassign(image, lifecycle(image), ReassignmentRequest("t", 0, None))
    state = partition(image)
    assert (state.replicas, state.isr, state.leader, state.leader_epoch) == ((1, 2), (1,), 1, 5)


def test_cancelling_when_only_new_replicas_are_in_sync_needs_unclean_election() -> None:
    only_new_in_sync = PartitionState(
        (3, 1), (3,), leader=3, adding_replicas=(3,), removing_replicas=(1,)
    )
    image = cluster(only_new_in_sync)
    outcome, _ = reassign(image, lifecycle(image), ReassignmentRequest("t", 0, None))
    assert [r.error_code for r in outcome.results] == [ErrorCode.invalid_replica_assignment]
    assert outcome.records == ()

    image = cluster(only_new_in_sync, configs={"unclean.leader.election.enable": "true"})
    defaults = partition_defaults(unclean_leader_election_enable=True)
    outcome, image = reassign(image, lifecycle(image, defaults), ReassignmentRequest("t", 0, None))
    assert [r.error_code for r in outcome.results] == [ErrorCode.none]
    assert outcome.events[0].event.potential_data_loss
    state = partition(image)
    assert (state.replicas, state.isr, state.leader) == ((1,), (1,), 1)


def test_a_new_target_starts_from_the_original_replicas() -> None:
    image = cluster(PartitionState((1, 2), (1, 2), leader=1))
    brokers = lifecycle(image)
    _, image = reassign(image, brokers, ReassignmentRequest("t", 0, (3, 4)))
    _, image = isr_change(image, brokers, 0, (1, 2, 3))
    # 4 is no longer wanted; 3, in sync already, stays in the ISR.
    _, image = reassign(image, brokers, ReassignmentRequest("t", 0, (3, 5)))
    state = partition(image)
    assert state.replicas == (3, 5, 1, 2)
    assert (state.adding_replicas, state.removing_replicas) == ((3, 5), (1, 2))
    assert state.isr == (3, 1, 2)
    _, image = isr_change(image, brokers, 0, (1, 2, 3, 5))
    assert (partition(image).replicas, partition(image).leader) == ((3, 5), 3)


def test_a_new_target_that_would_leave_no_in_sync_replica_is_refused() -> None:
    image = cluster(
        PartitionState((3, 1), (3,), leader=3, adding_replicas=(3,), removing_replicas=(1,))
    )
    outcome, _ = reassign(image, lifecycle(image), ReassignmentRequest("t", 0, (4, 1)))
    assert [r.error_code for r in outcome.results] == [ErrorCode.invalid_replica_assignment]


# -- the ELR -------------------------------------------------------------------------------------


def test_removed_replicas_leave_the_elr_and_the_last_known_elr() -> None:
    # min.insync.replicas 2: 2 left the ISR below MinISR (ELR), 3 is a last known ELR member.
    image = cluster(
        PartitionState((1, 2, 3, 4), (1,), leader=1, elr=(2,), last_known_elr=(3,)),
        configs={"min.insync.replicas": "2"},
    )
    brokers = lifecycle(image, partition_defaults(min_insync_replicas=2))
    _, image = reassign(image, brokers, ReassignmentRequest("t", 0, (1, 4)))
    assert partition(image).elr == (2,)
    _, image = isr_change(image, brokers, 0, (1, 4))
    state = partition(image)
    assert (state.replicas, state.isr, state.elr, state.last_known_elr) == ((1, 4), (1, 4), (), ())


def test_a_shrink_below_min_isr_keeps_no_removed_replica_in_the_elr() -> None:
    image = cluster(
        PartitionState((1, 2, 3), (1, 2, 3), leader=1), configs={"min.insync.replicas": "3"}
    )
    brokers = lifecycle(image, partition_defaults(min_insync_replicas=3))
    _, image = reassign(image, brokers, ReassignmentRequest("t", 0, (1, 2)))
    state = partition(image)
    assert (state.replicas, state.isr, state.elr, state.last_known_elr) == ((1, 2), (1, 2), (), ())


# -- many partitions, listing, a new controller --------------------------------------------------


def test_many_partitions_move_in_one_batch_that_replays_to_the_same_states() -> None:
    states = [PartitionState((1, 2), (1, 2), leader=1) for _ in range(20)]
    image = cluster(*states)
    brokers = lifecycle(image)
    asked = [ReassignmentRequest("t", p, (3, 4) if p % 2 else (2, 1)) for p in range(20)]
    outcome = alter_reassignments(image, brokers, asked)
    assert [r.error_code for r in outcome.results] == [ErrorCode.none] * 20
    assert len(outcome.records) == 20
    after = replay(outcome.records, image)
    for event, record in zip(outcome.events, outcome.records, strict=True):
        tp = event.partition
        assert isinstance(record, PartitionChangeRecord)
        before = partition(image, tp.partition_id)
        assert record.merge(before) == partition(after, tp.partition_id)
    ongoing = list_reassignments(after, None)
    assert [o.partition_id for o in ongoing] == list(range(1, 20, 2))
    assert list_reassignments(after, [("t", 3), ("t", 2), ("nope", 0), ("t", 99)]) == [
        OngoingReassignment("t", 3, (3, 4, 1, 2), (3, 4), (1, 2))
    ]


def test_a_partition_named_twice_is_changed_twice_in_order() -> None:
    image = cluster(PartitionState((1, 2), (1, 2), leader=1))
    outcome, after = reassign(
        image,
        lifecycle(image),
        ReassignmentRequest("t", 0, (3, 4)),
        ReassignmentRequest("t", 0, None),
    )
    assert [r.error_code for r in outcome.results] == [ErrorCode.none, ErrorCode.none]
    assert len(outcome.records) == 2
    state = partition(after)
    assert (state.replicas, state.isr, state.adding_replicas, state.partition_epoch) == (
        (1, 2),
        (1, 2),
        (),
        2,
    )


def test_a_newly_active_controller_completes_a_ready_move() -> None:
    # A log from a controller that left a move whose targets are all in the ISR.
    image = cluster(
        PartitionState(
            (3, 1, 2), (3, 1, 2), leader=1, adding_replicas=(3,), removing_replicas=(2,)
        ),
        PartitionState((3, 1, 2), (1, 2), leader=1, adding_replicas=(3,), removing_replicas=(2,)),
    )
    outcome = complete_ready(image, lifecycle(image))
    image = replay(outcome.records, image)
    assert (partition(image, 0).replicas, partition(image, 0).isr) == ((3, 1), (3, 1))
    assert partition(image, 1).replicas == (3, 1, 2)  # still waiting for 3
    assert complete_ready(image, lifecycle(image)).records == ()


# -- UnregisterBroker ----------------------------------------------------------------------------


def test_unregister_broker() -> None:
    image = cluster(PartitionState((1, 2), (1, 2), leader=1))
    brokers = lifecycle(image)
    assert brokers.unregister(image, 9).error is ErrorCode.broker_id_not_registered
    hosting = brokers.unregister(image, 2)
    assert hosting.error is ErrorCode.invalid_request
    assert hosting.message is not None and "t-0" in hosting.message
    assert hosting.change.records == ()
    outcome = brokers.unregister(image, 4)
    assert outcome.error is ErrorCode.none
    assert outcome.change.records == (UnregisterBrokerRecord(4, epoch_of(4)),)
    assert 4 not in replay(outcome.change.records, image).brokers


# -- invariants ----------------------------------------------------------------------------------

_targets = st.lists(st.sampled_from(BROKERS), min_size=1, max_size=4, unique=True).map(tuple)
_operations = st.lists(
    st.one_of(
        st.tuples(st.just("reassign"), _targets),
        st.tuples(st.just("cancel"), st.none()),
        st.tuples(st.just("catch_up"), st.sampled_from(BROKERS)),
        st.tuples(st.just("fence"), st.sampled_from(BROKERS)),
        st.tuples(st.just("unfence"), st.sampled_from(BROKERS)),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(_operations, st.sampled_from([1, 2]))
def test_invariants_hold_over_any_sequence_of_moves(
    operations: list[tuple[str, object]], min_isr: int
) -> None:
    """ISR, ELR and LastKnownELR hold replicas only; the leader is an ISR member or none; a
    replica leaves the replicas only when every remaining replica is in the ISR or when a
    cancel drops the replicas a move was adding; every record replays to the computed state."""
    state = PartitionState((1, 2, 3), (1, 2, 3), leader=1)
    up = set(BROKERS)
    config = PartitionConfig(min_insync_replicas=min_isr)
    tp = TopicPartition(T, 0)
    for name, argument in operations:
        facts = BrokerFacts(frozenset(up))
        if name == "reassign":
            assert isinstance(argument, tuple)
            outcome = reassignment.start(state, argument, BROKERS, facts, config)
            change = outcome.change
        elif name == "cancel":
            change = reassignment.cancel(state, facts, config).change
        elif name == "catch_up":
            assert isinstance(argument, int)
            if argument not in up or argument in state.isr or not state.has_leader:
                continue
            request = partition_change.AlterPartitionRequest(
                state.leader, state.leader_epoch, state.partition_epoch, (*state.isr, argument)
            )
            if argument not in state.replicas:
                assert (
                    partition_change.alter_partition(state, request, facts, config).error
                    is ErrorCode.invalid_request
                )
                continue
            change = partition_change.alter_partition(state, request, facts, config).change
        elif name == "fence":
            assert isinstance(argument, int)
            up.discard(argument)
            change = partition_change.fence_broker(state, argument, facts, config)
        else:
            assert isinstance(argument, int)
            up.add(argument)
            change = partition_change.unfence_broker(state, argument, facts, config)
        if change is None:
            continue
        new = change.state
        assert change_record(tp, state, new).merge(state) == new
        replicas = set(new.replicas)
        assert set(new.isr) <= replicas
        assert set(new.elr) <= replicas and set(new.last_known_elr) <= replicas
        assert new.leader == NO_LEADER or new.leader in new.isr
        assert set(new.adding_replicas) | set(new.removing_replicas) <= replicas
        # A replica that may hold acknowledged records leaves only once every replica that
        # stays is in sync; the replicas a move was adding may leave when it is cancelled or
        # replaced.
        removed = set(state.replicas) - replicas
        assert removed <= set(state.adding_replicas) or replicas <= set(new.isr), (state, new)
        state = new


# -- events --------------------------------------------------------------------------------------


def test_the_event_log_tells_the_stages_of_a_move_and_of_a_cancel() -> None:
    start = cluster(
        PartitionState((1, 2), (1, 2), leader=1), PartitionState((1, 2), (1, 2), leader=1)
    )
    brokers = lifecycle(start)
    moved, image = reassign(start, brokers, ReassignmentRequest("t", 0, (3, 1)))
    joined, image = isr_change(image, brokers, 0, (1, 2, 3))
    other, image = reassign(image, brokers, ReassignmentRequest("t", 1, (1, 4)))
    cancelled, image = reassign(image, brokers, ReassignmentRequest("t", 1, None))
    records = [*moved.records, *joined, *other.records, *cancelled.records]
    events = derive_events(start, enumerate(records), "2026-01-01T00:00:00.000+00:00")
    moves = [
        (e.type, e.partition, e.replicas, e.adding_replicas, e.removing_replicas, e.broker)
        for e in events
        if e.type.value.startswith("reassignment")
    ]
    assert moves == [
        (EventType.REASSIGNMENT_STARTED, 0, (3, 1, 2), (3,), (2,), None),
        (EventType.REASSIGNMENT_REPLICA_IN_SYNC, 0, (3, 1), (), (), 3),
        (EventType.REASSIGNMENT_COMPLETED, 0, (3, 1), (), (), None),
        (EventType.REASSIGNMENT_STARTED, 1, (1, 4, 2), (4,), (2,), None),
        (EventType.REASSIGNMENT_CANCELLED, 1, (1, 2), (), (), None),
    ]
