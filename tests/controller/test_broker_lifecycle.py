"""Broker lifecycle on the active controller (controller/broker_lifecycle.py).

A fake clock and a real metadata image: every record the lifecycle produces is replayed with
`MetadataDelta` at the offsets the log would give it, and the tests check the image. Covers
registration (fenced, broker epoch = record offset), catching up and unfencing (with
re-election), session expiry (the reference's 5.3.3 steps 3-5), controlled shutdown, clean and
unclean re-registration (5.3.3 steps 6-8), the "unclean until caught up" set, and Kafka's
error codes for duplicate registrations, stale epochs and unknown brokers.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID, uuid4

from kio.schema.errors import ErrorCode

from controller.broker_lifecycle import (
    NO_BROKER_EPOCH,
    BrokerLifecycle,
    BrokerTransition,
    HeartbeatOutcome,
    HeartbeatRequest,
    LifecycleConfig,
    RegistrationOutcome,
    RegistrationRequest,
)
from controller.image import MetadataDelta, MetadataImage
from controller.partition_change import (
    AlterPartitionRequest,
    ChangeCause,
    Election,
    PartitionConfig,
    TopicPartition,
    alter_partition,
    fence_broker,
)
from controller.partition_state import NO_LEADER, PartitionState
from controller.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    ConfigResourceType,
    FenceBrokerRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)
from controller.topic_config import UncleanRecoveryStrategy
from tests.controller.images import partition_defaults

TIMEOUT_MS = 9_000
TOPIC_ID = UUID(int=7)
P0 = TopicPartition(TOPIC_ID, 0)
P1 = TopicPartition(TOPIC_ID, 1)
MIN_ISR_2 = LifecycleConfig(TIMEOUT_MS, partition_defaults(min_insync_replicas=2))
BALANCED = LifecycleConfig(
    TIMEOUT_MS,
    partition_defaults(
        min_insync_replicas=2, unclean_recovery_strategy=UncleanRecoveryStrategy.BALANCED
    ),
)


class Cluster:
    """An active controller's view: the image, the lifecycle state and a fake clock."""

    def __init__(self, config: LifecycleConfig = MIN_ISR_2) -> None:
        self.config = config
        self.image = MetadataImage.EMPTY
        self.now_ms = 1_000
        self.lifecycle = BrokerLifecycle.activate(self.image, self.now_ms, config)
        self.incarnations: dict[int, UUID] = {}

    def append(self, records: Sequence[MetadataRecord]) -> None:
        """Appends and replays `records` at the next offsets of the metadata log."""
        delta = MetadataDelta(self.image)
        for record in records:
            delta.replay(record)
        self.image = delta.apply(self.image.end_offset + len(records), 1)

    def register(
        self, broker: int, *, previous_epoch: int = NO_BROKER_EPOCH, new_incarnation: bool = True
    ) -> RegistrationOutcome:
        if new_incarnation or broker not in self.incarnations:
            self.incarnations[broker] = uuid4()
        request = RegistrationRequest(
            broker, self.incarnations[broker], previous_broker_epoch=previous_epoch
        )
        outcome = self.lifecycle.register(
            self.image, request, self.now_ms, next_offset=self.image.end_offset
        )
        self.append(outcome.change.records)
        return outcome

    def heartbeat(
        self,
        broker: int,
        *,
        epoch: int | None = None,
        offset: int | None = None,
        want_fence: bool = False,
        want_shutdown: bool = False,
    ) -> HeartbeatOutcome:
        """A heartbeat; by default with the current epoch, caught up with the whole log."""
        request = HeartbeatRequest(
            broker,
            self.epoch(broker) if epoch is None else epoch,
            self.image.end_offset - 1 if offset is None else offset,
            want_fence,
            want_shutdown,
        )
        outcome = self.lifecycle.heartbeat(
            self.image, request, self.now_ms, next_offset=self.image.end_offset
        )
        self.append(outcome.change.records)
        return outcome

    def expire(self) -> list[MetadataRecord]:
        change = self.lifecycle.expire_sessions(self.image, self.now_ms)
        self.append(change.records)
        return list(change.records)

    def start(self, *brokers: int) -> None:
        """Registers the brokers and unfences them."""
        for broker in brokers:
            assert self.register(broker).error is ErrorCode.none
            assert not self.heartbeat(broker).is_fenced

    def create_partitions(self, *states: PartitionState, min_isr: int | None = None) -> None:
        records: list[MetadataRecord] = [TopicRecord("t", TOPIC_ID)]
        records += [PartitionRecord.of(TOPIC_ID, i, s) for i, s in enumerate(states)]
        if min_isr is not None:
            records.append(
                ConfigRecord(ConfigResourceType.TOPIC, "t", "min.insync.replicas", str(min_isr))
            )
        self.append(records)

    def epoch(self, broker: int) -> int:
        return self.image.brokers[broker].broker_epoch

    def fenced(self, broker: int) -> bool:
        return self.image.brokers[broker].fenced

    def partition(self, tp: TopicPartition = P0) -> PartitionState:
        state = self.image.partition(tp.topic_id, tp.partition_id)
        assert state is not None
        return state


