"""Events of unclean recoveries (controller/events.py, as the admin API renders them): an
UncleanRecoveryRecord that elects is the one potential data-loss event of the recovery, with what
the controller saw (strategy, each replica's log, the offsets that may be lost); the
PartitionChangeRecord it precedes is a plain leader change. A waiting record reports whom the
recovery waits for, with no data loss."""

from __future__ import annotations

from uuid import UUID

from admin.models import Event
from controller.events import EventLog
from controller.image import MetadataDelta, MetadataImage
from controller.partition_state import NO_LEADER
from controller.records import (
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    ReplicaLogState,
    TopicRecord,
    UncleanRecoveryRecord,
    encode_record,
)
from kraft.messages import Entry
from tests.admin.events_helpers import rendered, rendered_events

TOPIC_ID = UUID(int=7)
TIME = "2026-01-01T00:00:00.000+00:00"

TWO = ReplicaLogState(2, 202, 1, 12)
THREE = ReplicaLogState(3, 303, 0, 15)


def entries(records: list[MetadataRecord], start: int) -> list[Entry]:
    return [Entry(start + index, 1, encode_record(record)) for index, record in enumerate(records)]


def leaderless() -> tuple[MetadataImage, int]:
    """Example 5.3.3 step 8: partition orders-0 (and orders-1) leaderless, ISR and ELR
    empty, LastKnownELR [2, 3]; the image and its end offset."""
    records: list[MetadataRecord] = [
        RegisterBrokerRecord(1, UUID(int=1), 101, fenced=False),
        RegisterBrokerRecord(2, UUID(int=2), 202, fenced=False),
        RegisterBrokerRecord(3, UUID(int=3), 303, fenced=False),
        TopicRecord("orders", TOPIC_ID),
        *(
            PartitionRecord(
                TOPIC_ID,
                p,
                replicas=(1, 2, 3),
                isr=(),
                leader=NO_LEADER,
                leader_epoch=3,
                partition_epoch=7,
                last_known_elr=(2, 3),
            )
            for p in (0, 1)
        ),
    ]
    image = MetadataImage.from_records(records, end_offset=len(records), epoch=1)
    return image, len(records)


def elected(partition: int = 0, leader: int = 2) -> PartitionChangeRecord:
    return PartitionChangeRecord(
        TOPIC_ID, partition, isr=(leader,), leader=leader, last_known_elr=()
    )


def data_loss(events: list[Event]) -> list[Event]:
    return [e for e in events if e.data_loss_possible]


def test_an_elected_recovery_is_one_data_loss_event_with_what_the_controller_saw() -> None:
    image, end = leaderless()
    records: list[MetadataRecord] = [
        UncleanRecoveryRecord(TOPIC_ID, 0, "balanced", 2, (TWO, THREE)),
        elected(),
    ]
    events = rendered_events(image, entries(records, end), TIME)

    assert [e.type for e in events] == [
        "unclean_recovery",
        "leader_changed",
        "isr_changed",
        "elr_changed",
    ]
    (loss,) = data_loss(events)
    assert loss is events[0]
    assert (loss.offset, loss.time) == (end, TIME)
    assert (loss.topic, loss.partition, loss.leader) == ("orders", 0, 2)
    assert loss.strategy == "balanced"
    assert loss.replica_logs is not None
    assert [r.model_dump() for r in loss.replica_logs] == [
        {"broker": 2, "broker_epoch": 202, "last_written_leader_epoch": 1, "log_end_offset": 12},
        {"broker": 3, "broker_epoch": 303, "last_written_leader_epoch": 0, "log_end_offset": 15},
    ]
    # Broker 3 held offsets 12..14 beyond the new leader's end: they go.
    assert loss.lost_offsets is not None
    assert loss.lost_offsets.model_dump() == {"start": 12, "end": 15}
    assert loss.waiting_for is None
    assert loss.detail and "balanced" in loss.detail and "2" in loss.detail

    change = events[1]
    assert (change.previous_leader, change.leader) == (NO_LEADER, 2)
    assert (change.leader_epoch, change.partition_epoch) == (4, 8)
    assert change.offset == end + 1
    assert (events[2].isr, events[3].last_known_elr) == ([2], [])


def test_without_the_recovery_record_the_same_change_is_an_unclean_election() -> None:
    image, end = leaderless()
    events = rendered_events(image, entries([elected()], end), TIME)
    (loss,) = data_loss(events)
    assert loss.type == "unclean_election"
    assert loss.strategy is None and loss.replica_logs is None


def test_no_lost_offsets_when_the_new_leader_has_the_longest_log() -> None:
    image, end = leaderless()
    best = ReplicaLogState(3, 303, 2, 20)
    records: list[MetadataRecord] = [
        UncleanRecoveryRecord(TOPIC_ID, 0, "proactive", 3, (TWO, best)),
        elected(leader=3),
    ]
    events = rendered_events(image, entries(records, end), TIME)
    (loss,) = data_loss(events)
    assert (loss.type, loss.strategy, loss.leader) == ("unclean_recovery", "proactive", 3)
    assert loss.lost_offsets is None


