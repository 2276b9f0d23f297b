"""The controller's partition state machine (controller/partition_change.py).

Against reference/async-storage-and-recovery.txt: the transitions of 5.2.1 (cases A-G, one
table row or more each), the clean ELR recovery example of 5.2.2 and the balanced recovery
example of 5.3.3 up to where unclean recovery starts (steps 1-8), replayed step by step; then
election preference, epoch rules, AlterPartition and ElectLeaders error codes, unclean election
and recovery, the ELR disabled, and a property test over random operation sequences.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from controller.partition_change import (
    AlterPartitionRequest,
    BrokerFacts,
    ChangeCause,
    Election,
    PartitionChange,
    PartitionConfig,
    alter_partition,
    elect_preferred_leader,
    elect_recovered_leader,
    elect_unclean_leader,
    fence_broker,
    needs_unclean_recovery,
    register_unclean_broker,
    unfence_broker,
)
from controller.partition_state import NO_LEADER, PartitionState
from controller.topic_config import UncleanRecoveryStrategy

MIN_ISR_2 = PartitionConfig(min_insync_replicas=2)
BALANCED = PartitionConfig(
    min_insync_replicas=2, unclean_recovery_strategy=UncleanRecoveryStrategy.BALANCED
)
NO_ELR = PartitionConfig(min_insync_replicas=2, eligible_leader_replicas_enable=False)


def facts(*unfenced: int, unclean: tuple[int, ...] = ()) -> BrokerFacts:
    return BrokerFacts(frozenset(unfenced), frozenset(unclean))


def state(
    leader: int,
    isr: tuple[int, ...],
    elr: tuple[int, ...] = (),
    last_known_elr: tuple[int, ...] = (),
    replicas: tuple[int, ...] = (1, 2, 3),
) -> PartitionState:
    return PartitionState(
        replicas=replicas,
        isr=isr,
        leader=leader,
        leader_epoch=5,
        partition_epoch=10,
        elr=elr,
        last_known_elr=last_known_elr,
    )


def shape(s: PartitionState) -> tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Leader, ISR, ELR, LastKnownELR: what the reference's examples state."""
    return s.leader, s.isr, s.elr, s.last_known_elr


def changed(change: PartitionChange | None) -> PartitionChange:
    assert change is not None, "expected a partition change"
    return change


def alter(s: PartitionState, new_isr: tuple[int, ...], brokers: BrokerFacts) -> PartitionChange:
    """The leader's AlterPartition with the current epochs, which must succeed."""
    request = AlterPartitionRequest(s.leader, s.leader_epoch, s.partition_epoch, new_isr)
    outcome = alter_partition(s, request, brokers, MIN_ISR_2)
    assert outcome.error is ErrorCode.none
    return changed(outcome.change)


# --- 5.2.1, cases A to G (replicas 1, 2, 3; MinISR 2) --------------------------------------


def test_case_a_fenced_follower_joins_elr_when_isr_drops_below_min_isr() -> None:
    change = changed(fence_broker(state(1, (1, 2)), 2, facts(1, 3), MIN_ISR_2))
    assert shape(change.state) == (1, (1,), (2,), ())
    assert change.event.election is None


def test_case_a_not_when_isr_stays_at_min_isr() -> None:
    change = changed(fence_broker(state(1, (1, 2, 3)), 3, facts(1, 2), MIN_ISR_2))
    assert shape(change.state) == (1, (1, 2), (), ())


def test_case_b_unfenced_elr_member_elected_moves_to_isr() -> None:
    change = changed(unfence_broker(state(NO_LEADER, (), (2, 3)), 3, facts(), MIN_ISR_2))
    assert shape(change.state) == (3, (3,), (2,), ())
    assert change.event.election is Election.ELR


def test_case_b_unfenced_isr_member_elected() -> None:
    # Only reachable with the ELR disabled, where a fenced last ISR member stays in the ISR.
    change = changed(unfence_broker(state(NO_LEADER, (2,)), 2, facts(1), NO_ELR))
    assert shape(change.state) == (2, (2,), (), ())
    assert change.event.election is Election.ISR


