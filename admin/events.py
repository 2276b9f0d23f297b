"""The event log: state changes and potential data-loss events, derived from the metadata log.

Every node replays the same metadata log, so every node derives the same events in the same
order (identified by metadata offset). `derive_events` is pure: the image before a batch of
committed entries and the entries give the events. `EventLog` is the `RaftListener` that keeps
the newest of them in memory, bounded.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any
from uuid import UUID

from admin.models import Event
from controller.image import MetadataImage
from controller.partition_state import NO_LEADER, PartitionState
from controller.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    ConfigResourceType,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UncleanRecoveryRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    decode_record,
)
from controller.unclean_recovery import lost_offsets
from kraft.messages import Entry, EntryKind, SnapshotId

DEFAULT_CAPACITY = 10_000


def derive_events(
    before: MetadataImage,
    entries: Iterable[Entry],
    time: str,
    recovered: set[tuple[UUID, int]] | None = None,
) -> list[Event]:
    """The events the committed `entries` cause on top of the image `before`, in log order.

    `recovered`: the partitions (topic id, partition) whose next PartitionChangeRecord elects the
    leader an UncleanRecoveryRecord already reported with its potential data loss; updated
    in place, so a caller that passes the same set with every batch reports that loss once
    even when a commit falls between the two records.
    """
    names = {topic_id: topic.name for topic_id, topic in before.topics.items()}
    # Partition states changed by earlier entries of this batch, by (topic id, partition).
    states: dict[tuple[UUID, int], PartitionState] = {}
    recovered = set() if recovered is None else recovered
    events: list[Event] = []

    def state_of(topic_id: UUID, partition_id: int) -> PartitionState | None:
        known = states.get((topic_id, partition_id))
        return known if known is not None else before.partition(topic_id, partition_id)

    for entry in entries:
        if entry.kind is EntryKind.LEADER_CHANGE:
            continue
        event = partial(_event, entry.offset, time)
        record = decode_record(entry.data)
        match record:
            case RegisterBrokerRecord():
                events.append(
                    event(
                        "broker_registered",
                        broker=record.broker_id,
                        broker_epoch=record.broker_epoch,
                    )
                )
            case UnregisterBrokerRecord():
                events.append(
                    event(
                        "broker_unregistered",
                        broker=record.broker_id,
                        broker_epoch=record.broker_epoch,
                    )
                )
            case FenceBrokerRecord() | UnfenceBrokerRecord():
                kind = (
                    "broker_fenced" if isinstance(record, FenceBrokerRecord) else "broker_unfenced"
                )
                events.append(
                    event(kind, broker=record.broker_id, broker_epoch=record.broker_epoch)
                )
            case BrokerRegistrationChangeRecord():
                if record.fenced is not None:
                    events.append(
                        event(
                            "broker_fenced" if record.fenced else "broker_unfenced",
                            broker=record.broker_id,
                            broker_epoch=record.broker_epoch,
                        )
                    )
                if record.in_controlled_shutdown:
                    events.append(
                        event(
                            "broker_controlled_shutdown",
                            broker=record.broker_id,
                            broker_epoch=record.broker_epoch,
                        )
                    )
            case TopicRecord():
                names[record.topic_id] = record.name
                events.append(event("topic_created", topic=record.name))
            case RemoveTopicRecord():
                events.append(event("topic_deleted", topic=names.pop(record.topic_id, None)))
            case PartitionRecord():
                state = record.state()
                states[(record.topic_id, record.partition_id)] = state
                events.append(
                    event(
                        "partition_created",
                        topic=names.get(record.topic_id),
                        partition=record.partition_id,
                        **_state_fields(state),
                    )
                )
            case UncleanRecoveryRecord():
                events.append(event(**_recovery_fields(record, names.get(record.topic_id))))
                if record.leader != NO_LEADER:
                    recovered.add((record.topic_id, record.partition_id))
            case PartitionChangeRecord():
                old = state_of(record.topic_id, record.partition_id)
                if old is None:
                    continue
                key = (record.topic_id, record.partition_id)
                new = record.merge(old)
                states[key] = new
                events.extend(
                    event(kind, data_loss_possible=loss, **fields)
                    for kind, loss, fields in _partition_changes(
                        names.get(record.topic_id),
                        record.partition_id,
                        old,
                        new,
                        recovered=key in recovered,
                    )
                )
                recovered.discard(key)
            case ConfigRecord():
                events.append(
                    event(
                        "config_changed",
                        topic=record.resource_name
                        if record.resource_type is ConfigResourceType.TOPIC
                        else None,
                        detail=f"{record.key}={record.value}"
                        if record.value is not None
                        else f"{record.key} deleted",
                    )
                )
            case _:
                pass
    return events


def _event(
    offset: int, time: str, kind: str, *, data_loss_possible: bool = False, **fields: Any
) -> Event:
    return Event(
        offset=offset, time=time, type=kind, data_loss_possible=data_loss_possible, **fields
    )


def _state_fields(state: PartitionState) -> dict[str, Any]:
    return {
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "partition_epoch": state.partition_epoch,
        "isr": list(state.isr),
        "elr": list(state.elr),
        "last_known_elr": list(state.last_known_elr),
    }


def _recovery_fields(record: UncleanRecoveryRecord, topic: str | None) -> dict[str, Any]:
    """The event of an UncleanRecoveryRecord: a recovery's election, which may have lost
    acknowledged data, or what a recovery waits for."""
    fields: dict[str, Any] = {
        "topic": topic,
        "partition": record.partition_id,
        "strategy": record.strategy,
        "replica_logs": [
            {
                "broker": replica.broker_id,
                "broker_epoch": replica.broker_epoch,
                "last_written_leader_epoch": replica.last_written_leader_epoch,
                "log_end_offset": replica.log_end_offset,
            }
            for replica in record.replica_logs
        ],
    }
    if record.leader == NO_LEADER:
        waiting = list(record.waiting_for)
        return {
            **fields,
            "kind": "unclean_recovery_waiting",
            "waiting_for": waiting,
            "detail": f"waiting for the logs of replicas {waiting}",
        }
    chosen = next((r for r in record.replica_logs if r.broker_id == record.leader), None)
    lost = None if chosen is None else lost_offsets(chosen, record.replica_logs)
    return {
        **fields,
        "kind": "unclean_recovery",
        "data_loss_possible": True,
        "leader": record.leader,
        "lost_offsets": None if lost is None else {"start": lost[0], "end": lost[1]},
        "detail": f"{record.strategy} recovery elected replica {record.leader}",
    }


def _partition_changes(
    topic: str | None,
    partition: int,
    old: PartitionState,
    new: PartitionState,
    *,
    recovered: bool = False,
) -> list[tuple[str, bool, dict[str, Any]]]:
    """(type, data loss possible, fields) of each kind of change from `old` to `new`.

    `recovered`: the change elects the leader an UncleanRecoveryRecord (just before it)
    reported, with the potential data loss, so it is a plain leader change here."""
    fields: dict[str, Any] = {"topic": topic, "partition": partition, **_state_fields(new)}
    changes: list[tuple[str, bool, dict[str, Any]]] = []
    if new.leader != old.leader or new.leader_epoch != old.leader_epoch:
        moved = {**fields, "previous_leader": old.leader}
        if new.leader == NO_LEADER:
            changes.append(("partition_offline", False, moved))
        elif new.leader != old.leader and new.leader not in old.isr + old.elr and not recovered:
            # A leader from outside ISR and ELR may miss acknowledged writes: Kafka's unclean
            # election (or an unclean recovery).
            changes.append(
                (
                    "unclean_election",
                    True,
                    {**moved, "detail": f"leader {new.leader} was in neither ISR nor ELR"},
                )
            )
        else:
            changes.append(("leader_changed", False, moved))
    if new.isr != old.isr:
        changes.append(("isr_changed", False, {**fields, "detail": f"isr was {list(old.isr)}"}))
    if new.elr != old.elr or new.last_known_elr != old.last_known_elr:
        changes.append(
            (
                "elr_changed",
                False,
                {
                    **fields,
                    "detail": f"elr was {list(old.elr)}, "
                    f"last_known_elr was {list(old.last_known_elr)}",
                },
            )
        )
    return changes


class EventLog:
    """The newest `capacity` events of the metadata log replayed on this node.

    A `RaftListener` added after the node's `MetadataReplayer`: `image()` then gives the image
    after each batch, and the log keeps the image before the next.
    """

    def __init__(
        self,
        image: Callable[[], MetadataImage],
        capacity: int = DEFAULT_CAPACITY,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._image = image
        self._before = image()
        self._clock = clock
        self._events: deque[Event] = deque(maxlen=capacity)
        # Called with each new event, in log order (e.g. to count some of them).
        self.listeners: list[Callable[[Event], None]] = []
        # Partitions whose recovery was reported and whose election is still to come.
        self._recovered: set[tuple[UUID, int]] = set()

    def events(self) -> list[Event]:
        """The events kept, oldest first."""
        return list(self._events)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        if not entries:
            return
        time = self._clock().isoformat(timespec="milliseconds")
        derived = derive_events(self._before, entries, time, self._recovered)
        self._events.extend(derived)
        for listener in self.listeners:
            for event in derived:
                listener(event)
        self._before = self._image()

    def on_leader_change(self, leader_id: int | None, leader_epoch: int) -> None:
        """Nothing: quorum leadership is the quorum view's, not a metadata event."""

    def on_snapshot_loaded(self, snapshot_id: SnapshotId, records: Sequence[bytes]) -> None:
        # A snapshot summarises history it does not replay: events continue after it.
        self._before = self._image()
        self._recovered.clear()