def test_a_manual_choice_without_answers_still_reports_the_data_loss() -> None:
    image, end = leaderless()
    records: list[MetadataRecord] = [
        UncleanRecoveryRecord(TOPIC_ID, 0, "manual", 1, ()),
        elected(leader=1),
    ]
    events = rendered_events(image, entries(records, end), TIME)
    (loss,) = data_loss(events)
    assert (loss.type, loss.strategy, loss.leader) == ("unclean_recovery", "manual", 1)
    assert loss.replica_logs == [] and loss.lost_offsets is None
    assert [e.type for e in events][1] == "leader_changed"


def test_a_waiting_recovery_names_the_missing_replicas_and_loses_nothing() -> None:
    image, end = leaderless()
    waiting = UncleanRecoveryRecord(TOPIC_ID, 0, "balanced", NO_LEADER, (TWO,), (3,))
    events = rendered_events(image, entries([waiting], end), TIME)
    (event,) = events
    assert event.type == "unclean_recovery_waiting"
    assert not event.data_loss_possible
    assert (event.topic, event.partition, event.strategy) == ("orders", 0, "balanced")
    assert event.waiting_for == [3]
    assert event.replica_logs is not None
    assert [r.broker for r in event.replica_logs] == [2]
    assert event.lost_offsets is None
    assert event.detail and "3" in event.detail


def test_waiting_then_elected_in_one_batch_is_still_one_data_loss_event() -> None:
    image, end = leaderless()
    records: list[MetadataRecord] = [
        UncleanRecoveryRecord(TOPIC_ID, 0, "balanced", NO_LEADER, (TWO,), (3,)),
        # A waiting record marks nothing: this change would still be an unclean election.
        UncleanRecoveryRecord(TOPIC_ID, 0, "balanced", NO_LEADER, (), (2, 3)),
        UncleanRecoveryRecord(TOPIC_ID, 0, "balanced", 2, (TWO, THREE)),
        elected(),
    ]
    events = rendered_events(image, entries(records, end), TIME)
    assert [e.type for e in events][:3] == [
        "unclean_recovery_waiting",
        "unclean_recovery_waiting",
        "unclean_recovery",
    ]
    assert [e.type for e in data_loss(events)] == ["unclean_recovery"]


def test_a_waiting_record_does_not_hide_a_later_unclean_election() -> None:
    image, end = leaderless()
    records: list[MetadataRecord] = [
        UncleanRecoveryRecord(TOPIC_ID, 0, "balanced", NO_LEADER, (TWO,), (3,)),
        elected(),
    ]
    events = rendered_events(image, entries(records, end), TIME)
    assert [e.type for e in data_loss(events)] == ["unclean_election"]


def test_the_recovery_covers_only_its_own_partition_and_only_the_next_change() -> None:
    image, end = leaderless()
    records: list[MetadataRecord] = [
        UncleanRecoveryRecord(TOPIC_ID, 0, "balanced", 2, (TWO, THREE)),
        # Another partition elected uncleanly without a recovery record: reported.
        elected(partition=1, leader=3),
        elected(),
        # PartitionRecord 0 goes offline, then another unclean leader without a record: reported.
        PartitionChangeRecord(TOPIC_ID, 0, leader=NO_LEADER, isr=(2,)),
        PartitionChangeRecord(TOPIC_ID, 0, leader=1, isr=(1,)),
    ]
    events = rendered_events(image, entries(records, end), TIME)
    assert [(e.type, e.partition, e.leader) for e in data_loss(events)] == [
        ("unclean_recovery", 0, 2),
        ("unclean_election", 1, 3),
        ("unclean_election", 0, 1),
    ]
    offline = [e for e in events if e.type == "partition_offline"]
    assert [(e.partition, e.previous_leader) for e in offline] == [(0, 2)]


def test_an_operator_unclean_election_record_names_its_strategy() -> None:
    image, end = leaderless()
    records: list[MetadataRecord] = [
        UncleanRecoveryRecord(TOPIC_ID, 0, "elect_leaders", 2, (TWO,)),
        elected(),
    ]
    events = rendered_events(image, entries(records, end), TIME)
    (loss,) = data_loss(events)
    assert (loss.type, loss.strategy) == ("unclean_recovery", "elect_leaders")
    assert loss.lost_offsets is None


def test_a_commit_between_the_recovery_and_its_election_still_reports_one_loss() -> None:
    """The event log carries the recovery across batches: the election committed in the next
    batch is a plain leader change, not a second data-loss event."""
    image, end = leaderless()
    current = [image]
    log = EventLog(lambda: current[0])
    recovery: list[MetadataRecord] = [
        UncleanRecoveryRecord(TOPIC_ID, 0, "balanced", 2, (TWO, THREE))
    ]
    log.on_commit(entries(recovery, end))
    delta = MetadataDelta(image)
    delta.replay(elected())
    current[0] = delta.apply(end + 2, 1)
    log.on_commit(entries([elected()], end + 1))

    assert [e.type for e in data_loss(rendered(log.events()))] == ["unclean_recovery"]
    assert "leader_changed" in [e.type for e in rendered(log.events())]