def test_case_c_fenced_leader_joins_elr_when_isr_drops_below_min_isr() -> None:
    change = changed(fence_broker(state(1, (1, 2)), 1, facts(2), MIN_ISR_2))
    assert shape(change.state) == (2, (2,), (1,), ())
    assert change.event.cause is ChangeCause.BROKER_FENCED
    assert change.event.election is Election.ISR


def test_case_d_fenced_leader_not_in_elr_when_isr_stays_at_min_isr() -> None:
    change = changed(fence_broker(state(1, (1, 2, 3)), 1, facts(2, 3), MIN_ISR_2))
    assert shape(change.state) == (2, (2, 3), (), ())


def test_case_e_caught_up_follower_added_to_isr() -> None:
    change = alter(state(1, (1, 2)), (1, 2, 3), facts(1, 2, 3))
    assert shape(change.state) == (1, (1, 2, 3), (), ())
    assert change.event.cause is ChangeCause.ALTER_PARTITION


def test_case_f_follower_out_of_sync_not_in_elr_when_isr_stays_at_min_isr() -> None:
    change = alter(state(1, (1, 2, 3)), (1, 2), facts(1, 2, 3))
    assert shape(change.state) == (1, (1, 2), (), ())


def test_case_f_below_min_isr_the_removed_follower_joins_elr() -> None:
    change = alter(state(1, (1, 2)), (1,), facts(1, 2, 3))
    assert shape(change.state) == (1, (1,), (2,), ())


def test_case_g_isr_back_at_min_isr_clears_elr_and_last_known_elr() -> None:
    s = state(1, (1,), elr=(3,), last_known_elr=(2,))
    change = alter(s, (1, 2), facts(1, 2))
    assert shape(change.state) == (1, (1, 2), (), ())


# --- 5.2.2 Clean ELR-based recovery example ------------------------------------------------


def test_example_5_2_2_clean_elr_recovery() -> None:
    all_up = facts(1, 2, 3)
    # 1. Initial state.
    s = state(1, (1, 2, 3))
    # 2. Replica 2, then replica 3, leave the ISR; only 3 goes to the ELR.
    s = alter(s, (1, 3), all_up).state
    assert (s.leader, s.isr, s.elr) == (1, (1, 3), ())
    s = alter(s, (1,), all_up).state
    assert (s.leader, s.isr, s.elr) == (1, (1,), (3,))
    # 3. Replica 1 shuts down uncleanly. Read as the 5.2 text says: a restarting broker is
    # fenced, removed from leadership and every ISR, at its (unclean) registration. Replica 3
    # is elected from the ELR (case B); replica 1 is unclean so it does not join the ELR.
    change = changed(register_unclean_broker(s, 1, facts(2, 3), MIN_ISR_2))
    s = change.state
    assert (s.leader, s.isr, s.elr) == (3, (3,), ())
    assert change.event.election is Election.ELR
    assert not change.event.potential_data_loss
    # 4. Replica 1 catches up and the leader adds it back to the ISR.
    s = alter(s, (1, 3), all_up).state
    assert (s.leader, s.isr, s.elr) == (3, (1, 3), ())
    assert s.last_known_elr == ()


def test_example_5_2_2_when_broker_1_is_fenced_before_it_restarts() -> None:
    """Step 3 when a session timeout fences broker 1 first: case C puts it in the ELR, its
    unclean registration then moves it to the LastKnownELR, and step 4 ends the same."""
    s = state(1, (1,), elr=(3,))
    s = changed(fence_broker(s, 1, facts(2, 3), MIN_ISR_2)).state
    assert shape(s) == (3, (3,), (1,), ())
    s = changed(register_unclean_broker(s, 1, facts(2, 3), MIN_ISR_2)).state
    assert shape(s) == (3, (3,), (), (1,))
    s = alter(s, (1, 3), facts(1, 2, 3)).state
    assert shape(s) == (3, (1, 3), (), ())


# --- 5.3.3 Balanced recovery example, steps 1-8 --------------------------------------------


