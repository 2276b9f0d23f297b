"""Broker lifecycle on the active controller: registration, heartbeats, fencing, shutdown.

Pure: no I/O and no clock (time comes in as `now_ms`). Each request or timer tick gives the
metadata records the active controller appends to the metadata log (then every node replays
them into its `MetadataImage`) and the response for the broker. Partition moves come from
`controller.partition_change`; this module decides which brokers and partitions they apply to.

The rules follow Kafka's KRaft controller (KIP-631; ClusterControlManager,
BrokerHeartbeatManager, ReplicationControlManager) and KIP-966 for unclean shutdowns
(reference/async-storage-and-recovery.txt 5.1-5.2):

- Registration. A registered broker id whose session is still valid (unfenced, heard from
  within `broker.session.timeout.ms`) refuses another incarnation: DUPLICATE_BROKER_REGISTRATION
  (101); the newcomer retries and gets in once the old session has expired, except the
  broker of the controller's own process (`LifecycleConfig.local_broker`). The same
  incarnation registering again (a retried request) keeps its broker epoch and its fenced and
  controlled-shutdown state (Kafka's "amended" registration). A new incarnation is registered
  fenced, and its broker epoch is the offset of its RegisterBrokerRecord in the metadata log
  (the caller passes `next_offset`), as in Kafka, so epochs grow with every registration.
- A new incarnation first leaves every ISR and leadership (5.2: a starting broker must be
  fenced and out of all ISRs before it registers). When `previous_broker_epoch` (the epoch its
  clean-shutdown marker holds) is the epoch of its last registration, that is a plain fence;
  otherwise (no marker, -1, or another epoch) it had an unclean shutdown: it also leaves every
  ELR for the LastKnownELR. That is the whole Unclean Exclusion (5.1.2), and it lives in the
  metadata log, so it survives a controller failover: out of every ISR and ELR, the replica
  can neither lead nor join an ELR, and only its leader's AlterPartition brings it back into
  an ISR (case E), which proves it caught up; KIP-903's broker epochs in that request refuse
  a leader's view of a replica from before the restart.
- Heartbeat. An unknown broker id gets BROKER_ID_NOT_REGISTERED (102), another broker epoch
  than the registration's STALE_BROKER_EPOCH (77). The broker is caught up once its metadata
  offset reached the offset of its RegisterBrokerRecord, i.e. its broker epoch (Kafka's rule:
  the registration, not the log end, which may keep moving). A fenced broker
  that is caught up and does not want to stay fenced is unfenced, and partitions without a
  leader elect again now that it may lead.
- Sessions. Only unfenced brokers have a session: one not heard from for longer than the
  session timeout is fenced (it leaves every ISR and leadership; 5.2.1 cases A, C, D). A newly
  active controller starts every session afresh (`BrokerLifecycle.activate`), as Kafka's does:
  it cannot know when the brokers last reached the previous controller.
- Controlled shutdown (want_shutdown). A fenced broker may stop at once. An unfenced one that
  leads nothing is fenced and may stop at once. Otherwise it enters controlled shutdown
  (BrokerRegistrationChange in_controlled_shutdown): it leaves every ISR, other leaders are
  elected, and it is no longer a leader candidate but stays clean (it flushes and writes its
  marker), so it may join the ELR. Once it leads nothing and every other active broker has
  reported a metadata offset past those moves (Kafka's lowestActiveOffset barrier), its next
  heartbeat fences it and is answered should_shut_down. A broker fenced meanwhile stays fenced
  until it registers again. want_fence fences an unfenced broker on request.

`image` is always the active controller's latest image, including the records it has appended
but not yet committed (as Kafka's controller works on its uncommitted in-memory state);
responses must only be sent once the records of the same call are committed, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from uuid import UUID

from kio.schema.errors import ErrorCode

from controller import records
from controller.image import BrokerRegistration, MetadataImage
from controller.partition_change import (
    BrokerFacts,
    PartitionChange,
    PartitionConfig,
    PartitionDefaults,
    PartitionEvent,
    TopicPartition,
    change_record,
    fence_broker,
    partition_config,
    register_unclean_broker,
    shut_down_broker,
    unfence_broker,
)
from controller.partition_state import PartitionState
from controller.records import BrokerEndpoint, BrokerFeature, MetadataRecord

# `fence_broker`, `unfence_broker`, ...: how one partition changes for one broker.
_PartitionMove = Callable[
    [PartitionState, int, BrokerFacts, PartitionConfig], PartitionChange | None
]

# A BrokerRegistrationRequest's PreviousBrokerEpoch when the broker found no clean-shutdown
# marker, and the broker epoch of failed responses (Kafka's default for both).
NO_BROKER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class LifecycleConfig:
    """What the lifecycle rules need of the controller's configuration.

    `partition_defaults`: the cluster-wide partition configuration; a topic's overrides
    apply on top of it.
    `local_broker`: (broker id, incarnation id) of the broker in the controller's own process,
    if any. When that incarnation registers, the one it replaces was this node's previous
    process, certainly gone: it need not wait out that incarnation's session (which a newly
    active controller has just started afresh), so a lone node restarted after a crash
    registers at once instead of one session timeout later.
    """

    session_timeout_ms: int = 9_000
    partition_defaults: PartitionDefaults = field(default_factory=PartitionDefaults)
    local_broker: tuple[int, UUID] | None = None


@dataclass(frozen=True, slots=True)
class RegistrationRequest:
    """The fields of a BrokerRegistrationRequest that the lifecycle uses."""

    broker_id: int
    incarnation_id: UUID
    listeners: tuple[BrokerEndpoint, ...] = ()
    rack: str | None = None
    previous_broker_epoch: int = NO_BROKER_EPOCH
    features: tuple[BrokerFeature, ...] = ()


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """A BrokerHeartbeatRequest (offline log directories are not modelled yet)."""

    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool = False
    want_shutdown: bool = False


class BrokerTransition(StrEnum):
    """What happened to a broker."""

    REGISTERED = "registered"
    UNFENCED = "unfenced"
    # The broker asked for it (want_fence).
    FENCED = "fenced"
    SESSION_EXPIRED = "session_expired"
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    SHUT_DOWN = "shut_down"
    UNREGISTERED = "unregistered"


@dataclass(frozen=True, slots=True)
class BrokerEvent:
    """One broker transition, for the event log.

    `clean_shutdown` is set for a new incarnation's registration: whether its previous epoch
    matched (False: its replicas are unclean until caught up).
    """

    transition: BrokerTransition
    broker_id: int
    broker_epoch: int
    clean_shutdown: bool | None = None


@dataclass(frozen=True, slots=True)
class TopicPartitionEvent:
    """A partition change that a broker transition caused."""

    partition: TopicPartition
    event: PartitionEvent


@dataclass(frozen=True, slots=True)
class LifecycleChange:
    """The records to append, in order, and what they do."""

    records: tuple[MetadataRecord, ...] = ()
    broker_events: tuple[BrokerEvent, ...] = ()
    partition_events: tuple[TopicPartitionEvent, ...] = ()


@dataclass(frozen=True, slots=True)
class RegistrationOutcome:
    """The BrokerRegistrationResponse (error, broker epoch) and the records to append."""

    error: ErrorCode
    broker_epoch: int = NO_BROKER_EPOCH
    change: LifecycleChange = LifecycleChange()


@dataclass(frozen=True, slots=True)
class HeartbeatOutcome:
    """The BrokerHeartbeatResponse and the records to append."""

    error: ErrorCode
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False
    change: LifecycleChange = LifecycleChange()


@dataclass(frozen=True, slots=True)
class UnregistrationOutcome:
    """The UnregisterBrokerResponse (error and message) and the records to append."""

    error: ErrorCode
    message: str | None = None
    change: LifecycleChange = LifecycleChange()


class BrokerLifecycle:
    """The active controller's broker lifecycle state: sessions and shutdown progress.

    Kept in memory by the active controller only, like Kafka's BrokerHeartbeatManager. It is
    not in the metadata log: a newly active controller builds a fresh one with `activate`.
    """

    def __init__(self, config: LifecycleConfig) -> None:
        self._config = config
        self._last_contact_ms: dict[int, int] = {}
        # Broker id -> the metadata offset its last heartbeat reported.
        self._metadata_offset: dict[int, int] = {}
        # Broker id (in controlled shutdown) -> the offset of the last record that moved its
        # leaderships and ISR memberships away.
        self._shutdown_offset: dict[int, int] = {}

    @classmethod
    def activate(
        cls, image: MetadataImage, now_ms: int, config: LifecycleConfig
    ) -> BrokerLifecycle:
        """The state of a controller that just became active: every session starts now."""
        lifecycle = cls(config)
        for broker_id in image.brokers:
            lifecycle._last_contact_ms[broker_id] = now_ms
        return lifecycle

    def broker_facts(self, image: MetadataImage) -> BrokerFacts:
        """What `partition_change` needs to know of the brokers to change a partition."""
        return broker_facts(image)

    @property
    def partition_defaults(self) -> PartitionDefaults:
        """The cluster-wide partition configuration, before topic overrides."""
        return self._config.partition_defaults

    def register(
        self,
        image: MetadataImage,
        request: RegistrationRequest,
        now_ms: int,
        next_offset: int,
    ) -> RegistrationOutcome:
        """A BrokerRegistrationRequest; `next_offset` is where the next record will land."""
        broker_id = request.broker_id
        existing = image.brokers.get(broker_id)
        new_incarnation = existing is None or existing.incarnation_id != request.incarnation_id
        replaces_own_process = self._config.local_broker == (broker_id, request.incarnation_id)
        if (
            existing is not None
            and new_incarnation
            and self._has_live_session(existing, now_ms)
            and not replaces_own_process
        ):
            return RegistrationOutcome(ErrorCode.duplicate_broker_registration)

        batch = _Batch(image, self)
        clean_shutdown: bool | None = None
        if existing is not None and new_incarnation:
            self._shutdown_offset.pop(broker_id, None)
            clean_shutdown = (
                request.previous_broker_epoch != NO_BROKER_EPOCH
                and request.previous_broker_epoch == existing.broker_epoch
            )
            if clean_shutdown:
                batch.remove_broker(broker_id, fence_broker)
            else:
                batch.remove_broker(broker_id, register_unclean_broker, include_elr=True)

        # The same incarnation registering again (a retry) amends its registration and keeps
        # its broker epoch and state, as Kafka does: it is still the same running broker, in
        # the same ISRs, and may have heartbeats in flight with that epoch.
        amended = existing if existing is not None and not new_incarnation else None
        # The registration goes last, as in Kafka: a broker caught up to it has seen the moves.
        broker_epoch = next_offset + len(batch.records) if amended is None else amended.broker_epoch
        batch.records.append(
            records.RegisterBrokerRecord(
                broker_id=broker_id,
                incarnation_id=request.incarnation_id,
                broker_epoch=broker_epoch,
                listeners=request.listeners,
                features=request.features,
                rack=request.rack,
                fenced=True if amended is None else amended.fenced,
                in_controlled_shutdown=amended is not None and amended.in_controlled_shutdown,
            )
        )
        batch.broker_events.append(
            BrokerEvent(BrokerTransition.REGISTERED, broker_id, broker_epoch, clean_shutdown)
        )
        self._last_contact_ms[broker_id] = now_ms
        return RegistrationOutcome(ErrorCode.none, broker_epoch, batch.change())

    def heartbeat(
        self, image: MetadataImage, request: HeartbeatRequest, now_ms: int, next_offset: int
    ) -> HeartbeatOutcome:
        """A BrokerHeartbeatRequest: renews the session and moves the broker's state on.

        `next_offset` is where the next record will land in the metadata log.
        """
        broker_id = request.broker_id
        registration = image.brokers.get(broker_id)
        if registration is None:
            return HeartbeatOutcome(ErrorCode.broker_id_not_registered)
        if registration.broker_epoch != request.broker_epoch:
            return HeartbeatOutcome(ErrorCode.stale_broker_epoch)
        self._last_contact_ms[broker_id] = now_ms
        self._metadata_offset[broker_id] = request.current_metadata_offset
        epoch = registration.broker_epoch
        is_caught_up = request.current_metadata_offset >= epoch
        batch = _Batch(image, self)

        def answer(*, fenced: bool, shut_down: bool = False) -> HeartbeatOutcome:
            return HeartbeatOutcome(ErrorCode.none, is_caught_up, fenced, shut_down, batch.change())

        if registration.fenced:
            if request.want_shutdown:
                batch.broker_events.append(
                    BrokerEvent(BrokerTransition.SHUT_DOWN, broker_id, epoch)
                )
                return answer(fenced=True, shut_down=True)
            # A broker that entered controlled shutdown stays fenced until it registers again:
            # the registration cannot leave that state (BrokerRegistrationChange).
            if request.want_fence or not is_caught_up or registration.in_controlled_shutdown:
                return answer(fenced=True)
            batch.records.append(records.UnfenceBrokerRecord(broker_id, epoch))
            batch.broker_events.append(BrokerEvent(BrokerTransition.UNFENCED, broker_id, epoch))
            batch.unfence(broker_id)
            return answer(fenced=False)

        if request.want_fence:
            transition = (
                BrokerTransition.SHUT_DOWN if request.want_shutdown else BrokerTransition.FENCED
            )
            batch.fence(registration, transition)
            return answer(fenced=True, shut_down=request.want_shutdown)

        if registration.in_controlled_shutdown or request.want_shutdown:
            # Kafka's CONTROLLED_SHUTDOWN state: move leaderships and ISR memberships away, and
            # once it leads nothing, fence the broker and let it stop. A broker that leads
            # nothing to begin with skips the state, as in Kafka: fencing moves the rest.
            if not registration.in_controlled_shutdown:
                if not batch.leads_anything(broker_id):
                    batch.fence(registration, BrokerTransition.SHUT_DOWN)
                    return answer(fenced=True, shut_down=True)
                batch.records.append(
                    records.BrokerRegistrationChangeRecord(
                        broker_id, epoch, in_controlled_shutdown=True
                    )
                )
                batch.broker_events.append(
                    BrokerEvent(BrokerTransition.CONTROLLED_SHUTDOWN, broker_id, epoch)
                )
            # Repeated on each heartbeat until nothing moves: idempotent, and a controller that
            # took over mid-shutdown finishes the moves this way.
            moved = batch.remove_broker(broker_id, shut_down_broker)
            if batch.records:
                self._shutdown_offset[broker_id] = next_offset + len(batch.records) - 1
            if moved or batch.leads_anything(broker_id):
                return answer(fenced=False)
            # Kafka's lowestActiveOffset barrier: release the broker only once every other
            # active broker has seen the moves, or clients could still be sent to it. A
            # controller that took over mid-shutdown waits for its whole log instead.
            moves_offset = self._shutdown_offset.get(broker_id, image.end_offset - 1)
            others = _active_brokers(image) - {broker_id}
            if any(self._metadata_offset.get(b, -1) < moves_offset for b in others):
                return answer(fenced=False)
            self._shutdown_offset.pop(broker_id, None)
            batch.fence(registration, BrokerTransition.SHUT_DOWN)
            return answer(fenced=True, shut_down=True)

        return answer(fenced=False)

    def unregister(self, image: MetadataImage, broker_id: int) -> UnregistrationOutcome:
        """An UnregisterBrokerRequest: the broker leaves the cluster (UnregisterBrokerRecord).

        BROKER_ID_NOT_REGISTERED for an unknown broker. A broker that is still a replica of
        some partition is refused with INVALID_REQUEST: move its replicas away first
        (a reassignment), so that removing a broker never removes a copy of any data. Its
        session ends here; should the broker still run, it stops when it sees the record.
        """
        registration = image.brokers.get(broker_id)
        if registration is None:
            return UnregistrationOutcome(
                ErrorCode.broker_id_not_registered, f"Broker {broker_id} is not registered."
            )
        hosted = sorted(
            f"{topic.name}-{partition_id}"
            for topic in image.topics.values()
            for partition_id, state in topic.partitions.items()
            if broker_id in state.replicas
        )
        if hosted:
            shown = ", ".join(hosted[:10]) + (", ..." if len(hosted) > 10 else "")
            return UnregistrationOutcome(
                ErrorCode.invalid_request,
                f"Broker {broker_id} still hosts {len(hosted)} partition replicas ({shown}): "
                "reassign them to other brokers before unregistering it.",
            )
        epoch = registration.broker_epoch
        self._last_contact_ms.pop(broker_id, None)
        self._metadata_offset.pop(broker_id, None)
        self._shutdown_offset.pop(broker_id, None)
        return UnregistrationOutcome(
            ErrorCode.none,
            None,
            LifecycleChange(
                (records.UnregisterBrokerRecord(broker_id, epoch),),
                (BrokerEvent(BrokerTransition.UNREGISTERED, broker_id, epoch),),
            ),
        )

    def expire_sessions(self, image: MetadataImage, now_ms: int) -> LifecycleChange:
        """Fences every unfenced broker not heard from for longer than the session timeout.

        In broker id order, each fence seeing the partition moves of the ones before it (as
        the controller fences brokers one by one, 5.3.3 steps 3-5).
        """
        batch = _Batch(image, self)
        for broker_id in sorted(image.brokers):
            registration = image.brokers[broker_id]
            if not registration.fenced and not self._has_live_session(registration, now_ms):
                batch.fence(registration, BrokerTransition.SESSION_EXPIRED)
        return batch.change()

    def _has_live_session(self, registration: BrokerRegistration, now_ms: int) -> bool:
        # Kafka's hasValidSession: fenced brokers have no session; a session lasts the timeout
        # after the last contact, inclusive.
        if registration.fenced:
            return False
        last_contact = self._last_contact_ms.get(registration.broker_id)
        return last_contact is not None and now_ms - last_contact <= self._config.session_timeout_ms


def broker_facts(image: MetadataImage) -> BrokerFacts:
    """What `partition_change` needs to know of `image`'s brokers to change a partition."""
    return BrokerFacts(_active_brokers(image))


