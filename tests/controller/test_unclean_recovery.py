"""Unclean recovery's rules (controller/unclean_recovery.py, reference 5.3, KIP-966).

Images are built from records (tests/controller/images.py) and every outcome is checked by
replaying its records. Covers the reference's example 5.3.3 at the rules level, whom each
strategy asks and when it elects (balanced: every LastKnownELR member answered; proactive: the
best answer once its window is over; manual: only the operator), which answers count (current
incarnation, unfenced), ties, the offsets a recovery may lose, the waiting records, the KIP-966
mapping of the configuration keys, and the registration of the controller's own broker.
"""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from controller.broker_lifecycle import (
    BrokerLifecycle,
    LifecycleConfig,
    RegistrationRequest,
)
from controller.image import MetadataImage
from controller.partition_change import (
    BrokerFacts,
    ChangeCause,
    Election,
    PartitionConfig,
    PartitionDefaults,
    TopicPartition,
    needs_unclean_recovery,
    partition_config,
)
from controller.partition_state import NO_LEADER, PartitionState
from controller.records import (
    MetadataRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    ReplicaLogState,
    UncleanRecoveryRecord,
)
from controller.topic_config import UncleanRecoveryStrategy
from controller.unclean_recovery import (
    RecoveryOutcome,
    best_replica,
    choose_manually,
    decide,
    lost_offsets,
    pending_recoveries,
    recover,
    replicas_to_ask,
    replicas_to_inspect,
    usable_answers,
)
from node.config import load_config
from tests.controller.images import (
    NOW_MS,
    broker,
    epoch_of,
    lifecycle,
    partition_defaults,
    replay,
    topic,
)

T = UUID(int=7)
TP = TopicPartition(T, 0)
BALANCED = UncleanRecoveryStrategy.BALANCED
PROACTIVE = UncleanRecoveryStrategy.PROACTIVE
MANUAL = UncleanRecoveryStrategy.MANUAL
NONE = UncleanRecoveryStrategy.NONE


def defaults(strategy: UncleanRecoveryStrategy = BALANCED) -> PartitionDefaults:
    return partition_defaults(min_insync_replicas=2, unclean_recovery_strategy=strategy)


def rules(strategy: UncleanRecoveryStrategy = BALANCED) -> PartitionConfig:
    """The partition configuration `defaults(strategy)` gives a topic without overrides."""
    return PartitionConfig(min_insync_replicas=2, unclean_recovery_strategy=strategy)


def log(broker_id: int, epoch: int, end: int, broker_epoch: int | None = None) -> ReplicaLogState:
    """Broker `broker_id`'s answer: last written leader epoch `epoch`, log end offset `end`,
    from its current incarnation unless `broker_epoch` says otherwise."""
    return ReplicaLogState(
        broker_id, epoch_of(broker_id) if broker_epoch is None else broker_epoch, epoch, end
    )


def epochs(*brokers: int) -> dict[int, int]:
    return {b: epoch_of(b) for b in brokers}


def cluster(
    state: PartitionState,
    *,
    fenced: tuple[int, ...] = (),
    brokers: tuple[int, ...] = (1, 2, 3),
    configs: dict[str, str] | None = None,
) -> MetadataImage:
    records: list[MetadataRecord] = [broker(b, fenced=b in fenced) for b in brokers]
    records += topic("t", T, state, configs=configs)
    return replay(records)


def run(
    image: MetadataImage,
    answers: list[ReplicaLogState],
    *,
    strategy: UncleanRecoveryStrategy = BALANCED,
    window_over: bool = False,
    reported: dict[TopicPartition, tuple[int, ...]] | None = None,
) -> RecoveryOutcome:
    return recover(
        image,
        lifecycle(image, defaults(strategy)),
        {TP: answers},
        windows_over={TP} if window_over else set(),
        reported_waiting=reported or {},
    )


def after(image: MetadataImage, outcome: RecoveryOutcome) -> PartitionState:
    state = replay(outcome.records, image).partition(T, 0)
    assert state is not None
    return state