def test_example_5_3_3_balanced_recovery_up_to_unclean_recovery() -> None:
    # 1. Initial state.
    s = state(1, (1, 2, 3))
    # 2.-3. Power outage; the controller fences broker 1 and elects replica 2.
    s = changed(fence_broker(s, 1, facts(2, 3), BALANCED)).state
    assert shape(s) == (2, (2, 3), (), ())
    # 4. Fences broker 2 and elects replica 3.
    s = changed(fence_broker(s, 2, facts(3), BALANCED)).state
    assert shape(s) == (3, (3,), (2,), ())
    # 5. Fences broker 3: NoLeader.
    change = changed(fence_broker(s, 3, facts(), BALANCED))
    s = change.state
    assert shape(s) == (NO_LEADER, (), (2, 3), ())
    assert not change.event.needs_unclean_recovery
    # 6. Broker 1 registers without a clean-shutdown epoch: not an ELR member, no change.
    assert register_unclean_broker(s, 1, facts(), BALANCED) is None
    # 7. Broker 2 does too: it moves from the ELR to the LastKnownELR.
    change = changed(register_unclean_broker(s, 2, facts(unclean=(1,)), BALANCED))
    s = change.state
    assert shape(s) == (NO_LEADER, (), (3,), (2,))
    assert not change.event.needs_unclean_recovery
    # 8. Broker 3 does too: ISR and ELR are empty, LastKnownELR is the recovery quorum.
    change = changed(register_unclean_broker(s, 3, facts(unclean=(1, 2)), BALANCED))
    s = change.state
    assert shape(s) == (NO_LEADER, (), (), (2, 3))
    # 9. (starts here) The controller cannot elect cleanly and needs unclean recovery.
    assert change.event.needs_unclean_recovery
    assert not change.event.potential_data_loss
    assert needs_unclean_recovery(s, facts(1, 2, 3, unclean=(1, 2, 3)), BALANCED)
    assert s.leader_epoch == 5 + 3 and s.partition_epoch == 10 + 5


# --- election preference -------------------------------------------------------------------


def test_election_prefers_the_preferred_replica() -> None:
    s = state(2, (1, 2, 3), replicas=(3, 1, 2))
    assert changed(fence_broker(s, 2, facts(1, 3), MIN_ISR_2)).state.leader == 3


def test_election_otherwise_takes_the_first_candidate_in_replica_order() -> None:
    s = state(2, (1, 2, 3), replicas=(3, 1, 2))
    assert changed(fence_broker(s, 2, facts(1), MIN_ISR_2)).state.leader == 1


def test_election_keeps_a_valid_leader_when_the_preferred_replica_returns() -> None:
    s = state(2, (2, 3), replicas=(1, 2, 3))
    assert unfence_broker(s, 1, facts(2, 3), MIN_ISR_2) is None


def test_election_skips_unclean_elr_members() -> None:
    s = state(NO_LEADER, (), (2, 3))
    change = changed(unfence_broker(s, 3, facts(2, unclean=(2,)), MIN_ISR_2))
    assert shape(change.state) == (3, (3,), (), (2,))


def test_preferred_election_moves_leadership_to_the_preferred_replica() -> None:
    outcome = elect_preferred_leader(state(2, (1, 2, 3)), facts(1, 2, 3), MIN_ISR_2)
    assert outcome.error is ErrorCode.none
    change = changed(outcome.change)
    assert shape(change.state) == (1, (1, 2, 3), (), ())
    assert change.event.cause is ChangeCause.PREFERRED_ELECTION


@pytest.mark.parametrize(
    ("s", "brokers", "error"),
    [
        (state(1, (1, 2, 3)), facts(1, 2, 3), ErrorCode.election_not_needed),
        (state(2, (2, 3)), facts(1, 2, 3), ErrorCode.preferred_leader_not_available),
        (state(2, (1, 2, 3)), facts(2, 3), ErrorCode.preferred_leader_not_available),
        (
            state(2, (1, 2, 3)),
            facts(1, 2, 3, unclean=(1,)),
            ErrorCode.preferred_leader_not_available,
        ),
    ],
    ids=["already-preferred", "preferred-not-in-isr", "preferred-fenced", "preferred-unclean"],
)
def test_preferred_election_errors(
    s: PartitionState, brokers: BrokerFacts, error: ErrorCode
) -> None:
    outcome = elect_preferred_leader(s, brokers, MIN_ISR_2)
    assert outcome.error is error
    assert outcome.change is None


# --- epochs --------------------------------------------------------------------------------


