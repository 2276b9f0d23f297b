"""Events derived from metadata records: what each state change reports, and the bound."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from controller.events import EventLog
from controller.image import MetadataImage, MetadataReplayer
from controller.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    ConfigResourceType,
    FenceBrokerRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    encode_record,
)
from kraft.messages import Entry, EntryKind
from tests.admin.events_helpers import rendered, rendered_events

TOPIC_ID = UUID(int=7)
TIME = "2026-01-01T00:00:00.000+00:00"


def entries(records: list[MetadataRecord], start: int = 0) -> list[Entry]:
    return [Entry(start + index, 1, encode_record(record)) for index, record in enumerate(records)]


def created() -> list[MetadataRecord]:
    return [
        RegisterBrokerRecord(1, UUID(int=1), 10),
        UnfenceBrokerRecord(1, 10),
        TopicRecord("orders", TOPIC_ID),
        PartitionRecord(TOPIC_ID, 0, replicas=(1, 2, 3), isr=(1, 2, 3), leader=1),
    ]


def image_after(records: list[MetadataRecord]) -> MetadataImage:
    return MetadataImage.from_records(records, end_offset=len(records), epoch=1)


def test_creation_reports_brokers_topic_and_partition_with_epochs() -> None:
    events = rendered_events(MetadataImage.EMPTY, entries(created()), TIME)
    assert [e.type for e in events] == [
        "broker_registered",
        "broker_unfenced",
        "topic_created",
        "partition_created",
    ]
    assert events[0].broker == 1 and events[0].broker_epoch == 10
    partition = events[3]
    assert (partition.topic, partition.partition, partition.leader) == ("orders", 0, 1)
    assert (partition.leader_epoch, partition.partition_epoch) == (0, 0)
    assert partition.isr == [1, 2, 3]
    assert [e.offset for e in events] == [0, 1, 2, 3]
    assert all(e.time == TIME and not e.data_loss_possible for e in events)


def test_a_clean_leader_change_and_an_isr_shrink_carry_the_new_epochs() -> None:
    before = image_after(created())
    change = PartitionChangeRecord(TOPIC_ID, 0, leader=2, isr=(2, 3))
    events = rendered_events(before, entries([change], start=4), TIME)
    assert [e.type for e in events] == ["leader_changed", "isr_changed"]
    leader = events[0]
    assert (leader.previous_leader, leader.leader) == (1, 2)
    assert (leader.leader_epoch, leader.partition_epoch) == (1, 1)
    assert events[1].isr == [2, 3] and events[1].detail == "isr was [1, 2, 3]"


def test_changes_within_one_batch_build_on_each_other() -> None:
    records = [
        *created(),
        PartitionChangeRecord(TOPIC_ID, 0, leader=2),
        PartitionChangeRecord(TOPIC_ID, 0, leader=3),
    ]
    events = [e for e in rendered_events(MetadataImage.EMPTY, entries(records), TIME)]
    leaders = [e for e in events if e.type == "leader_changed"]
    assert [(e.previous_leader, e.leader, e.leader_epoch) for e in leaders] == [
        (1, 2, 1),
        (2, 3, 2),
    ]


def test_a_leader_from_outside_isr_and_elr_is_an_unclean_election() -> None:
    before = image_after(
        [*created(), PartitionChangeRecord(TOPIC_ID, 0, leader=-1, isr=(1,), elr=(2,))]
    )
    events = rendered_events(
        before, entries([PartitionChangeRecord(TOPIC_ID, 0, leader=3, isr=(3,))]), TIME
    )
    unclean = events[0]
    assert unclean.type == "unclean_election" and unclean.data_loss_possible
    assert (unclean.leader, unclean.leader_epoch) == (3, 2)


def test_an_elr_member_taking_over_is_clean_and_losing_the_leader_is_offline() -> None:
    before = image_after(created())
    offline = PartitionChangeRecord(TOPIC_ID, 0, leader=-1, isr=(1,), elr=(2, 3))
    elected = PartitionChangeRecord(TOPIC_ID, 0, leader=2, isr=(2,), elr=(3,))
    events = rendered_events(before, entries([offline, elected]), TIME)
    assert [e.type for e in events] == [
        "partition_offline",
        "isr_changed",
        "elr_changed",
        "leader_changed",
        "isr_changed",
        "elr_changed",
    ]
    assert not any(e.data_loss_possible for e in events)
    assert events[2].elr == [2, 3]


def test_fencing_controlled_shutdown_configs_and_deletion() -> None:
    before = image_after(created())
    records: list[MetadataRecord] = [
        FenceBrokerRecord(1, 10),
        BrokerRegistrationChangeRecord(1, 10, fenced=False, in_controlled_shutdown=True),
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "retention.ms", "1000"),
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "retention.ms", None),
        RemoveTopicRecord(TOPIC_ID),
    ]
    events = rendered_events(before, entries(records), TIME)
    assert [e.type for e in events] == [
        "broker_fenced",
        "broker_unfenced",
        "broker_controlled_shutdown",
        "config_changed",
        "config_changed",
        "topic_deleted",
    ]
    assert events[3].detail == "retention.ms=1000" and events[4].detail == "retention.ms deleted"
    assert events[5].topic == "orders"


def test_leader_change_entries_are_the_quorum_s_not_events() -> None:
    entry = Entry(0, 1, b"", EntryKind.LEADER_CHANGE)
    assert rendered_events(MetadataImage.EMPTY, [entry], TIME) == []


def test_the_event_log_follows_the_replayer_and_keeps_the_newest() -> None:
    replayer = MetadataReplayer()
    log = EventLog(
        lambda: replayer.image, capacity=3, clock=lambda: datetime(2026, 1, 1, tzinfo=UTC)
    )
    batch = entries(created())
    for listener in (replayer, log):
        listener.on_commit(batch)
    change = entries([PartitionChangeRecord(TOPIC_ID, 0, leader=2)], start=len(batch))
    for listener in (replayer, log):
        listener.on_commit(change)
    kept = rendered(log.events())
    assert [e.type for e in kept] == ["topic_created", "partition_created", "leader_changed"]
    assert kept[-1].time == "2026-01-01T00:00:00.000+00:00"
    assert kept[-1].previous_leader == 1