def shape(s: PartitionState) -> tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Leader, ISR, ELR, LastKnownELR: what the reference's examples state."""
    return s.leader, s.isr, s.elr, s.last_known_elr


def led_by_1() -> PartitionState:
    return PartitionState(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1)


def all_fenced_by_session_expiry(cluster: Cluster) -> None:
    """5.3.3 steps 1-5: brokers 1, 2, 3 stop heartbeating and are fenced one by one."""
    cluster.start(1, 2, 3)
    cluster.create_partitions(led_by_1())
    cluster.now_ms += TIMEOUT_MS + 1
    records = cluster.expire()
    assert [r for r in records if isinstance(r, FenceBrokerRecord)] == [
        FenceBrokerRecord(b, cluster.epoch(b)) for b in (1, 2, 3)
    ]
    assert shape(cluster.partition()) == (NO_LEADER, (), (2, 3), ())


# Registration and unfencing.


def test_registration_is_fenced_and_its_epoch_is_the_record_offset() -> None:
    cluster = Cluster()
    cluster.append([TopicRecord("other", uuid4())])  # so the record does not land at offset 0
    outcome = cluster.register(1)
    assert outcome.error is ErrorCode.none
    assert outcome.broker_epoch == 1 == cluster.image.end_offset - 1
    assert outcome.change.records == (
        RegisterBrokerRecord(1, cluster.incarnations[1], broker_epoch=1, fenced=True),
    )
    assert cluster.fenced(1)
    assert cluster.epoch(1) == 1
    [event] = outcome.change.broker_events
    assert event.transition is BrokerTransition.REGISTERED
    assert event.clean_shutdown is None  # a first registration has nothing to be clean about


def test_broker_stays_fenced_until_it_reaches_its_registration_record() -> None:
    cluster = Cluster()
    epoch = cluster.register(1).broker_epoch
    behind = cluster.heartbeat(1, offset=epoch - 1)
    assert (behind.error, behind.is_caught_up, behind.is_fenced) == (ErrorCode.none, False, True)
    assert behind.change.records == ()
    assert cluster.fenced(1)

    caught_up = cluster.heartbeat(1, offset=epoch)
    assert (caught_up.is_caught_up, caught_up.is_fenced, caught_up.should_shut_down) == (
        True,
        False,
        False,
    )
    assert caught_up.change.records == (UnfenceBrokerRecord(1, epoch),)
    assert not cluster.fenced(1)
    # Unfenced already: later heartbeats change nothing.
    assert cluster.heartbeat(1).change.records == ()


def test_want_fence_keeps_a_caught_up_broker_fenced() -> None:
    cluster = Cluster()
    cluster.register(1)
    outcome = cluster.heartbeat(1, want_fence=True)
    assert (outcome.is_caught_up, outcome.is_fenced, outcome.change.records) == (True, True, ())


def test_want_fence_fences_an_unfenced_broker() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_partitions(PartitionState(replicas=(1, 2), isr=(1, 2), leader=1))
    outcome = cluster.heartbeat(1, want_fence=True)
    assert outcome.is_fenced and not outcome.should_shut_down
    assert outcome.change.records[0] == FenceBrokerRecord(1, cluster.epoch(1))
    assert cluster.fenced(1)
    assert shape(cluster.partition()) == (2, (2,), (1,), ())  # case C: ISR below MinISR 2