# 5.3.3 step 8: every broker came back uncleanly; 2 and 3 went from the ELR to the
# LastKnownELR. Leader epochs: 1 led at 0, 2 at 1, 3 at 2, then no leader at 3.
STEP_8 = PartitionState(
    replicas=(1, 2, 3),
    isr=(),
    leader=NO_LEADER,
    leader_epoch=3,
    partition_epoch=7,
    last_known_elr=(2, 3),
)


# Example 5.3.3 (balanced).


def test_example_5_3_3_balanced_recovery_elects_the_lastknownelr_member_with_the_best_log() -> None:
    image = cluster(STEP_8)
    brokers = lifecycle(image, defaults())
    # Step 9: the recovery is needed and asks the LastKnownELR, not broker 1.
    (pending,) = pending_recoveries(image, brokers)
    assert (pending.partition, pending.topic_name, pending.strategy) == (TP, "t", BALANCED)
    assert replicas_to_inspect([pending], brokers.broker_facts(image)) == {2: [TP], 3: [TP]}

    # Step 10: broker 2 kept its log (epoch 1, LEO 12); broker 3 lost its tail (epoch 0,
    # LEO 7). Broker 1, outside the recovery quorum, answers with a longer log: ignored.
    two, three = log(2, 1, 12), log(3, 0, 7)
    outcome = run(image, [three, log(1, 2, 15), two])

    assert outcome.records == (
        UncleanRecoveryRecord(T, 0, "balanced", 2, (two, three)),
        PartitionChangeRecord(T, 0, isr=(2,), leader=2, last_known_elr=()),
    )
    assert outcome.waiting == {}
    state = after(image, outcome)
    assert (state.leader, state.isr, state.elr, state.last_known_elr) == (2, (2,), (), ())
    assert state.leader_epoch == STEP_8.leader_epoch + 1
    assert state.partition_epoch == STEP_8.partition_epoch + 1
    (event,) = outcome.events
    assert event.partition == TP
    assert event.event.cause is ChangeCause.UNCLEAN_RECOVERY
    assert event.event.election is Election.UNCLEAN
    assert event.event.potential_data_loss
    assert (event.event.old_leader, event.event.new_leader) == (NO_LEADER, 2)
    assert not event.event.needs_unclean_recovery
    # Recovered: nothing is pending any more.
    assert pending_recoveries(replay(outcome.records, image), brokers) == []


def test_equal_epochs_are_decided_by_the_log_end_offset() -> None:
    image = cluster(STEP_8)
    outcome = run(image, [log(2, 2, 12), log(3, 2, 13)])
    assert after(image, outcome).leader == 3


def test_a_higher_epoch_beats_a_longer_log() -> None:
    image = cluster(STEP_8)
    outcome = run(image, [log(2, 2, 5), log(3, 1, 500)])
    assert after(image, outcome).leader == 2


# Balanced: waiting.


def test_balanced_waits_for_every_lastknownelr_member_and_records_only_changes() -> None:
    image = cluster(STEP_8)
    two = log(2, 1, 12)

    first = run(image, [two])
    assert first.records == (UncleanRecoveryRecord(T, 0, "balanced", NO_LEADER, (two,), (3,)),)
    assert first.events == ()
    assert first.waiting == {TP: (3,)}
    # Replaying a waiting record changes nothing.
    assert after(image, first) == STEP_8

    # The next round still misses broker 3: nothing new to record.
    again = run(image, [two], reported=dict(first.waiting))
    assert (again.records, again.events, again.waiting) == ((), (), {TP: (3,)})

    # Now broker 2 does not answer either: the waiting set changed, so it is recorded.
    none = run(image, [], reported=dict(first.waiting))
    assert none.records == (UncleanRecoveryRecord(T, 0, "balanced", NO_LEADER, (), (2, 3)),)
    assert none.waiting == {TP: (2, 3)}

    # Both answered: elected, even though a waiting set had been reported.
    done = run(image, [two, log(3, 0, 7)], reported=dict(none.waiting))
    assert [type(r) for r in done.records] == [UncleanRecoveryRecord, PartitionChangeRecord]
    assert done.waiting == {}


