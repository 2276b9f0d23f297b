"""The metadata image: the cluster metadata as of an offset of the metadata log.

`MetadataImage` is immutable. A `MetadataDelta` replays records on top of one image and
produces the next; it copies a map only when a record first changes it (the brokers, the topic
maps, one topic's partitions, ...), so a batch touching a few partitions does not copy the
others, and replaying 10,000 PartitionRecords copies each map once, not once per record.

A topic's typed configuration (`MetadataImage.topic_config`, see `controller.topic_config`)
is its overrides on top of the broker-level values the caller names (each node's own static
settings, as in Kafka, where they are no metadata record); it is computed once per change of
the topic's overrides and shared by the images that follow.

Replay follows Kafka's `MetadataDelta`: a record that contradicts the image (a change to an
unknown broker or partition, a stale broker epoch) means the log and the image disagree, which
no correct controller produces: replay raises `MetadataReplayError` and the node must stop.

`MetadataReplayer` keeps the current image on a node: it is the `RaftListener` that applies
committed entries and loaded snapshots, and the `SnapshotSource` that turns the image back into
records for a snapshot.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import ClassVar
from uuid import UUID

import structlog

from controller.acls import EMPTY_INDEX, AclBinding, AclIndex
from controller.metadata_transactions import MetadataTransactions, TransactionStep
from controller.partition_state import PartitionState
from controller.records import (
    AbortTransactionRecord,
    AccessControlEntryRecord,
    BeginTransactionRecord,
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    ConfigResourceType,
    EndTransactionRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    ScramMechanism,
    TopicRecord,
    UncleanRecoveryRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
    decode_record,
    encode_record,
)
from controller.topic_config import TopicConfig
from kraft.messages import Entry, EntryKind, SnapshotId

log = structlog.get_logger(__name__)

# The producer-id block owner that snapshots name: no broker (as Kafka's image writer does).
_NO_BROKER = -1


class MetadataReplayError(Exception):
    """A record does not apply to the image: the metadata log and the image disagree."""


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A registered broker: its current incarnation, broker epoch and state."""

    broker_id: int
    incarnation_id: UUID
    broker_epoch: int
    listeners: tuple[BrokerEndpoint, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    features: tuple[BrokerFeature, ...] = ()

    @classmethod
    def from_record(cls, record: RegisterBrokerRecord) -> BrokerRegistration:
        """The registration a RegisterBrokerRecord creates."""
        return cls(
            broker_id=record.broker_id,
            incarnation_id=record.incarnation_id,
            broker_epoch=record.broker_epoch,
            listeners=record.listeners,
            rack=record.rack,
            fenced=record.fenced,
            in_controlled_shutdown=record.in_controlled_shutdown,
            features=record.features,
        )

    def to_record(self) -> RegisterBrokerRecord:
        """The RegisterBrokerRecord that recreates this registration."""
        return RegisterBrokerRecord(
            broker_id=self.broker_id,
            incarnation_id=self.incarnation_id,
            broker_epoch=self.broker_epoch,
            listeners=self.listeners,
            features=self.features,
            rack=self.rack,
            fenced=self.fenced,
            in_controlled_shutdown=self.in_controlled_shutdown,
        )


@dataclass(frozen=True, slots=True)
class TopicImage:
    """A topic: its name, id and partitions (partition id -> state)."""

    name: str
    topic_id: UUID
    partitions: Mapping[int, PartitionState]


@dataclass(frozen=True, slots=True)
class ConfigResource:
    """What a ConfigRecord configures: a topic by name, or a broker by id (empty: defaults)."""

    resource_type: ConfigResourceType
    name: str


class _TopicConfigMemo:
    """The typed configs of topics with overrides, shared by an image and the images made from
    it: an entry holds while the topic's override map (replaced whenever a ConfigRecord
    changes it) and the broker defaults it was resolved against are the ones asked about, so
    a topic's config is computed once per change of its configuration."""

    def __init__(self) -> None:
        self._configs: dict[str, tuple[Mapping[str, str], TopicConfig, TopicConfig]] = {}

    def get(self, name: str, overrides: Mapping[str, str], defaults: TopicConfig) -> TopicConfig:
        entry = self._configs.get(name)
        if entry is not None and entry[0] is overrides:
            resolved_against, config = entry[1], entry[2]
            if resolved_against is defaults or resolved_against == defaults:
                return config
        config = TopicConfig.resolve(overrides, defaults)
        self._configs[name] = (overrides, defaults, config)
        return config

    def forget(self, name: str) -> None:
        self._configs.pop(name, None)


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """The cluster metadata after every entry of the metadata log below `end_offset`.

    `epoch` is the leader epoch of the entry at `end_offset - 1` (0 for the empty image), so
    (`end_offset`, `epoch`) is the `SnapshotId` a snapshot of this image carries.
    `next_producer_id` is -1 until a producer-id block was handed out. `acls` holds the
    ACLs (by id), indexed for the authorizer's decisions.
    """

    EMPTY: ClassVar[MetadataImage]

    end_offset: int = 0
    epoch: int = 0
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=lambda: MappingProxyType({}))
    topics: Mapping[UUID, TopicImage] = field(default_factory=lambda: MappingProxyType({}))
    topic_ids: Mapping[str, UUID] = field(default_factory=lambda: MappingProxyType({}))
    configs: Mapping[ConfigResource, Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    features: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    next_producer_id: int = -1
    acls: AclIndex = field(default_factory=lambda: EMPTY_INDEX)
    # The SCRAM credentials by (user name, mechanism): salt, iterations, stored and server key.
    scram_credentials: Mapping[tuple[str, ScramMechanism], UserScramCredentialRecord] = field(
        default_factory=lambda: MappingProxyType({})
    )
    _topic_config_memo: _TopicConfigMemo = field(
        default_factory=_TopicConfigMemo, compare=False, repr=False
    )

    def broker_epoch(self, broker_id: int) -> int:
        """The broker epoch of `broker_id`'s registration; -1 if it is not registered."""
        registration = self.brokers.get(broker_id)
        return -1 if registration is None else registration.broker_epoch

    def topic(self, name: str) -> TopicImage | None:
        """The topic named `name`, if it exists."""
        topic_id = self.topic_ids.get(name)
        return None if topic_id is None else self.topics[topic_id]

    def partition(self, topic_id: UUID, partition_id: int) -> PartitionState | None:
        """One partition's state, if the topic and partition exist."""
        topic = self.topics.get(topic_id)
        return None if topic is None else topic.partitions.get(partition_id)

    def topic_configs(self, name: str) -> Mapping[str, str]:
        """The configuration overrides of topic `name` (empty if none)."""
        return self.configs.get(ConfigResource(ConfigResourceType.TOPIC, name), {})

    def topic_config(self, name: str, broker_defaults: TopicConfig) -> TopicConfig:
        """The typed configuration of topic `name`: its overrides on top of `broker_defaults`
        (the node's broker-level values). Computed once per change of the topic's overrides,
        not per call."""
        overrides = self.configs.get(ConfigResource(ConfigResourceType.TOPIC, name))
        if overrides is None:
            return broker_defaults
        return self._topic_config_memo.get(name, overrides, broker_defaults)

    def scram_credential(
        self, name: str, mechanism: ScramMechanism
    ) -> UserScramCredentialRecord | None:
        """User `name`'s SCRAM credential for `mechanism`, if it has one."""
        return self.scram_credentials.get((name, mechanism))

    def to_records(self) -> list[MetadataRecord]:
        """The records that recreate this image from the empty one, for a snapshot.

        In Kafka's order (features first, so a reader knows the metadata version before the
        rest), each section sorted so equal images give equal snapshots.
        """
        records: list[MetadataRecord] = [
            FeatureLevelRecord(name, level) for name, level in sorted(self.features.items())
        ]
        records.extend(self.brokers[broker_id].to_record() for broker_id in sorted(self.brokers))
        for name in sorted(self.topic_ids):
            topic = self.topics[self.topic_ids[name]]
            records.append(TopicRecord(name, topic.topic_id))
            records.extend(
                PartitionRecord.of(topic.topic_id, partition_id, topic.partitions[partition_id])
                for partition_id in sorted(topic.partitions)
            )
        for resource in sorted(self.configs, key=lambda r: (r.resource_type, r.name)):
            records.extend(
                ConfigRecord(resource.resource_type, resource.name, key, value)
                for key, value in sorted(self.configs[resource].items())
            )
        if self.next_producer_id >= 0:
            records.append(ProducerIdsRecord(_NO_BROKER, _NO_BROKER, self.next_producer_id))
        records.extend(
            AccessControlEntryRecord.of(acl_id, self.acls.acls[acl_id])
            for acl_id in sorted(self.acls.acls)
        )
        records.extend(self.scram_credentials[key] for key in sorted(self.scram_credentials))
        return records

    @classmethod
    def from_records(
        cls, records: Iterable[MetadataRecord], end_offset: int = 0, epoch: int = 0
    ) -> MetadataImage:
        """The image that `records` (a snapshot's) build from the empty image."""
        delta = MetadataDelta(cls.EMPTY)
        for record in records:
            delta.replay(record)
        return delta.apply(end_offset, epoch)


MetadataImage.EMPTY = MetadataImage()


class MetadataDelta:
    """Changes replayed on top of a base image; `apply` makes the next image.

    Each map of the base is copied on the first record that changes it, and later records of
    the same delta change the copy in place: the copies are private until `apply` wraps them.
    """

    def __init__(self, base: MetadataImage) -> None:
        self._base = base
        self._brokers: dict[int, BrokerRegistration] | None = None
        self._topics: dict[UUID, TopicImage] | None = None
        self._topic_ids: dict[str, UUID] | None = None
        # The partition maps already copied by this delta, by topic id.
        self._partitions: dict[UUID, dict[int, PartitionState]] = {}
        self._configs: dict[ConfigResource, Mapping[str, str]] | None = None
        self._features: dict[str, int] | None = None
        self._next_producer_id = base.next_producer_id
        self._acls: dict[UUID, AclBinding] | None = None
        self._scram_credentials: (
            dict[tuple[str, ScramMechanism], UserScramCredentialRecord] | None
        ) = None

    def replay(self, record: MetadataRecord) -> None:
        """Applies one record; `MetadataReplayError` if it contradicts the image."""
        match record:
            case RegisterBrokerRecord():
                self._brokers_for_write()[record.broker_id] = BrokerRegistration.from_record(record)
            case UnregisterBrokerRecord():
                self._broker(record.broker_id, record.broker_epoch)
                del self._brokers_for_write()[record.broker_id]
            case FenceBrokerRecord() | UnfenceBrokerRecord():
                self._change_broker(
                    record.broker_id,
                    record.broker_epoch,
                    fenced=isinstance(record, FenceBrokerRecord),
                )
            case BrokerRegistrationChangeRecord():
                registration = self._broker(record.broker_id, record.broker_epoch)
                self._brokers_for_write()[record.broker_id] = replace(
                    registration,
                    fenced=registration.fenced if record.fenced is None else record.fenced,
                    in_controlled_shutdown=registration.in_controlled_shutdown
                    or bool(record.in_controlled_shutdown),
                )
            case TopicRecord():
                self._replay_topic(record)
            case PartitionRecord():
                self._partitions_for_write(record.topic_id)[record.partition_id] = record.state()
            case PartitionChangeRecord():
                partitions = self._partitions_for_write(record.topic_id)
                state = partitions.get(record.partition_id)
                if state is None:
                    raise MetadataReplayError(
                        f"change to unknown partition {record.partition_id} "
                        f"of topic {record.topic_id}"
                    )
                partitions[record.partition_id] = record.merge(state)
            case RemoveTopicRecord():
                self._replay_remove_topic(record)
            case ConfigRecord():
                self._replay_config(record)
            case FeatureLevelRecord():
                self._replay_feature(record)
            case ProducerIdsRecord():
                self._next_producer_id = record.next_producer_id
            case AccessControlEntryRecord() | RemoveAccessControlEntryRecord():
                self._replay_acl(record)
            case UserScramCredentialRecord() | RemoveUserScramCredentialRecord():
                self._replay_scram_credential(record)
            case (
                NoOpRecord()
                | UncleanRecoveryRecord()
                | BeginTransactionRecord()
                | EndTransactionRecord()
                | AbortTransactionRecord()
            ):
                # Transactions are the replayer's (`MetadataTransactions`): it replays their
                # records into a delta of their own, which becomes the image at the end.
                pass

    def partition(self, topic_id: UUID, partition_id: int) -> PartitionState | None:
        """A partition's state with the records replayed so far."""
        partitions = self._partitions.get(topic_id)
        if partitions is not None:
            return partitions.get(partition_id)
        return self._base.partition(topic_id, partition_id)

    def apply(self, end_offset: int, epoch: int) -> MetadataImage:
        """The image after the replayed records, as of the log position given."""
        base = self._base
        topics = base.topics
        if self._topics is not None or self._partitions:
            current = self._topics_for_write()
            for topic_id, partitions in self._partitions.items():
                current[topic_id] = replace(
                    current[topic_id], partitions=MappingProxyType(partitions)
                )
            topics = MappingProxyType(current)
        return MetadataImage(
            end_offset=end_offset,
            epoch=epoch,
            brokers=base.brokers if self._brokers is None else MappingProxyType(self._brokers),
            topics=topics,
            topic_ids=base.topic_ids
            if self._topic_ids is None
            else MappingProxyType(self._topic_ids),
            configs=base.configs if self._configs is None else MappingProxyType(self._configs),
            features=base.features if self._features is None else MappingProxyType(self._features),
            next_producer_id=self._next_producer_id,
            acls=base.acls if self._acls is None else AclIndex(MappingProxyType(self._acls)),
            scram_credentials=base.scram_credentials
            if self._scram_credentials is None
            else MappingProxyType(self._scram_credentials),
            _topic_config_memo=base._topic_config_memo,
        )

    def _replay_scram_credential(
        self, record: UserScramCredentialRecord | RemoveUserScramCredentialRecord
    ) -> None:
        credentials = self._scram_credentials_for_write()
        if isinstance(record, UserScramCredentialRecord):
            credentials[record.name, record.mechanism] = record
        else:
            credentials.pop((record.name, record.mechanism), None)

    def _scram_credentials_for_write(
        self,
    ) -> dict[tuple[str, ScramMechanism], UserScramCredentialRecord]:
        if self._scram_credentials is None:
            self._scram_credentials = dict(self._base.scram_credentials)
        return self._scram_credentials

    def _brokers_for_write(self) -> dict[int, BrokerRegistration]:
        if self._brokers is None:
            self._brokers = dict(self._base.brokers)
        return self._brokers

    def _topics_for_write(self) -> dict[UUID, TopicImage]:
        if self._topics is None:
            self._topics = dict(self._base.topics)
        return self._topics

    def _topic_ids_for_write(self) -> dict[str, UUID]:
        if self._topic_ids is None:
            self._topic_ids = dict(self._base.topic_ids)
        return self._topic_ids

    def _configs_for_write(self) -> dict[ConfigResource, Mapping[str, str]]:
        if self._configs is None:
            self._configs = dict(self._base.configs)
        return self._configs

    def _features_for_write(self) -> dict[str, int]:
        if self._features is None:
            self._features = dict(self._base.features)
        return self._features

    def _replay_feature(self, record: FeatureLevelRecord) -> None:
        features = self._features_for_write()
        # As in Kafka, level 0 means the feature is not enabled: it leaves the image.
        if record.level == 0:
            features.pop(record.name, None)
        else:
            features[record.name] = record.level

    def _replay_acl(
        self, record: AccessControlEntryRecord | RemoveAccessControlEntryRecord
    ) -> None:
        acls = self._acls_for_write()
        if isinstance(record, AccessControlEntryRecord):
            acls[record.acl_id] = record.binding()
        elif acls.pop(record.acl_id, None) is None:
            raise MetadataReplayError(f"removal of unknown ACL {record.acl_id}")

    def _acls_for_write(self) -> dict[UUID, AclBinding]:
        if self._acls is None:
            self._acls = dict(self._base.acls.acls)
        return self._acls

    def _partitions_for_write(self, topic_id: UUID) -> dict[int, PartitionState]:
        partitions = self._partitions.get(topic_id)
        if partitions is None:
            topics = self._base.topics if self._topics is None else self._topics
            topic = topics.get(topic_id)
            if topic is None:
                raise MetadataReplayError(f"partition of unknown topic {topic_id}")
            partitions = self._partitions[topic_id] = dict(topic.partitions)
        return partitions

    def _broker(self, broker_id: int, broker_epoch: int) -> BrokerRegistration:
        brokers = self._base.brokers if self._brokers is None else self._brokers
        registration = brokers.get(broker_id)
        if registration is None:
            raise MetadataReplayError(f"unknown broker {broker_id}")
        if registration.broker_epoch != broker_epoch:
            raise MetadataReplayError(
                f"broker {broker_id} has broker epoch {registration.broker_epoch}, "
                f"the record names {broker_epoch}"
            )
        return registration

    def _change_broker(self, broker_id: int, broker_epoch: int, *, fenced: bool) -> None:
        registration = self._broker(broker_id, broker_epoch)
        self._brokers_for_write()[broker_id] = replace(registration, fenced=fenced)

    def _replay_topic(self, record: TopicRecord) -> None:
        topic_ids = self._topic_ids_for_write()
        if record.name in topic_ids:
            raise MetadataReplayError(f"topic {record.name!r} already exists")
        topic_ids[record.name] = record.topic_id
        self._topics_for_write()[record.topic_id] = TopicImage(
            record.name,
            record.topic_id,
            MappingProxyType({}),
        )
        # A topic id reused after a removal in this same delta starts with no partitions.
        self._partitions.pop(record.topic_id, None)

    def _replay_remove_topic(self, record: RemoveTopicRecord) -> None:
        topics = self._topics_for_write()
        topic = topics.pop(record.topic_id, None)
        if topic is None:
            raise MetadataReplayError(f"removal of unknown topic {record.topic_id}")
        del self._topic_ids_for_write()[topic.name]
        self._partitions.pop(record.topic_id, None)
        # As in Kafka's MetadataDelta, a topic's configs go with it.
        self._configs_for_write().pop(ConfigResource(ConfigResourceType.TOPIC, topic.name), None)
        self._base._topic_config_memo.forget(topic.name)

    def _replay_config(self, record: ConfigRecord) -> None:
        configs = self._configs_for_write()
        resource = ConfigResource(record.resource_type, record.resource_name)
        # Each resource's map is small: copying it per record keeps images immutable simply.
        values = dict(configs.get(resource, {}))
        if record.value is None:
            values.pop(record.key, None)
        else:
            values[record.key] = record.value
        if values:
            configs[resource] = MappingProxyType(values)
        else:
            configs.pop(resource, None)


def metadata_records(entries: Iterable[Entry]) -> list[tuple[int, MetadataRecord]]:
    """The metadata records of committed `entries` with their offsets (LeaderChange entries
    are the quorum's own, not metadata records)."""
    return [
        (entry.offset, decode_record(entry.data))
        for entry in entries
        if entry.kind is not EntryKind.LEADER_CHANGE
    ]


class MetadataReplayer:
    """A node's current metadata image, kept up to date from the metadata log.

    As a `RaftListener` it replays committed entries (LeaderChange entries are the quorum's
    own, not metadata records) and replaces the image with a loaded snapshot. As a
    `SnapshotSource` it gives the records of the image at `end_offset`: the driver asks for a
    snapshot at the high watermark right after delivering the entries below it, so the current
    image is exactly that one (unless a metadata transaction is open there: no snapshot then);
    being asked for any other offset is a bug in the caller.

    The records of a metadata transaction (`controller.metadata_transactions`) are replayed as
    their commits come, into a delta of the transaction's own, which becomes the image once the
    end is committed (an abort drops it): the image never holds a part of one, and the commit
    of its end replays no more than its own records (a transaction of 10,000 partition changes
    does not hold the event loop as long as all of them). Their `metadata_applied` events are
    logged as they are replayed too, each with `in_transaction` (the offset of its
    BeginTransactionRecord): they take effect with the EndTransactionRecord's, or never if an
    AbortTransactionRecord's comes first.

    Entries below `logged_below` (the end of the node's own log at start, whose changes its
    earlier runs logged as they applied them) are replayed without a `metadata_applied` event
    each: one `metadata_log_replayed` event sums them up once the replay reaches that offset
    (an uncommitted tail there that the quorum replaces is summed up with them).
    """

    def __init__(
        self, image: MetadataImage = MetadataImage.EMPTY, *, logged_below: int = 0
    ) -> None:
        self._image = image
        self.leader_id: int | None = None
        self.leader_epoch = 0
        self._logged_below = logged_below
        self._replayed_quietly = 0
        # The entries of the latest commit and their records, for the listeners after this
        # one in the same commit (`records_of`): decoding each record once, not per listener.
        self._decoded: tuple[Sequence[Entry], list[tuple[int, MetadataRecord]]] | None = None
        self._transactions: MetadataTransactions[Entry] = MetadataTransactions()
        # While a transaction is open: its records replayed on top of the image.
        self._open_delta: MetadataDelta | None = None
        self._replayed_end_offset = image.end_offset

    @property
    def image(self) -> MetadataImage:
        """The image as of the last committed entry replayed."""
        return self._image

    @property
    def replayed_end_offset(self) -> int:
        """The end of the committed entries replayed: the image's, or past it the records of
        an open metadata transaction, replayed into its own delta, which the image takes once
        the transaction ends (`transaction_open`)."""
        return self._replayed_end_offset

    @property
    def transaction_open(self) -> bool:
        """Whether the committed entries end inside a metadata transaction."""
        return self._transactions.open_since is not None

    def on_commit(self, entries: Sequence[Entry]) -> None:
        """Replays the committed entries, in order, into a new image; those of a metadata
        transaction into the transaction's own delta, which becomes the image once its end is
        committed (never a part of it)."""
        if not entries:
            return
        decoded = [
            (entry, decode_record(entry.data))
            for entry in entries
            if entry.kind is not EntryKind.LEADER_CHANGE
        ]
        self._decoded = (entries, [(entry.offset, record) for entry, record in decoded])
        delta = self._open_delta if self._open_delta is not None else MetadataDelta(self._image)
        for entry, record in decoded:
            step = self._transactions.step(entry, record)
            if step is TransactionStep.BEGIN:
                # What came before takes effect: the image ends where the transaction begins.
                self._image = delta.apply(entry.offset, entry.epoch)
                delta = MetadataDelta(self._image)
            elif step is TransactionStep.ABORT:
                delta = MetadataDelta(self._image)
            delta.replay(record)
            if entry.offset < self._logged_below:
                self._replayed_quietly += 1
            elif event := _applied_event(record, entry, delta):
                begun = self._transactions.open_since
                if begun is not None:
                    event["in_transaction"] = begun.offset
                log.info("metadata_applied", **event)
        last = entries[-1]
        self._replayed_end_offset = last.offset + 1
        if self._transactions.open_since is None:
            self._open_delta = None
            self._image = delta.apply(last.offset + 1, last.epoch)
        else:
            self._open_delta = delta
        if self._replayed_quietly and self._image.end_offset >= self._logged_below:
            log.info(
                "metadata_log_replayed",
                logged_below=self._logged_below,
                end_offset=self._image.end_offset,
                epoch=last.epoch,
                records=self._replayed_quietly,
            )
            self._replayed_quietly = 0

    def records_of(self, entries: Sequence[Entry]) -> list[tuple[int, MetadataRecord]]:
        """`metadata_records(entries)`: the records this replayer decoded, when `entries` is
        the commit it replayed last (a listener after it in the same commit), else decoded."""
        if self._decoded is not None and self._decoded[0] is entries:
            return self._decoded[1]
        return metadata_records(entries)

    def on_leader_change(self, leader_id: int | None, leader_epoch: int) -> None:
        """Remembers the quorum leader (the active controller)."""
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch

    def on_snapshot_loaded(self, snapshot_id: SnapshotId, records: Sequence[bytes]) -> None:
        """Replaces the image with the snapshot's."""
        self._image = MetadataImage.from_records(
            (decode_record(data) for data in records), snapshot_id.end_offset, snapshot_id.epoch
        )
        self._transactions.reset()
        self._open_delta = None
        self._replayed_end_offset = snapshot_id.end_offset

    def snapshot_records(self, end_offset: int) -> list[bytes] | None:
        """The encoded records of the image holding every entry below `end_offset`; None while
        a metadata transaction is open there (no image holds a part of one: the snapshot waits
        for a later commit)."""
        if self.transaction_open:
            return None
        if end_offset != self._image.end_offset:
            raise ValueError(
                f"snapshot asked at offset {end_offset}, the image is at {self._image.end_offset}"
            )
        return [encode_record(record) for record in self._image.to_records()]


def _applied_event(record: MetadataRecord, entry: Entry, delta: MetadataDelta) -> dict[str, object]:
    """The fields of the `metadata_applied` event of a record `delta` just replayed, with its
    epochs: one per state change; empty for the records that are none of their own
    (PartitionRecords, whose topic is logged once by its TopicRecord, and NoOps)."""
    match record:
        case PartitionChangeRecord():
            state = delta.partition(record.topic_id, record.partition_id)
            assert state is not None
            return {
                "record": "PartitionChangeRecord",
                "offset": entry.offset,
                "epoch": entry.epoch,
                "topic_id": str(record.topic_id),
                "partition": record.partition_id,
                "leader": state.leader,
                "leader_epoch": state.leader_epoch,
                "partition_epoch": state.partition_epoch,
                "isr": list(state.isr),
                "elr": list(state.elr),
                "last_known_elr": list(state.last_known_elr),
            }
        case PartitionRecord() | NoOpRecord():
            return {}
        case UserScramCredentialRecord() | RemoveUserScramCredentialRecord():
            # Never the salt nor the keys.
            return {
                "record": type(record).__name__,
                "offset": entry.offset,
                "epoch": entry.epoch,
                "user": record.name,
                "mechanism": record.mechanism.mechanism_name,
            }
        case _:
            return {
                "record": type(record).__name__,
                "offset": entry.offset,
                "epoch": entry.epoch,
                **{
                    name: value
                    if isinstance(value, (int, str, bool)) or value is None
                    else str(value)
                    for name, value in _fields(record)
                },
            }


def _fields(record: MetadataRecord) -> Iterable[tuple[str, object]]:
    return ((f.name, getattr(record, f.name)) for f in dataclasses.fields(record))