def test_unfencing_re_elects_leaderless_partitions_from_the_elr() -> None:
    cluster = Cluster()
    all_fenced_by_session_expiry(cluster)
    outcome = cluster.heartbeat(3)
    assert not outcome.is_fenced
    records = outcome.change.records
    assert records[0] == UnfenceBrokerRecord(3, cluster.epoch(3))
    assert records[1:] == (PartitionChangeRecord(TOPIC_ID, 0, isr=(3,), leader=3, elr=(2,)),)
    [event] = outcome.change.partition_events
    assert (event.partition, event.event.cause, event.event.election) == (
        P0,
        ChangeCause.BROKER_UNFENCED,
        Election.ELR,
    )
    # Case B: the elected ELR member moves to the ISR; replay gives what the lifecycle predicted.
    assert shape(cluster.partition()) == (3, (3,), (2,), ())
    assert cluster.partition().leader_epoch == event.event.leader_epoch


# Sessions.


def test_session_expires_after_the_timeout_not_before() -> None:
    cluster = Cluster(LifecycleConfig(TIMEOUT_MS, partition_defaults()))
    cluster.start(1, 2)
    cluster.create_partitions(PartitionState(replicas=(1, 2), isr=(1, 2), leader=1))
    start = cluster.now_ms
    cluster.now_ms = start + TIMEOUT_MS // 2
    cluster.heartbeat(2)
    cluster.now_ms = start + TIMEOUT_MS
    assert cluster.expire() == []
    assert not cluster.fenced(1)

    cluster.now_ms += 1
    records = cluster.expire()
    assert records[0] == FenceBrokerRecord(1, cluster.epoch(1))
    assert cluster.fenced(1)
    assert not cluster.fenced(2)  # it heartbeated half-way
    # Case D: the ISR still meets MinISR 1, so broker 1 does not join the ELR.
    assert shape(cluster.partition()) == (2, (2,), (), ())


def test_a_newly_active_controller_starts_every_session_afresh() -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.now_ms += 10 * TIMEOUT_MS  # long silence, then a controller failover
    cluster.lifecycle = BrokerLifecycle.activate(cluster.image, cluster.now_ms, cluster.config)
    cluster.now_ms += TIMEOUT_MS
    assert cluster.expire() == []
    cluster.now_ms += 1
    assert cluster.expire() == [FenceBrokerRecord(1, cluster.epoch(1))]


def test_fenced_brokers_have_no_session_to_expire() -> None:
    cluster = Cluster()
    cluster.register(1)
    cluster.now_ms += 10 * TIMEOUT_MS
    assert cluster.expire() == []


# Controlled shutdown.


def test_controlled_shutdown_moves_leadership_then_lets_the_broker_stop() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    follower = PartitionState(replicas=(2, 1, 3), isr=(2, 1, 3), leader=2)
    cluster.create_partitions(led_by_1(), follower, min_isr=3)
    epoch = cluster.epoch(1)

    first = cluster.heartbeat(1, want_shutdown=True)
    assert (first.is_fenced, first.should_shut_down) == (False, False)
    assert first.change.records == (
        BrokerRegistrationChangeRecord(1, epoch, in_controlled_shutdown=True),
        # The broker stays a complete replica: with the ISR below MinISR 3 it joins the ELR.
        PartitionChangeRecord(TOPIC_ID, 0, isr=(2, 3), leader=2, elr=(1,)),
        PartitionChangeRecord(TOPIC_ID, 1, isr=(2, 3), elr=(1,)),
    )
    assert {e.event.cause for e in first.change.partition_events} == {
        ChangeCause.CONTROLLED_SHUTDOWN
    }
    assert cluster.image.brokers[1].in_controlled_shutdown
    assert shape(cluster.partition(P0)) == (2, (2, 3), (1,), ())
    assert shape(cluster.partition(P1)) == (2, (2, 3), (1,), ())

    # Nothing left to move, but broker 3 has not seen the moves yet (Kafka's
    # lowestActiveOffset barrier): clients could still be sent to broker 1.
    cluster.heartbeat(2)
    waiting = cluster.heartbeat(1, want_shutdown=True)
    assert (waiting.is_fenced, waiting.should_shut_down, waiting.change.records) == (
        False,
        False,
        (),
    )

    cluster.heartbeat(3)
    second = cluster.heartbeat(1, want_shutdown=True)
    assert (second.is_fenced, second.should_shut_down) == (True, True)
    assert second.change.records == (FenceBrokerRecord(1, epoch),)
    assert [e.transition for e in second.change.broker_events] == [BrokerTransition.SHUT_DOWN]
    assert cluster.fenced(1)
    # Fenced, the broker keeps its ELR places: that is what they are for.
    assert shape(cluster.partition(P0)) == (2, (2, 3), (1,), ())

    # It restarts with its clean-shutdown marker: nothing to exclude.
    restart = cluster.register(1, previous_epoch=epoch)
    assert [type(r) for r in restart.change.records] == [RegisterBrokerRecord]
    assert restart.change.broker_events[0].clean_shutdown is True
    assert not cluster.image.brokers[1].in_controlled_shutdown