def test_balanced_decide_names_the_members_that_have_not_answered() -> None:
    decision = decide(
        STEP_8, BALANCED, BrokerFacts(frozenset({1, 2, 3})), epochs(1, 2, 3), [], window_over=False
    )
    assert (decision.leader, decision.waiting_for, decision.answers) == (None, (2, 3), ())
    # Even with a window over, balanced never elects without the whole quorum.
    decision = decide(
        STEP_8,
        BALANCED,
        BrokerFacts(frozenset({1, 2, 3})),
        epochs(1, 2, 3),
        [log(2, 9, 99), log(1, 9, 99)],
        window_over=True,
    )
    assert (decision.leader, decision.waiting_for, decision.answers) == (
        None,
        (3,),
        (log(2, 9, 99),),
    )


def test_balanced_with_an_empty_lastknownelr_asks_every_replica() -> None:
    # RF 3, the replicas never formed a LastKnownELR (e.g. the ELR was disabled).
    state = PartitionState(replicas=(3, 1, 2), isr=(), leader=NO_LEADER, leader_epoch=5)
    assert replicas_to_ask(state, BALANCED) == (3, 1, 2)
    assert replicas_to_ask(STEP_8, BALANCED) == (2, 3)
    image = cluster(state)
    brokers = lifecycle(image, defaults())
    assert replicas_to_inspect(pending_recoveries(image, brokers), brokers.broker_facts(image)) == {
        3: [TP],
        1: [TP],
        2: [TP],
    }
    waiting = run(image, [log(1, 4, 10), log(2, 4, 11)])
    assert waiting.waiting == {TP: (3,)}
    assert waiting.records[0] == UncleanRecoveryRecord(
        T, 0, "balanced", NO_LEADER, (log(1, 4, 10), log(2, 4, 11)), (3,)
    )
    elected = run(image, [log(1, 4, 10), log(2, 4, 11), log(3, 3, 90)])
    assert after(image, elected).leader == 2


def test_rf_1_balanced_recovery_elects_the_only_replica_once_it_answers() -> None:
    state = PartitionState(replicas=(1,), isr=(), leader=NO_LEADER, leader_epoch=2)
    image = cluster(state, brokers=(1,))
    assert needs_unclean_recovery(state, BrokerFacts(frozenset({1})), rules())
    assert run(image, []).waiting == {TP: (1,)}
    outcome = run(image, [log(1, 2, 40)])
    assert outcome.records[-1] == PartitionChangeRecord(T, 0, isr=(1,), leader=1)
    assert after(image, outcome).leader_epoch == 3


# Which answers count.


def test_an_answer_from_an_earlier_incarnation_is_ignored() -> None:
    image = cluster(STEP_8)
    stale = log(3, 5, 100, broker_epoch=epoch_of(3) - 1)
    outcome = run(image, [log(2, 1, 12), stale])
    assert outcome.waiting == {TP: (3,)}
    assert not any(isinstance(r, PartitionChangeRecord) for r in outcome.records)
    # With a current one, 3's (worse) log is compared and 2 wins.
    outcome = run(image, [log(2, 1, 12), log(3, 0, 7)])
    assert after(image, outcome).leader == 2


def test_an_answer_from_a_fenced_broker_is_ignored_and_it_is_not_asked() -> None:
    image = cluster(STEP_8, fenced=(3,))
    brokers = lifecycle(image, defaults())
    assert replicas_to_inspect(pending_recoveries(image, brokers), brokers.broker_facts(image)) == {
        2: [TP]
    }
    outcome = run(image, [log(2, 1, 12), log(3, 5, 100)])
    assert outcome.waiting == {TP: (3,)}
    assert outcome.records == (
        UncleanRecoveryRecord(T, 0, "balanced", NO_LEADER, (log(2, 1, 12),), (3,)),
    )


def test_usable_answers_are_in_replica_order_and_only_of_replicas() -> None:
    state = PartitionState(replicas=(3, 1, 2), isr=(), leader=NO_LEADER)
    facts = BrokerFacts(frozenset({1, 2, 3, 4}))
    answers = [log(1, 0, 1), log(4, 9, 9), log(2, 0, 2), log(3, 0, 3)]
    assert usable_answers(state, facts, epochs(1, 2, 3, 4), answers) == (
        log(3, 0, 3),
        log(1, 0, 1),
        log(2, 0, 2),
    )
    # A broker not registered at all has no epoch to match.
    assert usable_answers(state, facts, epochs(1, 2), answers) == (log(1, 0, 1), log(2, 0, 2))


