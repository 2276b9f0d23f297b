"""The event log: state changes and potential data-loss events, derived from the metadata log.

Every node replays the same metadata log, so every node derives the same events in the same
order (identified by metadata offset). `derive_events` is pure: the image before a batch of
committed records and the records (with their offsets) give the events, as `MetadataEvent`
values. `EventLog` is the `RaftListener` that keeps the newest of them in memory, bounded, and
tells its listeners of each new one. The admin API renders them; the metrics count some.

This module is the one place outside the codec and the image that reads metadata record
classes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from functools import partial
from typing import Any
from uuid import UUID

from controller.image import MetadataImage, metadata_records
from controller.metadata_transactions import MetadataTransactions, TransactionStep
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
    RemoveTopicRecord,
    TopicRecord,
    UncleanRecoveryRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from controller.unclean_recovery import lost_offsets
from kraft.messages import Entry, SnapshotId

DEFAULT_CAPACITY = 10_000


class EventType(StrEnum):
    """What happened; the value is the event's `type` in the admin API."""

    TOPIC_CREATED = "topic_created"
    TOPIC_DELETED = "topic_deleted"
    PARTITION_CREATED = "partition_created"
    LEADER_CHANGED = "leader_changed"
    PARTITION_OFFLINE = "partition_offline"
    UNCLEAN_ELECTION = "unclean_election"
    UNCLEAN_RECOVERY = "unclean_recovery"
    UNCLEAN_RECOVERY_WAITING = "unclean_recovery_waiting"
    ISR_CHANGED = "isr_changed"
    ELR_CHANGED = "elr_changed"
    BROKER_REGISTERED = "broker_registered"
    BROKER_FENCED = "broker_fenced"
    BROKER_UNFENCED = "broker_unfenced"
    BROKER_CONTROLLED_SHUTDOWN = "broker_controlled_shutdown"
    BROKER_UNREGISTERED = "broker_unregistered"
    CONFIG_CHANGED = "config_changed"
    REASSIGNMENT_STARTED = "reassignment_started"
    REASSIGNMENT_REPLICA_IN_SYNC = "reassignment_replica_in_sync"
    REASSIGNMENT_COMPLETED = "reassignment_completed"
    REASSIGNMENT_CANCELLED = "reassignment_cancelled"