def test_a_broker_that_leads_nothing_shuts_down_at_once() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_partitions(PartitionState(replicas=(2, 1), isr=(2, 1), leader=2))
    outcome = cluster.heartbeat(1, want_shutdown=True)
    assert (outcome.is_fenced, outcome.should_shut_down) == (True, True)
    assert outcome.change.records[0] == FenceBrokerRecord(1, cluster.epoch(1))
    assert shape(cluster.partition()) == (2, (2,), (1,), ())


def test_a_fenced_broker_may_shut_down_at_once() -> None:
    cluster = Cluster()
    cluster.register(1)
    outcome = cluster.heartbeat(1, want_shutdown=True)
    assert (outcome.is_fenced, outcome.should_shut_down, outcome.change.records) == (
        True,
        True,
        (),
    )


# Re-registration: clean and unclean (5.2, 5.3.3).


def test_example_5_3_3_steps_6_to_8_unclean_registrations() -> None:
    cluster = Cluster(BALANCED)
    all_fenced_by_session_expiry(cluster)

    # Step 6: broker 1 was in neither the ISR nor the ELR: no partition change.
    step6 = cluster.register(1)
    assert [type(r) for r in step6.change.records] == [RegisterBrokerRecord]
    assert step6.change.broker_events[0].clean_shutdown is False
    assert shape(cluster.partition()) == (NO_LEADER, (), (2, 3), ())

    # Step 7: broker 2 leaves the ELR for the LastKnownELR.
    step7 = cluster.register(2)
    assert step7.change.records[0] == PartitionChangeRecord(
        TOPIC_ID, 0, elr=(3,), last_known_elr=(2,)
    )
    assert shape(cluster.partition()) == (NO_LEADER, (), (3,), (2,))

    # Step 8: so does broker 3; balanced unclean recovery is now needed.
    step8 = cluster.register(3)
    assert shape(cluster.partition()) == (NO_LEADER, (), (), (2, 3))
    [event] = step8.change.partition_events
    assert event.event.cause is ChangeCause.UNCLEAN_REGISTRATION
    assert event.event.needs_unclean_recovery
    # The registration record comes last, and its offset is the broker epoch.
    assert isinstance(step8.change.records[-1], RegisterBrokerRecord)
    assert step8.broker_epoch == cluster.image.end_offset - 1 == cluster.epoch(3)


def test_clean_re_registration_keeps_the_elr() -> None:
    cluster = Cluster()
    all_fenced_by_session_expiry(cluster)
    outcome = cluster.register(2, previous_epoch=cluster.epoch(2))
    assert [type(r) for r in outcome.change.records] == [RegisterBrokerRecord]
    assert outcome.change.broker_events[0].clean_shutdown is True
    assert shape(cluster.partition()) == (NO_LEADER, (), (2, 3), ())
    # Caught up and unfenced, it is elected from the ELR (case B).
    cluster.heartbeat(2)
    assert shape(cluster.partition()) == (2, (2,), (3,), ())


def test_a_wrong_previous_epoch_is_an_unclean_shutdown() -> None:
    cluster = Cluster()
    all_fenced_by_session_expiry(cluster)
    cluster.register(2, previous_epoch=cluster.epoch(2) - 1)
    assert shape(cluster.partition()) == (NO_LEADER, (), (3,), (2,))


def test_the_unclean_exclusion_survives_a_controller_failover() -> None:
    """The exclusion is the replica's absence from the ISR and ELR, which the metadata log
    keeps: a controller that takes over with a fresh lifecycle still never elects it cleanly,
    and only its leader's word brings it back into the ISR (case E, then G)."""
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_partitions(PartitionState(replicas=(1, 2), isr=(1, 2), leader=1))
    cluster.heartbeat(1, want_fence=True)
    cluster.register(1)  # unclean: it leaves the ELR for the LastKnownELR
    cluster.heartbeat(1)
    assert not cluster.fenced(1)
    state = cluster.partition()
    assert shape(state) == (2, (2,), (), (1,))

    cluster.lifecycle = BrokerLifecycle.activate(cluster.image, cluster.now_ms, cluster.config)
    facts = cluster.lifecycle.broker_facts(cluster.image)
    # Its leader gone, the partition has no clean candidate: broker 1 is not one.
    leader_fenced = fence_broker(state, 2, facts, PartitionConfig(2))
    assert leader_fenced is not None
    assert shape(leader_fenced.state) == (NO_LEADER, (), (2,), (1,))

    request = AlterPartitionRequest(2, state.leader_epoch, state.partition_epoch, (1, 2))
    outcome = alter_partition(state, request, facts, PartitionConfig(2))
    assert outcome.error is ErrorCode.none and outcome.change is not None
    assert shape(outcome.change.state) == (2, (1, 2), (), ())