def test_ties_go_to_replica_order_not_broker_id_or_answer_order() -> None:
    state = PartitionState(replicas=(3, 1, 2), isr=(), leader=NO_LEADER)
    tied = [log(2, 4, 50), log(1, 4, 50), log(3, 4, 50)]
    best = best_replica(state, tied)
    assert best is not None and best.broker_id == 3
    best = best_replica(state, tied[:2])
    assert best is not None and best.broker_id == 1
    # Non-replicas never win, whatever their log.
    assert best_replica(state, [log(9, 99, 999)]) is None
    assert best_replica(state, []) is None

    image = cluster(
        PartitionState(replicas=(3, 1, 2), isr=(), leader=NO_LEADER, last_known_elr=(1, 2))
    )
    outcome = run(image, [log(2, 4, 50), log(1, 4, 50)])
    assert after(image, outcome).leader == 1


# Proactive.

# Leaderless with ELR member 2 fenced: a clean election would be possible later.
FENCED_ELR = PartitionState(
    replicas=(1, 2, 3), isr=(), leader=NO_LEADER, leader_epoch=4, partition_epoch=9, elr=(2,)
)


def test_proactive_triggers_while_every_elr_member_is_fenced() -> None:
    config = rules(PROACTIVE)
    assert needs_unclean_recovery(FENCED_ELR, BrokerFacts(frozenset({1, 3})), config)
    # Balanced and manual wait for the ELR member instead.
    assert not needs_unclean_recovery(FENCED_ELR, BrokerFacts(frozenset({1, 3})), rules())
    assert not needs_unclean_recovery(FENCED_ELR, BrokerFacts(frozenset({1, 3})), rules(MANUAL))
    # An unfenced ELR member is a clean candidate: no recovery.
    assert not needs_unclean_recovery(FENCED_ELR, BrokerFacts(frozenset({1, 2, 3})), config)
    # A fenced ISR member does not stop it either.
    fenced_isr = PartitionState(replicas=(1, 2, 3), isr=(2,), leader=NO_LEADER)
    assert needs_unclean_recovery(fenced_isr, BrokerFacts(frozenset({1, 3})), config)
    assert not needs_unclean_recovery(fenced_isr, BrokerFacts(frozenset({1, 3})), rules())
    # A partition with a leader never needs one.
    led = PartitionState(replicas=(1, 2, 3), isr=(1,), leader=1)
    assert not needs_unclean_recovery(led, BrokerFacts(frozenset({1})), config)


def test_proactive_waits_within_its_window_then_elects_the_best_answer() -> None:
    image = cluster(FENCED_ELR, fenced=(2,))
    brokers = lifecycle(image, defaults(PROACTIVE))
    (pending,) = pending_recoveries(image, brokers)
    assert pending.strategy is PROACTIVE
    # Proactive asks every replica, but only unfenced ones are sent the question.
    assert replicas_to_inspect([pending], brokers.broker_facts(image)) == {1: [TP], 3: [TP]}

    one = log(1, 3, 20)
    before = run(image, [one], strategy=PROACTIVE)
    assert before.waiting == {TP: (2, 3)}
    assert before.records == (UncleanRecoveryRecord(T, 0, "proactive", NO_LEADER, (one,), (2, 3)),)

    over = run(image, [one], strategy=PROACTIVE, window_over=True)
    assert over.records == (
        UncleanRecoveryRecord(T, 0, "proactive", 1, (one,)),
        PartitionChangeRecord(T, 0, isr=(1,), leader=1, elr=()),
    )
    state = after(image, over)
    assert (state.leader, state.isr, state.elr, state.last_known_elr) == (1, (1,), (), ())
    assert state.leader_epoch == FENCED_ELR.leader_epoch + 1


def test_proactive_elects_at_once_when_every_replica_answered() -> None:
    state = PartitionState(replicas=(1, 2, 3), isr=(), leader=NO_LEADER, leader_epoch=4)
    image = cluster(state)
    outcome = run(image, [log(1, 3, 20), log(2, 3, 25), log(3, 2, 90)], strategy=PROACTIVE)
    assert after(image, outcome).leader == 2
    assert outcome.records[0] == UncleanRecoveryRecord(
        T, 0, "proactive", 2, (log(1, 3, 20), log(2, 3, 25), log(3, 2, 90))
    )