def test_leader_change_bumps_both_epochs() -> None:
    change = changed(fence_broker(state(1, (1, 2, 3)), 1, facts(2, 3), MIN_ISR_2))
    assert (change.state.leader_epoch, change.state.partition_epoch) == (6, 11)
    assert (change.event.leader_epoch, change.event.partition_epoch) == (6, 11)
    assert (change.event.old_leader, change.event.new_leader) == (1, 2)


def test_isr_change_bumps_only_the_partition_epoch() -> None:
    change = changed(fence_broker(state(1, (1, 2, 3)), 3, facts(1, 2), MIN_ISR_2))
    assert (change.state.leader_epoch, change.state.partition_epoch) == (5, 11)


def test_losing_the_leader_bumps_the_leader_epoch() -> None:
    change = changed(fence_broker(state(1, (1,), (2,)), 1, facts(), MIN_ISR_2))
    assert shape(change.state) == (NO_LEADER, (), (1, 2), ())
    assert (change.state.leader_epoch, change.state.partition_epoch) == (6, 11)


def test_nothing_changes_nothing_bumps() -> None:
    assert fence_broker(state(1, (1, 2)), 3, facts(1, 2), MIN_ISR_2) is None
    assert fence_broker(state(NO_LEADER, (), (2, 3)), 2, facts(), MIN_ISR_2) is None


# --- AlterPartition ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alter_request", "brokers", "error"),
    [
        (AlterPartitionRequest(1, 6, 10, (1, 2)), facts(1, 2, 3), ErrorCode.not_controller),
        (AlterPartitionRequest(1, 5, 11, (1, 2)), facts(1, 2, 3), ErrorCode.not_controller),
        (AlterPartitionRequest(1, 4, 10, (1, 2)), facts(1, 2, 3), ErrorCode.fenced_leader_epoch),
        (AlterPartitionRequest(2, 4, 10, (1, 2)), facts(1, 2, 3), ErrorCode.fenced_leader_epoch),
        (AlterPartitionRequest(2, 5, 10, (1, 2)), facts(1, 2, 3), ErrorCode.invalid_request),
        (AlterPartitionRequest(1, 5, 9, (1, 2)), facts(1, 2, 3), ErrorCode.invalid_update_version),
        (AlterPartitionRequest(1, 5, 10, (1, 4)), facts(1, 2, 3, 4), ErrorCode.invalid_request),
        (AlterPartitionRequest(1, 5, 10, (1, 2, 2)), facts(1, 2, 3), ErrorCode.invalid_request),
        (AlterPartitionRequest(1, 5, 10, (2, 3)), facts(1, 2, 3), ErrorCode.invalid_request),
        (AlterPartitionRequest(1, 5, 10, ()), facts(1, 2, 3), ErrorCode.invalid_request),
        (AlterPartitionRequest(1, 5, 10, (1, 3)), facts(1, 2), ErrorCode.ineligible_replica),
        (
            AlterPartitionRequest(1, 5, 10, (1, 3)),
            facts(1, 2, 3, unclean=(3,)),
            ErrorCode.ineligible_replica,
        ),
        (AlterPartitionRequest(1, 5, 10, (1, 2, 3)), facts(1, 2, 3), ErrorCode.none),
    ],
    ids=[
        "leader-epoch-ahead",
        "partition-epoch-ahead",
        "stale-leader-epoch",
        "stale-leader-epoch-before-not-leader",
        "not-the-leader",
        "stale-partition-epoch",
        "not-a-replica",
        "duplicate",
        "without-the-leader",
        "empty",
        "fenced-member",
        "unclean-member",
        "valid",
    ],
)
def test_alter_partition_validation(
    alter_request: AlterPartitionRequest, brokers: BrokerFacts, error: ErrorCode
) -> None:
    # The partition: leader 1, leader epoch 5, partition epoch 10, ISR [1, 2].
    outcome = alter_partition(state(1, (1, 2)), alter_request, brokers, MIN_ISR_2)
    assert outcome.error is error
    assert (outcome.change is not None) == (error is ErrorCode.none)