def _active_brokers(image: MetadataImage) -> frozenset[int]:
    """Brokers that may lead or join an ISR: unfenced and not in controlled shutdown (Kafka's
    isActive)."""
    return frozenset(
        b for b, r in image.brokers.items() if not r.fenced and not r.in_controlled_shutdown
    )


class _Batch:
    """The records of one lifecycle call, each partition move seeing the ones before it.

    It keeps the moved partitions' new states and which brokers it fenced or unfenced, so a
    call that fences several brokers elects each time among the brokers still standing.
    """

    def __init__(self, image: MetadataImage, lifecycle: BrokerLifecycle) -> None:
        self._image = image
        self._lifecycle = lifecycle
        self._active = set(_active_brokers(image))
        self._states: dict[TopicPartition, PartitionState] = {}
        self.records: list[MetadataRecord] = []
        self.broker_events: list[BrokerEvent] = []
        self._partition_events: list[TopicPartitionEvent] = []

    def change(self) -> LifecycleChange:
        return LifecycleChange(
            tuple(self.records), tuple(self.broker_events), tuple(self._partition_events)
        )

    def partitions(self) -> Iterator[tuple[TopicPartition, str, PartitionState]]:
        """Every partition (with its topic's name), in its state as of this batch."""
        for topic in self._image.topics.values():
            for partition_id, state in topic.partitions.items():
                tp = TopicPartition(topic.topic_id, partition_id)
                yield tp, topic.name, self._states.get(tp, state)

    def hosted_by(self, broker_id: int) -> Iterator[TopicPartition]:
        return (tp for tp, _, state in self.partitions() if broker_id in state.replicas)

    def leads_anything(self, broker_id: int) -> bool:
        return any(state.leader == broker_id for _, _, state in self.partitions())

    def fence(self, registration: BrokerRegistration, transition: BrokerTransition) -> None:
        """FenceBroker, then the broker leaves every ISR and leadership."""
        broker_id, epoch = registration.broker_id, registration.broker_epoch
        self.records.append(records.FenceBrokerRecord(broker_id, epoch))
        self.broker_events.append(BrokerEvent(transition, broker_id, epoch))
        self.remove_broker(broker_id, fence_broker)

    def unfence(self, broker_id: int) -> None:
        """The broker may lead again: leaderless partitions it hosts elect again (case B)."""
        self._active.add(broker_id)
        for tp, topic_name, state in list(self.partitions()):
            if broker_id in state.replicas and not state.has_leader:
                self._apply(tp, topic_name, state, unfence_broker, broker_id)

    def remove_broker(
        self,
        broker_id: int,
        move: _PartitionMove,
        *,
        include_elr: bool = False,
    ) -> bool:
        """Applies `move` to each partition where the broker leads or is in the ISR (or the
        ELR); whether any partition changed."""
        self._active.discard(broker_id)
        moved = False
        for tp, topic_name, state in list(self.partitions()):
            member = broker_id in state.isr or state.leader == broker_id
            if member or (include_elr and broker_id in state.elr):
                moved |= self._apply(tp, topic_name, state, move, broker_id)
        return moved

    def _apply(
        self,
        tp: TopicPartition,
        topic_name: str,
        state: PartitionState,
        move: _PartitionMove,
        broker_id: int,
    ) -> bool:
        facts = BrokerFacts(frozenset(self._active))
        config = partition_config(self._image, topic_name, self._lifecycle.partition_defaults)
        change = move(state, broker_id, facts, config)
        if change is None:
            return False
        self._states[tp] = change.state
        self.records.append(change_record(tp, state, change.state))
        self._partition_events.append(TopicPartitionEvent(tp, change.event))
        return True