def test_proactive_with_no_answer_after_its_window_keeps_waiting() -> None:
    image = cluster(FENCED_ELR, fenced=(2,))
    outcome = run(image, [], strategy=PROACTIVE, window_over=True)
    assert outcome.waiting == {TP: (1, 2, 3)}
    assert not any(isinstance(r, PartitionChangeRecord) for r in outcome.records)


def test_proactive_decide_ignores_the_window_until_it_is_over() -> None:
    facts = BrokerFacts(frozenset({1, 3}))
    answers = [log(3, 1, 5)]
    waiting = decide(FENCED_ELR, PROACTIVE, facts, epochs(1, 2, 3), answers, window_over=False)
    assert (waiting.leader, waiting.waiting_for) == (None, (1, 2))
    over = decide(FENCED_ELR, PROACTIVE, facts, epochs(1, 2, 3), answers, window_over=True)
    assert (over.leader, over.waiting_for) == (log(3, 1, 5), (1, 2))


# Manual and none.


def test_manual_is_pending_but_never_asked_nor_elected_automatically() -> None:
    image = cluster(STEP_8)
    brokers = lifecycle(image, defaults(MANUAL))
    (pending,) = pending_recoveries(image, brokers)
    assert pending.strategy is MANUAL
    assert replicas_to_ask(STEP_8, MANUAL) == (1, 2, 3)
    assert replicas_to_inspect([pending], brokers.broker_facts(image)) == {}
    every = [log(1, 1, 10), log(2, 1, 12), log(3, 0, 7)]
    facts = brokers.broker_facts(image)
    decision = decide(STEP_8, MANUAL, facts, epochs(1, 2, 3), every, window_over=True)
    assert (decision.leader, decision.waiting_for) == (None, ())
    outcome = run(image, every, strategy=MANUAL, window_over=True)
    assert (outcome.records, outcome.events, outcome.waiting) == ((), (), {})


def test_choose_manually_elects_the_chosen_replica_even_with_a_shorter_log() -> None:
    image = cluster(STEP_8)
    brokers = lifecycle(image, defaults(MANUAL))
    answers = [log(3, 0, 7), log(2, 1, 12), log(1, 0, 1, broker_epoch=1)]
    error, message, outcome = choose_manually(image, brokers, TP, 3, answers)
    assert (error, message) == (ErrorCode.none, None)
    # The usable answers only (broker 1's is of another incarnation), in replica order.
    assert outcome.records == (
        UncleanRecoveryRecord(T, 0, "manual", 3, (log(2, 1, 12), log(3, 0, 7))),
        PartitionChangeRecord(T, 0, isr=(3,), leader=3, last_known_elr=()),
    )
    state = after(image, outcome)
    assert (state.leader, state.isr, state.last_known_elr) == (3, (3,), ())
    assert state.leader_epoch == STEP_8.leader_epoch + 1
    (event,) = outcome.events
    assert event.event.cause is ChangeCause.UNCLEAN_RECOVERY
    assert event.event.potential_data_loss
    # Broker 1, outside the LastKnownELR, may be chosen too: the operator decides.
    error, _, outcome = choose_manually(image, brokers, TP, 1, [])
    assert error is ErrorCode.none
    assert outcome.records[0] == UncleanRecoveryRecord(T, 0, "manual", 1, ())
    assert after(image, outcome).leader == 1


def test_choose_manually_refusals() -> None:
    led = PartitionState(replicas=(1, 2, 3), isr=(1, 2), leader=1)
    records: list[MetadataRecord] = [broker(1), broker(2), broker(3), broker(4, fenced=True)]
    records += topic("t", T, STEP_8, led)
    records.append(broker(5))
    image = replay(records)
    brokers = lifecycle(image, defaults(MANUAL))
    fenced_replica = replay([broker(3, fenced=True)], image)

    cases = [
        (image, TopicPartition(UUID(int=99), 0), 2, ErrorCode.unknown_topic_or_partition),
        (image, TopicPartition(T, 7), 2, ErrorCode.unknown_topic_or_partition),
        (image, TopicPartition(T, 1), 2, ErrorCode.election_not_needed),
        (image, TP, 5, ErrorCode.invalid_request),  # unfenced, not a replica
        (image, TP, 4, ErrorCode.invalid_request),  # fenced, not a replica
        (fenced_replica, TP, 3, ErrorCode.ineligible_replica),  # a fenced replica
    ]
    for at, partition, leader, expected in cases:
        error, message, outcome = choose_manually(at, brokers, partition, leader, [])
        assert error is expected, (partition, leader)
        assert message
        assert (outcome.records, outcome.events) == ((), ())