def test_alter_partition_with_the_same_isr_changes_nothing() -> None:
    s = state(1, (1, 2))
    request = AlterPartitionRequest(1, 5, 10, (2, 1))
    assert alter_partition(s, request, facts(1, 2, 3), MIN_ISR_2).error is ErrorCode.none
    assert alter_partition(s, request, facts(1, 2, 3), MIN_ISR_2).change is None


def test_alter_partition_expansion_takes_members_out_of_elr_and_last_known_elr() -> None:
    config = PartitionConfig(min_insync_replicas=3)
    s = state(1, (1,), elr=(2,), last_known_elr=(3,))
    request = AlterPartitionRequest(1, 5, 10, (1, 3))
    change = changed(alter_partition(s, request, facts(1, 3), config).change)
    assert shape(change.state) == (1, (1, 3), (2,), ())


# --- unclean election and unclean recovery -------------------------------------------------


def test_unclean_leader_election_is_a_potential_data_loss_event() -> None:
    config = PartitionConfig(min_insync_replicas=2, unclean_leader_election_enable=True)
    s = state(NO_LEADER, (), (1, 2), (3,))
    change = changed(unfence_broker(s, 3, facts(unclean=(3,)), config))
    assert shape(change.state) == (3, (3,), (), ())
    assert change.event.election is Election.UNCLEAN
    assert change.event.potential_data_loss
    assert not change.event.needs_unclean_recovery


def test_no_unclean_election_without_the_setting() -> None:
    assert unfence_broker(state(NO_LEADER, (), (1, 2)), 3, facts(), MIN_ISR_2) is None


def test_recovery_strategy_takes_precedence_over_unclean_leader_election() -> None:
    config = PartitionConfig(
        min_insync_replicas=2,
        unclean_leader_election_enable=True,
        unclean_recovery_strategy=UncleanRecoveryStrategy.BALANCED,
    )
    s = state(1, (1,), last_known_elr=(2, 3))
    change = changed(register_unclean_broker(s, 1, facts(2, 3), config))
    assert shape(change.state) == (NO_LEADER, (), (), (1, 2, 3))
    assert change.event.needs_unclean_recovery
    assert not change.event.potential_data_loss


@pytest.mark.parametrize(
    ("strategy", "needed"),
    [
        (UncleanRecoveryStrategy.NONE, False),
        (UncleanRecoveryStrategy.PROACTIVE, True),
        (UncleanRecoveryStrategy.BALANCED, False),
        (UncleanRecoveryStrategy.MANUAL, False),
    ],
)
def test_only_proactive_recovery_starts_while_fenced_elr_members_remain(
    strategy: UncleanRecoveryStrategy, needed: bool
) -> None:
    config = PartitionConfig(min_insync_replicas=2, unclean_recovery_strategy=strategy)
    change = changed(fence_broker(state(3, (3,), (2,)), 3, facts(1), config))
    assert shape(change.state) == (NO_LEADER, (), (2, 3), ())
    assert change.event.needs_unclean_recovery is needed
    assert needs_unclean_recovery(change.state, facts(1), config) is needed
    # Once an ELR member is back, a clean election is possible: proactive no longer needs it.
    assert not needs_unclean_recovery(change.state, facts(1, 2), config)


def test_operator_unclean_election() -> None:
    s = state(NO_LEADER, (), (), (2, 3))
    # Only with the replica the recovery rules chose from the logs, and only if unfenced.
    assert elect_unclean_leader(s, facts(1), MIN_ISR_2).error is (
        ErrorCode.eligible_leaders_not_available
    )
    assert elect_unclean_leader(s, facts(1), MIN_ISR_2, best_replica=2).error is (
        ErrorCode.eligible_leaders_not_available
    )
    outcome = elect_unclean_leader(s, facts(1), MIN_ISR_2, best_replica=1)
    assert outcome.error is ErrorCode.none
    change = changed(outcome.change)
    assert shape(change.state) == (1, (1,), (), ())
    assert change.event.cause is ChangeCause.UNCLEAN_ELECTION
    assert change.event.election is Election.UNCLEAN
    assert change.event.potential_data_loss