@dataclass(frozen=True, slots=True)
class ReplicaLogReport:
    """One replica's log as its broker reported it to an unclean recovery."""

    broker: int
    broker_epoch: int
    last_written_leader_epoch: int
    log_end_offset: int


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets from `start` (inclusive) to `end` (exclusive)."""

    start: int
    end: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataEvent:
    """A state change or a potential data-loss event at metadata offset `offset`.

    `time` is when this node replayed the record (ISO 8601, UTC): the metadata log carries no
    timestamps. A metadata transaction's records are replayed as their commits come, and their
    events kept until its end is committed. Which of the other fields are set depends on
    `type`: partition events carry the partition's state after the change, broker events the
    broker and its epoch, unclean recovery events what the recovery saw (`strategy`,
    `replica_logs`, `waiting_for`, `lost_offsets`), reassignment events the partition's
    `replicas`, `adding_replicas` and `removing_replicas` after the change (and `broker`: the
    replica that joined the ISR)."""

    offset: int
    time: str
    type: EventType
    data_loss_possible: bool = False
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    leader: int | None = None
    previous_leader: int | None = None
    leader_epoch: int | None = None
    partition_epoch: int | None = None
    broker_epoch: int | None = None
    isr: tuple[int, ...] | None = None
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    strategy: str | None = None
    replica_logs: tuple[ReplicaLogReport, ...] | None = None
    waiting_for: tuple[int, ...] | None = None
    lost_offsets: OffsetRange | None = None
    replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    detail: str | None = None


def derive_events(
    before: MetadataImage,
    records: Iterable[tuple[int, MetadataRecord]],
    time: str,
    recovered: set[tuple[UUID, int]] | None = None,
) -> list[MetadataEvent]:
    """The events the committed `records` (offset, record) cause on top of the image `before`,
    in log order.

    `recovered`: the partitions (topic id, partition) whose next PartitionChangeRecord elects the
    leader an UncleanRecoveryRecord already reported with its potential data loss; updated
    in place, so a caller that passes the same set with every batch reports that loss once
    even when a commit falls between the two records.
    """
    derivation = EventDerivation(before, set() if recovered is None else recovered)
    events: list[MetadataEvent] = []
    for offset, record in records:
        derivation.derive(offset, record, time, events)
    return events


class EventDerivation:
    """Derives events record by record on top of an image, remembering what the records
    derived so far changed (topic names, partition states, recoveries reported)."""

    def __init__(
        self,
        before: MetadataImage,
        recovered: set[tuple[UUID, int]],
        *,
        names: dict[UUID, str] | None = None,
        states: dict[tuple[UUID, int], PartitionState] | None = None,
    ) -> None:
        """`recovered` is updated in place (see `derive_events`); `names` and `states`, what
        records derived before changed (`fork`)."""
        self._before = before
        self.recovered = recovered
        self._names = (
            {topic_id: topic.name for topic_id, topic in before.topics.items()}
            if names is None
            else names
        )
        # PartitionRecord states changed by the records derived so far, by (topic id, partition).
        self._states = {} if states is None else states

    def fork(self) -> EventDerivation:
        """A derivation that goes on from this one's state without changing it: a metadata
        transaction's, which an abort drops."""
        return EventDerivation(
            self._before,
            set(self.recovered),
            names=dict(self._names),
            states=dict(self._states),
        )

    def _state_of(self, topic_id: UUID, partition_id: int) -> PartitionState | None:
        known = self._states.get((topic_id, partition_id))
        return known if known is not None else self._before.partition(topic_id, partition_id)

    def derive(
        self, offset: int, record: MetadataRecord, time: str, events: list[MetadataEvent]
    ) -> None:
        """Appends to `events` those that `record`, committed at `offset`, causes."""
        names, states, recovered, state_of = (
            self._names,
            self._states,
            self.recovered,
            self._state_of,
        )
        event = partial(_event, offset, time)
        match record:
            case RegisterBrokerRecord():
                events.append(
                    event(
                        EventType.BROKER_REGISTERED,
                        broker=record.broker_id,
                        broker_epoch=record.broker_epoch,
                    )
                )
            case UnregisterBrokerRecord():
                events.append(
                    event(
                        EventType.BROKER_UNREGISTERED,
                        broker=record.broker_id,
                        broker_epoch=record.broker_epoch,
                    )
                )
            case FenceBrokerRecord() | UnfenceBrokerRecord():
                kind = (
                    EventType.BROKER_FENCED
                    if isinstance(record, FenceBrokerRecord)
                    else EventType.BROKER_UNFENCED
                )
                events.append(
                    event(kind, broker=record.broker_id, broker_epoch=record.broker_epoch)
                )
            case BrokerRegistrationChangeRecord():
                if record.fenced is not None:
                    events.append(
                        event(
                            EventType.BROKER_FENCED if record.fenced else EventType.BROKER_UNFENCED,
                            broker=record.broker_id,
                            broker_epoch=record.broker_epoch,
                        )
                    )
                if record.in_controlled_shutdown:
                    events.append(
                        event(
                            EventType.BROKER_CONTROLLED_SHUTDOWN,
                            broker=record.broker_id,
                            broker_epoch=record.broker_epoch,
                        )
                    )
            case TopicRecord():
                names[record.topic_id] = record.name
                events.append(event(EventType.TOPIC_CREATED, topic=record.name))
            case RemoveTopicRecord():
                events.append(
                    event(EventType.TOPIC_DELETED, topic=names.pop(record.topic_id, None))
                )
            case PartitionRecord():
                state = record.state()
                states[(record.topic_id, record.partition_id)] = state
                events.append(
                    event(
                        EventType.PARTITION_CREATED,
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
                    return
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
                        EventType.CONFIG_CHANGED,
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


def _event(
    offset: int, time: str, kind: EventType, *, data_loss_possible: bool = False, **fields: Any
) -> MetadataEvent:
    return MetadataEvent(
        offset=offset, time=time, type=kind, data_loss_possible=data_loss_possible, **fields
    )


def _state_fields(state: PartitionState) -> dict[str, Any]:
    return {
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "partition_epoch": state.partition_epoch,
        "isr": tuple(state.isr),
        "elr": tuple(state.elr),
        "last_known_elr": tuple(state.last_known_elr),
    }


def _recovery_fields(record: UncleanRecoveryRecord, topic: str | None) -> dict[str, Any]:
    """The event of an UncleanRecoveryRecord: a recovery's election, which may have lost
    acknowledged data, or what a recovery waits for."""
    fields: dict[str, Any] = {
        "topic": topic,
        "partition": record.partition_id,
        "strategy": record.strategy,
        "replica_logs": tuple(
            ReplicaLogReport(
                broker=replica.broker_id,
                broker_epoch=replica.broker_epoch,
                last_written_leader_epoch=replica.last_written_leader_epoch,
                log_end_offset=replica.log_end_offset,
            )
            for replica in record.replica_logs
        ),
    }
    if record.leader == NO_LEADER:
        waiting = tuple(record.waiting_for)
        return {
            **fields,
            "kind": EventType.UNCLEAN_RECOVERY_WAITING,
            "waiting_for": waiting,
            "detail": f"waiting for the logs of replicas {list(waiting)}",
        }
    chosen = next((r for r in record.replica_logs if r.broker_id == record.leader), None)
    lost = None if chosen is None else lost_offsets(chosen, record.replica_logs)
    return {
        **fields,
        "kind": EventType.UNCLEAN_RECOVERY,
        "data_loss_possible": True,
        "leader": record.leader,
        "lost_offsets": None if lost is None else OffsetRange(start=lost[0], end=lost[1]),
        "detail": f"{record.strategy} recovery elected replica {record.leader}",
    }


def _partition_changes(
    topic: str | None,
    partition: int,
    old: PartitionState,
    new: PartitionState,
    *,
    recovered: bool = False,
) -> list[tuple[EventType, bool, dict[str, Any]]]:
    """(type, data loss possible, fields) of each kind of change from `old` to `new`.

    `recovered`: the change elects the leader an UncleanRecoveryRecord (just before it)
    reported, with the potential data loss, so it is a plain leader change here."""
    fields: dict[str, Any] = {"topic": topic, "partition": partition, **_state_fields(new)}
    changes: list[tuple[EventType, bool, dict[str, Any]]] = []
    if new.leader != old.leader or new.leader_epoch != old.leader_epoch:
        moved = {**fields, "previous_leader": old.leader}
        if new.leader == NO_LEADER:
            changes.append((EventType.PARTITION_OFFLINE, False, moved))
        elif new.leader != old.leader and new.leader not in old.isr + old.elr and not recovered:
            # A leader from outside ISR and ELR may miss acknowledged writes: Kafka's unclean
            # election (or an unclean recovery).
            changes.append(
                (
                    EventType.UNCLEAN_ELECTION,
                    True,
                    {**moved, "detail": f"leader {new.leader} was in neither ISR nor ELR"},
                )
            )
        else:
            changes.append((EventType.LEADER_CHANGED, False, moved))
    if new.isr != old.isr:
        changes.append(
            (EventType.ISR_CHANGED, False, {**fields, "detail": f"isr was {list(old.isr)}"})
        )
    if new.elr != old.elr or new.last_known_elr != old.last_known_elr:
        changes.append(
            (
                EventType.ELR_CHANGED,
                False,
                {
                    **fields,
                    "detail": f"elr was {list(old.elr)}, "
                    f"last_known_elr was {list(old.last_known_elr)}",
                },
            )
        )
    changes += _reassignment_changes(fields, old, new)
    return changes


def _reassignment_changes(
    fields: dict[str, Any], old: PartitionState, new: PartitionState
) -> list[tuple[EventType, bool, dict[str, Any]]]:
    """The reassignment events of a change from `old` to `new`: a move started (or replaced),
    replicas it adds joined the ISR, it completed or was cancelled."""
    was_moving = bool(old.adding_replicas or old.removing_replicas)
    moving = bool(new.adding_replicas or new.removing_replicas)
    assignment = {
        **fields,
        "replicas": new.replicas,
        "adding_replicas": new.adding_replicas,
        "removing_replicas": new.removing_replicas,
    }
    changes: list[tuple[EventType, bool, dict[str, Any]]] = []
    if moving and (old.adding_replicas, old.removing_replicas) != (
        new.adding_replicas,
        new.removing_replicas,
    ):
        target = [r for r in new.replicas if r not in new.removing_replicas]
        changes.append(
            (EventType.REASSIGNMENT_STARTED, False, {**assignment, "detail": f"target {target}"})
        )
    joined = [r for r in new.isr if r in old.adding_replicas and r not in old.isr]
    changes += [
        (EventType.REASSIGNMENT_REPLICA_IN_SYNC, False, {**assignment, "broker": replica})
        for replica in joined
    ]
    if not moving and (was_moving or new.replicas != old.replicas):
        # Back to the replicas from before the move is a cancel; anything else completed a
        # move, perhaps in the change that started it (a shrink, a reorder).
        original = tuple(r for r in old.replicas if r not in old.adding_replicas)
        cancelled = was_moving and new.replicas == original
        changes.append(
            (
                EventType.REASSIGNMENT_CANCELLED if cancelled else EventType.REASSIGNMENT_COMPLETED,
                False,
                {**assignment, "detail": f"replicas were {list(old.replicas)}"},
            )
        )
    return changes


class EventLog:
    """The newest `capacity` events of the metadata log replayed on this node.

    A `RaftListener` added after the node's `MetadataReplayer`: `image()` then gives the image
    after each batch, and the log keeps the image before the next. It remembers, across
    batches, the partitions whose unclean recovery it reported and whose election is still to
    come, so that election is not reported as a second data-loss event. The events of a
    metadata transaction come when its end is committed, as its changes reach the image then
    (those of an aborted one never); they are derived as its records come, so that the commit
    of its end does not do the work of all of them.
    """

    def __init__(
        self,
        image: Callable[[], MetadataImage],
        capacity: int = DEFAULT_CAPACITY,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        records_of: Callable[[Sequence[Entry]], list[tuple[int, MetadataRecord]]] = (
            metadata_records
        ),
    ) -> None:
        """`records_of` decodes a commit's entries (`MetadataReplayer.records_of`: what the
        replayer already decoded)."""
        self._image = image
        self._records_of = records_of
        self._before = image()
        self._clock = clock
        self._events: deque[MetadataEvent] = deque(maxlen=capacity)
        # Called with each new event, in log order (e.g. to count some of them).
        self.listeners: list[Callable[[MetadataEvent], None]] = []
        # Partitions whose recovery was reported and whose election is still to come.
        self._recovered: set[tuple[UUID, int]] = set()
        self._transactions: MetadataTransactions[int] = MetadataTransactions()
        # While a transaction is open: its derivation, and the events derived so far.
        self._open: tuple[EventDerivation, list[MetadataEvent]] | None = None

    def events(self) -> list[MetadataEvent]:
        """The events kept, oldest first."""
        return list(self._events)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        if not entries:
            return
        time = self._clock().isoformat(timespec="milliseconds")
        derived: list[MetadataEvent] = []
        outside = EventDerivation(self._before, self._recovered)
        for offset, record in self._records_of(entries):
            step = self._transactions.step(offset, record)
            if step is TransactionStep.OUTSIDE:
                outside.derive(offset, record, time, derived)
            elif step is TransactionStep.BEGIN:
                self._open = (outside.fork(), [])
            elif step is TransactionStep.INSIDE:
                assert self._open is not None
                self._open[0].derive(offset, record, time, self._open[1])
            else:
                assert self._open is not None
                if step is TransactionStep.END:
                    outside, held = self._open
                    self._recovered = outside.recovered
                    derived += held
                self._open = None
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
        self._transactions.reset()
        self._open = None