def test_strategy_none_never_recovers() -> None:
    image = cluster(STEP_8)
    brokers = lifecycle(image, defaults(NONE))
    assert not needs_unclean_recovery(STEP_8, brokers.broker_facts(image), rules(NONE))
    assert pending_recoveries(image, brokers) == []
    every = [log(1, 1, 10), log(2, 1, 12), log(3, 0, 7)]
    decision = decide(
        STEP_8, NONE, brokers.broker_facts(image), epochs(1, 2, 3), every, window_over=True
    )
    assert decision.leader is None
    outcome = run(image, every, strategy=NONE, window_over=True)
    assert (outcome.records, outcome.events, outcome.waiting) == ((), (), {})


def test_recover_skips_a_partition_whose_state_moved_on() -> None:
    # Answers gathered for a partition that has since got a leader elect nothing.
    led = PartitionState(replicas=(1, 2, 3), isr=(1,), leader=1, leader_epoch=4)
    image = cluster(led)
    outcome = run(image, [log(2, 9, 99), log(3, 9, 99)])
    assert (outcome.records, outcome.events, outcome.waiting) == ((), (), {})


def test_a_topic_strategy_overrides_the_cluster_default_in_recover() -> None:
    image = cluster(STEP_8, configs={"unclean.recovery.strategy": "manual"})
    outcome = run(image, [log(2, 1, 12), log(3, 0, 7)], strategy=BALANCED)
    assert outcome.records == ()
    image = cluster(STEP_8, configs={"unclean.recovery.strategy": "proactive"})
    outcome = run(image, [log(2, 1, 12)], strategy=BALANCED, window_over=True)
    assert outcome.records[0] == UncleanRecoveryRecord(T, 0, "proactive", 2, (log(2, 1, 12),))


# lost_offsets.


def test_lost_offsets_are_what_other_answers_hold_beyond_the_new_leader() -> None:
    leader = log(2, 1, 10)
    assert lost_offsets(leader, [leader, log(3, 0, 15), log(1, 0, 12)]) == (10, 15)
    assert lost_offsets(leader, [leader, log(3, 0, 10), log(1, 0, 4)]) is None
    assert lost_offsets(leader, [leader]) is None
    assert lost_offsets(leader, []) is None
    # Only offsets count: a longer log of an older epoch still holds records that go.
    assert lost_offsets(log(2, 5, 3), [log(3, 1, 8)]) == (3, 8)


# Configuration: KIP-966's mapping.


@pytest.mark.parametrize(
    ("cluster_defaults", "overrides", "expected"),
    [
        (partition_defaults(), {}, NONE),
        (defaults(BALANCED), {}, BALANCED),
        (defaults(BALANCED), {"unclean.recovery.strategy": "manual"}, MANUAL),
        (defaults(MANUAL), {"unclean.recovery.strategy": "none"}, NONE),
        (defaults(BALANCED), {"unclean.leader.election.enable": "true"}, PROACTIVE),
        (defaults(BALANCED), {"unclean.leader.election.enable": "TRUE"}, PROACTIVE),
        (defaults(NONE), {"unclean.leader.election.enable": "true"}, PROACTIVE),
        (defaults(MANUAL), {"unclean.leader.election.enable": "false"}, MANUAL),
        (
            defaults(BALANCED),
            {"unclean.leader.election.enable": "true", "unclean.recovery.strategy": "balanced"},
            BALANCED,
        ),
        (
            partition_defaults(
                unclean_leader_election_enable=True, unclean_recovery_strategy=BALANCED
            ),
            {},
            BALANCED,
        ),
        (
            partition_defaults(
                unclean_recovery_strategy=BALANCED, unclean_recovery_manager_enabled=False
            ),
            {},
            NONE,
        ),
        (
            partition_defaults(
                unclean_recovery_strategy=BALANCED, unclean_recovery_manager_enabled=False
            ),
            {"unclean.recovery.strategy": "proactive"},
            NONE,
        ),
        (
            partition_defaults(unclean_recovery_manager_enabled=False),
            {"unclean.leader.election.enable": "true"},
            NONE,
        ),
    ],
)
def test_partition_config_maps_the_unclean_keys_as_kip_966_does(
    cluster_defaults: PartitionDefaults,
    overrides: dict[str, str],
    expected: UncleanRecoveryStrategy,
) -> None:
    image = cluster(STEP_8, configs=overrides)
    config = partition_config(image, "t", cluster_defaults)
    assert config.unclean_recovery_strategy is expected
    assert (
        config.unclean_recovery_manager_enabled is cluster_defaults.unclean_recovery_manager_enabled
    )