def test_a_recovered_leader_must_be_an_unfenced_replica() -> None:
    s = state(NO_LEADER, (), (), (2, 3))
    assert elect_recovered_leader(s, 4, facts(4), MIN_ISR_2) is None
    assert elect_recovered_leader(s, 2, facts(1), MIN_ISR_2) is None
    change = changed(
        elect_recovered_leader(s, 3, facts(3), MIN_ISR_2, ChangeCause.UNCLEAN_RECOVERY)
    )
    assert shape(change.state) == (3, (3,), (), ())
    assert change.event.cause is ChangeCause.UNCLEAN_RECOVERY
    assert change.state.leader_epoch == s.leader_epoch + 1


def test_operator_unclean_election_elects_cleanly_when_it_can() -> None:
    outcome = elect_unclean_leader(state(NO_LEADER, (), (2, 3)), facts(1, 3), MIN_ISR_2)
    change = changed(outcome.change)
    assert shape(change.state) == (3, (3,), (2,), ())
    assert not change.event.potential_data_loss


def test_operator_unclean_election_errors() -> None:
    with_leader = elect_unclean_leader(state(1, (1,)), facts(1), MIN_ISR_2)
    assert with_leader.error is ErrorCode.election_not_needed
    all_fenced = elect_unclean_leader(state(NO_LEADER, (), (2,)), facts(), MIN_ISR_2)
    assert all_fenced.error is ErrorCode.eligible_leaders_not_available


# --- ELR disabled (Kafka before KIP-966) ---------------------------------------------------


def test_without_elr_the_last_isr_member_stays_in_the_isr_when_fenced() -> None:
    s = changed(fence_broker(state(1, (1,)), 1, facts(2, 3), NO_ELR)).state
    assert shape(s) == (NO_LEADER, (1,), (), ())
    # It is the only replica known to be complete: it leads again once back.
    assert shape(changed(unfence_broker(s, 1, facts(2, 3), NO_ELR)).state) == (1, (1,), (), ())


def test_without_elr_shrinking_below_min_isr_keeps_no_elr() -> None:
    s = changed(fence_broker(state(1, (1, 2)), 1, facts(2, 3), NO_ELR)).state
    assert shape(s) == (2, (2,), (), ())
    request = AlterPartitionRequest(1, 5, 10, (1,))
    change = changed(alter_partition(state(1, (1, 2)), request, facts(1, 2), NO_ELR).change)
    assert shape(change.state) == (1, (1,), (), ())


def test_without_elr_unclean_registration_is_a_plain_fence() -> None:
    s = changed(register_unclean_broker(state(1, (1, 2)), 1, facts(2, 3), NO_ELR)).state
    assert shape(s) == (2, (2,), (), ())
    # The last ISR member stays, as when fenced; it is not elected while still unclean.
    as_fenced = changed(fence_broker(s, 2, facts(3), NO_ELR)).state
    s = changed(register_unclean_broker(s, 2, facts(3), NO_ELR)).state
    assert s == as_fenced
    assert shape(s) == (NO_LEADER, (2,), (), ())
    assert unfence_broker(s, 2, facts(3, unclean=(2,)), NO_ELR) is None


def test_disabling_elr_drops_elr_and_last_known_elr_at_the_next_change() -> None:
    s = state(1, (1,), (2,), (3,))
    change = changed(
        alter_partition(s, AlterPartitionRequest(1, 5, 10, (1, 3)), facts(1, 3), NO_ELR).change
    )
    assert shape(change.state) == (1, (1, 3), (), ())


# --- property test -------------------------------------------------------------------------


@dataclass
class Cluster:
    """The brokers as the property test's controller sees them."""

    unfenced: set[int] = field(default_factory=set)
    unclean: set[int] = field(default_factory=set)

    def facts(self) -> BrokerFacts:
        return BrokerFacts(frozenset(self.unfenced), frozenset(self.unclean))


REPLICAS = (1, 2, 3)
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["fence", "unfence", "register_unclean", "catch_up", "alter", "preferred"]),
        st.sampled_from(REPLICAS),
        st.frozensets(st.sampled_from(REPLICAS)),
        st.booleans(),
    ),
    max_size=40,
)


