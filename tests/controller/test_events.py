"""The domain events of `controller.events`: derived from decoded records with their offsets,
typed (`EventType`, tuples, dataclasses), and the `EventLog` tells its listeners of each."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import pytest

from controller.events import (
    EventDerivation,
    EventLog,
    EventType,
    MetadataEvent,
    OffsetRange,
    ReplicaLogReport,
    derive_events,
)
from controller.image import MetadataImage, MetadataReplayer, metadata_records
from controller.partition_state import NO_LEADER
from controller.records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    MetadataRecord,
    PartitionRecord,
    ReplicaLogState,
    TopicRecord,
    UncleanRecoveryRecord,
    encode_record,
)
from kraft.messages import Entry, EntryKind

TOPIC_ID = UUID(int=7)
TIME = "2026-01-01T00:00:00.000+00:00"


def fixed_clock() -> datetime:
    return datetime.fromisoformat(TIME)


def test_events_come_from_decoded_records_at_their_offsets() -> None:
    records: list[tuple[int, MetadataRecord]] = [
        (10, TopicRecord("orders", TOPIC_ID)),
        (11, PartitionRecord(TOPIC_ID, 0, replicas=(1, 2), isr=(1, 2), leader=1)),
    ]
    created, partition = derive_events(MetadataImage.EMPTY, records, TIME)
    assert created == MetadataEvent(
        offset=10, time=TIME, type=EventType.TOPIC_CREATED, topic="orders"
    )
    assert (partition.offset, partition.type) == (11, EventType.PARTITION_CREATED)
    assert (partition.isr, partition.elr, partition.last_known_elr) == ((1, 2), (), ())


def test_an_elected_recovery_carries_the_replica_logs_and_the_lost_offsets() -> None:
    image = MetadataImage.from_records(
        [
            TopicRecord("orders", TOPIC_ID),
            PartitionRecord(TOPIC_ID, 0, replicas=(2, 3), isr=(), leader=NO_LEADER),
        ],
        end_offset=2,
        epoch=1,
    )
    logs = (ReplicaLogState(2, 202, 1, 12), ReplicaLogState(3, 303, 0, 15))
    (event,) = derive_events(
        image, [(2, UncleanRecoveryRecord(TOPIC_ID, 0, "balanced", 2, logs))], TIME
    )
    assert event.type is EventType.UNCLEAN_RECOVERY and event.data_loss_possible
    assert event.replica_logs == (ReplicaLogReport(2, 202, 1, 12), ReplicaLogReport(3, 303, 0, 15))
    assert event.lost_offsets == OffsetRange(12, 15)


def test_leader_change_entries_carry_no_metadata_record() -> None:
    topic = Entry(1, 1, encode_record(TopicRecord("orders", TOPIC_ID)))
    assert metadata_records([Entry(0, 1, b"", EntryKind.LEADER_CHANGE), topic]) == [
        (1, TopicRecord("orders", TOPIC_ID))
    ]


def test_the_event_log_tells_its_listeners_of_each_new_event_in_order() -> None:
    replayer = MetadataReplayer()
    log = EventLog(lambda: replayer.image)
    heard: list[EventType] = []
    log.listeners.append(lambda event: heard.append(event.type))
    batch = [
        Entry(0, 1, encode_record(TopicRecord("orders", TOPIC_ID))),
        Entry(1, 1, encode_record(PartitionRecord(TOPIC_ID, 0, replicas=(1,), isr=(1,), leader=1))),
    ]
    for listener in (replayer, log):
        listener.on_commit(batch)
    assert heard == [EventType.TOPIC_CREATED, EventType.PARTITION_CREATED]
    assert [e.type for e in log.events()] == heard


def test_a_transactions_events_come_once_it_ends_and_never_if_aborted() -> None:
    replayer = MetadataReplayer()
    log = EventLog(lambda: replayer.image, records_of=replayer.records_of)

    def partition(index: int) -> PartitionRecord:
        return PartitionRecord(TOPIC_ID, index, replicas=(1,), isr=(1,), leader=1)

    def commit(offset: int, *records: MetadataRecord) -> None:
        batch = [Entry(offset + i, 1, encode_record(r)) for i, r in enumerate(records)]
        for listener in (replayer, log):
            listener.on_commit(batch)

    commit(0, BeginTransactionRecord("create_topics"), TopicRecord("orders", TOPIC_ID))
    commit(2, partition(0))
    assert log.events() == []
    commit(3, partition(1), EndTransactionRecord())
    created = [(e.type, e.topic, e.partition) for e in log.events()]
    assert created == [
        (EventType.TOPIC_CREATED, "orders", None),
        (EventType.PARTITION_CREATED, "orders", 0),
        (EventType.PARTITION_CREATED, "orders", 1),
    ]

    commit(5, BeginTransactionRecord("create_topics"), TopicRecord("clicks", UUID(int=7)))
    commit(7, AbortTransactionRecord("failover"))
    assert [(e.type, e.topic, e.partition) for e in log.events()] == created


def test_a_transactions_events_are_derived_as_its_commits_come(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The commit of a transaction's end derives the events of its own records, not those of
    the whole transaction; what was derived before comes out with it, in log order."""
    replayer = MetadataReplayer()
    log = EventLog(lambda: replayer.image, records_of=replayer.records_of)
    derived: list[int] = []
    derive = EventDerivation.derive

    def counted(
        derivation: EventDerivation,
        offset: int,
        record: MetadataRecord,
        time: str,
        events: list[MetadataEvent],
    ) -> None:
        derived.append(offset)
        derive(derivation, offset, record, time, events)

    monkeypatch.setattr(EventDerivation, "derive", counted)
    records: list[MetadataRecord] = [
        BeginTransactionRecord("create_topics"),
        TopicRecord("orders", TOPIC_ID),
        *(PartitionRecord(TOPIC_ID, i, replicas=(1,), isr=(1,), leader=1) for i in range(4)),
        EndTransactionRecord(),
    ]
    entries = [Entry(offset, 1, encode_record(r)) for offset, r in enumerate(records)]
    for start in (0, 3, 6):
        piece = entries[start : start + 3]
        for listener in (replayer, log):
            listener.on_commit(piece)
        # Only the records inside the transaction have events to derive.
        assert derived == [e.offset for e in piece if 0 < e.offset < len(entries) - 1]
        derived.clear()
    assert [(e.offset, e.type) for e in log.events()] == [
        (1, EventType.TOPIC_CREATED),
        *((offset, EventType.PARTITION_CREATED) for offset in range(2, 6)),
    ]