def test_partition_config_keeps_the_older_key_for_recovery_manager_disabled_clusters() -> None:
    manager_off = partition_defaults(min_insync_replicas=2, unclean_recovery_manager_enabled=False)
    image = cluster(
        STEP_8, configs={"unclean.leader.election.enable": "true", "min.insync.replicas": "3"}
    )
    config = partition_config(image, "t", manager_off)
    assert config.unclean_leader_election_enable
    assert config.min_insync_replicas == 3
    assert config.unclean_recovery_strategy is NONE
    # Another topic without overrides gets the cluster's values.
    assert partition_config(image, "other", manager_off) == PartitionConfig(
        min_insync_replicas=2, unclean_recovery_manager_enabled=False
    )


BASE = """\
node.id=1
cluster.id=AbCdEfGhIjKlMnOpQrStUv
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:9192
listeners=PLAINTEXT://127.0.0.1:9092
controller.listener=127.0.0.1:9192
log.dirs=/var/lib/kraft/a
"""


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ([], BALANCED),
        (["unclean.leader.election.enable=true"], PROACTIVE),
        (["unclean.leader.election.enable=false"], BALANCED),
        (["unclean.recovery.strategy=manual"], MANUAL),
        (["unclean.leader.election.enable=true", "unclean.recovery.strategy=balanced"], BALANCED),
        (["unclean.leader.election.enable=true", "unclean.recovery.strategy=manual"], MANUAL),
        (["unclean.recovery.manager.enabled=false"], NONE),
        (["unclean.recovery.manager.enabled=false", "unclean.recovery.strategy=manual"], NONE),
        (["unclean.recovery.manager.enabled=false", "unclean.leader.election.enable=true"], NONE),
    ],
)
def test_node_config_default_unclean_recovery_strategy(
    tmp_path: Path, overrides: list[str], expected: UncleanRecoveryStrategy
) -> None:
    path = tmp_path / "node.properties"
    path.write_text(BASE)
    config = load_config(path, overrides, {})
    assert config.default_unclean_recovery_strategy() is expected


def test_node_config_explicit_strategy_wins_from_the_properties_file_and_environment(
    tmp_path: Path,
) -> None:
    path = tmp_path / "node.properties"
    path.write_text(
        BASE + "unclean.leader.election.enable=true\nunclean.recovery.strategy=balanced\n"
    )
    assert load_config(path, [], {}).default_unclean_recovery_strategy() is BALANCED
    path.write_text(BASE + "unclean.leader.election.enable=true\n")
    environment = {"KRAFT_UNCLEAN_RECOVERY_STRATEGY": "balanced"}
    assert load_config(path, [], environment).default_unclean_recovery_strategy() is BALANCED
    assert load_config(path, [], {}).default_unclean_recovery_strategy() is PROACTIVE


# The controller's own broker re-registering.

OLD = UUID(int=0xA)
NEW = UUID(int=0xB)


def own_broker_cluster(local: tuple[int, UUID] | None) -> tuple[MetadataImage, BrokerLifecycle]:
    """Brokers 1 (incarnation OLD) and 2, unfenced, with sessions live from NOW_MS."""
    image = replay(
        [
            RegisterBrokerRecord(1, OLD, broker_epoch=epoch_of(1), fenced=False),
            RegisterBrokerRecord(2, UUID(int=2), broker_epoch=epoch_of(2), fenced=False),
        ]
    )
    config = LifecycleConfig(9_000, defaults(), local_broker=local)
    return image, BrokerLifecycle.activate(image, NOW_MS, config)