@settings(max_examples=1000, deadline=None)
@given(
    operations=OPERATIONS,
    min_isr=st.integers(1, len(REPLICAS)),
    elr_enabled=st.booleans(),
    unclean_leader_election=st.booleans(),
    strategy=st.sampled_from(list(UncleanRecoveryStrategy)),
)
def test_invariants_hold_over_random_operations(
    operations: list[tuple[str, int, frozenset[int], bool]],
    min_isr: int,
    elr_enabled: bool,
    unclean_leader_election: bool,
    strategy: UncleanRecoveryStrategy,
) -> None:
    """Checked after every operation:

    - the leader is NO_LEADER or an ISR member; ISR, ELR and LastKnownELR are pairwise
      disjoint, without duplicates, in replica order, subsets of the replicas;
    - with the ELR disabled, ELR and LastKnownELR are empty and the ISR is never empty;
    - a non-empty ELR means an ISR below MinISR (case G);
    - epochs never decrease; a change bumps the partition epoch by exactly one, and the leader
      epoch by one exactly when the leader changed; the event carries the new epochs;
    - durability (ELR enabled, no unclean election so far; the ISR starts full so it has
      reached MinISR): |ISR| + |ELR| + |LastKnownELR| >= MinISR (5.3.2's recovery quorum),
      and |ISR| + |ELR| >= MinISR while no broker has registered uncleanly (5.2);
    - Unclean Exclusion (ELR enabled): no unclean broker (registered uncleanly, not yet caught
      up) is in the ELR, nor in the ISR unless an unclean election made it the leader.
    """
    config = PartitionConfig(min_isr, elr_enabled, unclean_leader_election, strategy)
    cluster = Cluster(unfenced=set(REPLICAS))
    s = PartitionState(replicas=REPLICAS, isr=REPLICAS, leader=REPLICAS[0])
    unclean_election_happened = False
    unclean_registration_happened = False
    for kind, broker, subset, stale in operations:
        change: PartitionChange | None = None
        if kind == "fence":
            cluster.unfenced.discard(broker)
            change = fence_broker(s, broker, cluster.facts(), config)
        elif kind == "unfence":
            cluster.unfenced.add(broker)
            change = unfence_broker(s, broker, cluster.facts(), config)
        elif kind == "register_unclean":
            cluster.unfenced.discard(broker)
            cluster.unclean.add(broker)
            unclean_registration_happened = True
            change = register_unclean_broker(s, broker, cluster.facts(), config)
        elif kind == "catch_up":
            cluster.unclean.discard(broker)
        elif kind == "alter" and s.has_leader:
            new_isr = tuple(r for r in REPLICAS if r in subset or r == s.leader)
            request = AlterPartitionRequest(
                s.leader, s.leader_epoch, s.partition_epoch - stale, new_isr
            )
            outcome = alter_partition(s, request, cluster.facts(), config)
            eligible = all(cluster.facts().can_lead_cleanly(r) for r in new_isr)
            expected = (
                ErrorCode.invalid_update_version
                if stale
                else ErrorCode.none
                if eligible
                else ErrorCode.ineligible_replica
            )
            assert outcome.error is expected
            change = outcome.change
        elif kind == "preferred":
            change = elect_preferred_leader(s, cluster.facts(), config).change
        if change is None:
            continue
        new = change.state
        assert new.partition_epoch == s.partition_epoch + 1
        assert new.leader_epoch == s.leader_epoch + (new.leader != s.leader)
        assert (change.event.leader_epoch, change.event.partition_epoch) == (
            new.leader_epoch,
            new.partition_epoch,
        )
        unclean_election_happened |= change.event.potential_data_loss
        s = new

        assert s.leader == NO_LEADER or s.leader in s.isr
        groups = (s.isr, s.elr, s.last_known_elr)
        members = [r for group in groups for r in group]
        assert len(members) == len(set(members))
        for group in groups:
            assert group == tuple(r for r in REPLICAS if r in group)
        if not elr_enabled:
            assert s.elr == () and s.last_known_elr == ()
            assert s.isr
        if s.elr:
            assert len(s.isr) < min_isr
        if elr_enabled:
            assert not set(s.elr) & cluster.unclean
            allowed = {s.leader} if unclean_election_happened else set()
            assert set(s.isr) & cluster.unclean <= allowed
        if elr_enabled and not unclean_election_happened:
            assert len(members) >= min_isr
            if not unclean_registration_happened:
                assert len(s.isr) + len(s.elr) >= min_isr