def test_without_the_elr_an_unclean_last_isr_member_leads_again_when_unfenced() -> None:
    """Kafka without KIP-966: the last ISR member stays in the ISR while down and is elected
    again on return, whatever its shutdown (the reference's "data diverge" scenario)."""
    cluster = Cluster(
        LifecycleConfig(TIMEOUT_MS, partition_defaults(eligible_leader_replicas_enable=False))
    )
    cluster.start(1, 2)
    cluster.create_partitions(PartitionState(replicas=(1, 2), isr=(1, 2), leader=1))
    cluster.heartbeat(1, want_fence=True)
    assert shape(cluster.partition()) == (2, (2,), (), ())
    cluster.heartbeat(2, want_fence=True)
    assert shape(cluster.partition()) == (NO_LEADER, (2,), (), ())
    cluster.register(2)
    cluster.heartbeat(2)
    assert shape(cluster.partition()) == (2, (2,), (), ())


# Errors.


def test_a_live_broker_id_refuses_another_incarnation_until_its_session_expires() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_partitions(PartitionState(replicas=(1, 2), isr=(1, 2), leader=1))
    epoch = cluster.epoch(1)
    cluster.now_ms += TIMEOUT_MS
    refused = cluster.register(1)
    assert refused.error is ErrorCode.duplicate_broker_registration
    assert (refused.broker_epoch, refused.change.records) == (NO_BROKER_EPOCH, ())
    assert cluster.epoch(1) == epoch

    # Expired (even before expire_sessions ran): the new incarnation takes over, uncleanly,
    # so the old one leaves the ISR and leadership first.
    cluster.now_ms += 1
    taken = cluster.register(1)
    assert taken.error is ErrorCode.none
    assert cluster.fenced(1) and cluster.epoch(1) == taken.broker_epoch > epoch
    assert shape(cluster.partition()) == (2, (2,), (), (1,))


def test_the_same_incarnation_may_register_again_while_live() -> None:
    cluster = Cluster()
    cluster.start(1)
    epoch = cluster.epoch(1)
    retry = cluster.register(1, new_incarnation=False)
    assert retry.error is ErrorCode.none
    assert retry.change.broker_events[0].clean_shutdown is None  # not a new incarnation
    # Amended: still the same running broker, so it keeps its epoch and stays unfenced.
    assert retry.broker_epoch == epoch == cluster.epoch(1)
    assert not cluster.fenced(1)
    assert cluster.heartbeat(1).error is ErrorCode.none


def test_heartbeats_with_a_stale_epoch_or_an_unknown_id_are_refused() -> None:
    cluster = Cluster()
    cluster.start(1)
    old_epoch = cluster.epoch(1)
    cluster.heartbeat(1, want_fence=True)
    cluster.register(1)
    stale = cluster.heartbeat(1, epoch=old_epoch)
    assert stale.error is ErrorCode.stale_broker_epoch
    assert stale.change.records == ()
    assert cluster.heartbeat(1).error is ErrorCode.none

    unknown = cluster.lifecycle.heartbeat(cluster.image, HeartbeatRequest(9, 0, 0), 0, 0)
    assert unknown.error is ErrorCode.broker_id_not_registered


def test_a_new_controller_releases_a_shutting_down_broker_once_all_saw_its_log() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_partitions(PartitionState(replicas=(1, 2), isr=(1, 2), leader=1))
    assert not cluster.heartbeat(1, want_shutdown=True).should_shut_down
    cluster.lifecycle = BrokerLifecycle.activate(cluster.image, cluster.now_ms, cluster.config)
    # The new controller does not know which offset broker 2 reached: it waits to hear.
    assert not cluster.heartbeat(1, want_shutdown=True).should_shut_down
    cluster.heartbeat(2)
    assert cluster.heartbeat(1, want_shutdown=True).should_shut_down
    assert cluster.fenced(1)