def test_the_replayer_hands_the_records_it_decoded_to_the_listeners_after_it() -> None:
    replayer = MetadataReplayer()
    # One fixed clock: the two logs stamp their events at different instants.
    shared = EventLog(lambda: replayer.image, clock=fixed_clock, records_of=replayer.records_of)
    decoding = EventLog(lambda: replayer.image, clock=fixed_clock)
    first = [
        Entry(0, 1, b"", EntryKind.LEADER_CHANGE),
        Entry(1, 1, encode_record(TopicRecord("orders", TOPIC_ID))),
        Entry(2, 1, encode_record(PartitionRecord(TOPIC_ID, 0, replicas=(1,), isr=(1,), leader=1))),
    ]
    second = [
        Entry(3, 1, encode_record(PartitionRecord(TOPIC_ID, 1, replicas=(1,), isr=(1,), leader=1)))
    ]
    for batch in (first, second):
        replayer.on_commit(batch)
        # The very records decoded for the image, not a second decoding of them.
        assert replayer.records_of(batch) is replayer.records_of(batch)
        assert replayer.records_of(batch) == metadata_records(batch)
        shared.on_commit(batch)
        decoding.on_commit(batch)
    assert shared.events() == decoding.events()
    assert [event.partition for event in shared.events()][-2:] == [0, 1]
    # Entries it did not replay last are decoded afresh.
    assert replayer.records_of(first) is not replayer.records_of(first)
    assert replayer.records_of(first) == metadata_records(first)