def test_the_local_broker_s_new_incarnation_registers_while_the_old_session_is_live() -> None:
    image, brokers = own_broker_cluster((1, NEW))
    outcome = brokers.register(image, RegistrationRequest(1, NEW), NOW_MS + 1, image.end_offset)
    assert outcome.error is ErrorCode.none
    assert outcome.broker_epoch == image.end_offset + len(outcome.change.records) - 1
    registration = outcome.change.records[-1]
    assert isinstance(registration, RegisterBrokerRecord)
    assert (registration.incarnation_id, registration.fenced) == (NEW, True)
    assert outcome.change.broker_events[0].clean_shutdown is False


def test_other_ids_or_incarnations_still_get_duplicate_broker_registration() -> None:
    image, brokers = own_broker_cluster((1, NEW))
    for request in (
        RegistrationRequest(1, UUID(int=0xC)),  # another incarnation of the local broker id
        RegistrationRequest(2, NEW),  # the local incarnation id under another broker id
        RegistrationRequest(2, UUID(int=0xC)),
    ):
        outcome = brokers.register(image, request, NOW_MS + 1, image.end_offset)
        assert outcome.error is ErrorCode.duplicate_broker_registration, request
        assert outcome.change.records == ()
    # Without a local broker, the new incarnation waits for the old session too.
    image, brokers = own_broker_cluster(None)
    outcome = brokers.register(image, RegistrationRequest(1, NEW), NOW_MS + 1, image.end_offset)
    assert outcome.error is ErrorCode.duplicate_broker_registration


# A property: balanced elects only with every LastKnownELR answer, and a best one.

replica_sets = st.lists(st.integers(1, 6), min_size=1, max_size=5, unique=True)


@st.composite
def balanced_cases(
    draw: st.DrawFn,
) -> tuple[PartitionState, frozenset[int], list[ReplicaLogState]]:
    replicas = tuple(draw(replica_sets))
    last_known_elr = tuple(r for r in replicas if draw(st.booleans()))
    state = PartitionState(replicas, (), NO_LEADER, last_known_elr=last_known_elr)
    unfenced = frozenset(r for r in replicas if draw(st.integers(0, 4)) > 0)
    answers = [
        log(
            b,
            draw(st.integers(-1, 3)),
            draw(st.integers(0, 4)),
            broker_epoch=epoch_of(b) - draw(st.sampled_from([0, 0, 0, 1])),
        )
        for b in draw(st.lists(st.integers(1, 7), max_size=8))
    ]
    return state, unfenced, answers


@given(balanced_cases(), st.booleans())
def test_balanced_elects_only_with_the_whole_quorum_and_then_a_maximal_log(
    case: tuple[PartitionState, frozenset[int], list[ReplicaLogState]], window_over: bool
) -> None:
    state, unfenced, answers = case
    facts = BrokerFacts(unfenced)
    registered = epochs(1, 2, 3, 4, 5, 6, 7)
    decision = decide(state, BALANCED, facts, registered, answers, window_over=window_over)
    quorum = state.last_known_elr or state.replicas
    # Answers of fenced brokers or earlier incarnations never count; of the others, a
    # broker's last one does.
    good = {
        a.broker_id: a
        for a in answers
        if a.broker_id in unfenced and a.broker_epoch == registered[a.broker_id]
    }
    assert set(decision.waiting_for) == {b for b in quorum if b not in good}
    if any(b not in good for b in quorum):
        assert decision.leader is None
        return
    assert decision.leader is not None
    assert decision.leader.broker_id in quorum
    assert decision.leader == good[decision.leader.broker_id]
    rank = (decision.leader.last_written_leader_epoch, decision.leader.log_end_offset)
    assert all(rank >= (good[b].last_written_leader_epoch, good[b].log_end_offset) for b in quorum)
    # Between equals, the first in replica order.
    first_best = next(
        b
        for b in state.replicas
        if b in quorum and (good[b].last_written_leader_epoch, good[b].log_end_offset) == rank
    )
    assert decision.leader.broker_id == first_best
