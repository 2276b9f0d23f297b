"""The metadata records: what each entry of the metadata log says, and their binary encoding.

The types follow Kafka's metadata records (the JSON specs in `kafka-protocol/metadata/`), with
Kafka's api keys, and are encoded as Kafka's `MetadataRecordSerde` frames them:

    frame version (unsigned varint, always 1)
    record type   (unsigned varint: the record's api key)
    record version (unsigned varint)
    the record's fields, in the flexible ("compact") message format: fixed-width big-endian
    integers, uuids as 16 bytes, compact strings and arrays (length + 1 as an unsigned varint,
    0 for null), then a tagged-field section (count, then tag / size / bytes per field).

One version of each record is written (the newest that carries every field we keep, e.g.
PartitionRecord v2 for the ELR) and only that version is read; any other type or version is a
`RecordDecodeError`. Tagged fields that we do not model (LeaderRecoveryState, Directories) are
skipped when read, as Kafka skips unknown tags. `kio` has no metadata-record schemas, hence this
small codec: one encoder and one decoder per record type, and a registry by api key.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType
from typing import ClassVar, TypeAlias, TypeVar, cast
from uuid import UUID

from controller.partition_state import NO_LEADER, PartitionState

FRAME_VERSION = 1
# PartitionChangeRecord's Leader when the leader did not change (Kafka's NO_LEADER_CHANGE).
_NO_LEADER_CHANGE = -2


# Compiled once: records are decoded by the thousand when a node replays the metadata log.
_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class RecordDecodeError(ValueError):
    """Bytes that are not a metadata record this codec knows (type, version or layout)."""


class ConfigResourceType(IntEnum):
    """Kafka's ConfigResource.Type values, as ConfigRecord stores them."""

    TOPIC = 2
    BROKER = 4


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """A listener a broker advertises: `security_protocol` is Kafka's id (0 = PLAINTEXT)."""

    name: str
    host: str
    port: int
    security_protocol: int = 0


@dataclass(frozen=True, slots=True)
class BrokerFeature:
    """A feature range a broker supports, as it registered it."""

    name: str
    min_supported_version: int
    max_supported_version: int


@dataclass(frozen=True, slots=True)
class RegisterBroker:
    """A broker (re-)registered: a new incarnation and a new broker epoch (RegisterBrokerRecord)."""

    API_KEY: ClassVar[int] = 0
    VERSION: ClassVar[int] = 1

    broker_id: int
    incarnation_id: UUID
    broker_epoch: int
    listeners: tuple[BrokerEndpoint, ...] = ()
    features: tuple[BrokerFeature, ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class UnregisterBroker:
    """A broker was removed from the cluster (UnregisterBrokerRecord)."""

    API_KEY: ClassVar[int] = 1
    VERSION: ClassVar[int] = 0

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class Topic:
    """A topic was created; its partitions follow as `Partition` records (TopicRecord)."""

    API_KEY: ClassVar[int] = 2
    VERSION: ClassVar[int] = 0

    name: str
    topic_id: UUID


@dataclass(frozen=True, slots=True)
class Partition:
    """A partition's full state: at creation, and in snapshots (PartitionRecord)."""

    API_KEY: ClassVar[int] = 3
    VERSION: ClassVar[int] = 2

    topic_id: UUID
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @classmethod
    def of(cls, topic_id: UUID, partition_id: int, state: PartitionState) -> Partition:
        """The record that sets partition `partition_id` of `topic_id` to `state`."""
        return cls(
            topic_id=topic_id,
            partition_id=partition_id,
            replicas=state.replicas,
            isr=state.isr,
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            partition_epoch=state.partition_epoch,
            elr=state.elr,
            last_known_elr=state.last_known_elr,
            adding_replicas=state.adding_replicas,
            removing_replicas=state.removing_replicas,
        )

    def state(self) -> PartitionState:
        """The partition state this record sets."""
        return PartitionState(
            replicas=self.replicas,
            isr=self.isr,
            leader=self.leader,
            leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch,
            elr=self.elr,
            last_known_elr=self.last_known_elr,
            adding_replicas=self.adding_replicas,
            removing_replicas=self.removing_replicas,
        )


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """A change to one partition (PartitionChangeRecord); every None field is unchanged.

    `leader` is the new leader (NO_LEADER for none) or None if the leader did not change. As in
    Kafka's `PartitionRegistration.merge`, replaying a change whose `leader` is set bumps the
    leader epoch, even when it names the current leader (that is how the controller fences the
    old leader epoch without moving leadership), and replaying any change bumps the partition
    epoch.
    """

    API_KEY: ClassVar[int] = 5
    VERSION: ClassVar[int] = 2

    topic_id: UUID
    partition_id: int
    isr: tuple[int, ...] | None = None
    leader: int | None = None
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.leader is not None and self.leader < NO_LEADER:
            raise ValueError(f"leader must be a broker id or NO_LEADER, not {self.leader}")

    def merge(self, state: PartitionState) -> PartitionState:
        """`state` after this change (Kafka's `PartitionRegistration.merge`)."""

        def pick(new: tuple[int, ...] | None, old: tuple[int, ...]) -> tuple[int, ...]:
            return old if new is None else new

        if self.leader is None:
            leader, leader_epoch = state.leader, state.leader_epoch
        else:
            leader, leader_epoch = self.leader, state.leader_epoch + 1
        return PartitionState(
            replicas=pick(self.replicas, state.replicas),
            isr=pick(self.isr, state.isr),
            leader=leader,
            leader_epoch=leader_epoch,
            partition_epoch=state.partition_epoch + 1,
            elr=pick(self.elr, state.elr),
            last_known_elr=pick(self.last_known_elr, state.last_known_elr),
            adding_replicas=pick(self.adding_replicas, state.adding_replicas),
            removing_replicas=pick(self.removing_replicas, state.removing_replicas),
        )


@dataclass(frozen=True, slots=True)
class FenceBroker:
    """A broker is fenced: no longer a leader candidate, out of the ISRs (FenceBrokerRecord)."""

    API_KEY: ClassVar[int] = 7
    VERSION: ClassVar[int] = 0

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class UnfenceBroker:
    """A broker caught up with the metadata log and is unfenced (UnfenceBrokerRecord)."""

    API_KEY: ClassVar[int] = 8
    VERSION: ClassVar[int] = 0

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class RemoveTopic:
    """A topic was deleted, with its partitions and configs (RemoveTopicRecord)."""

    API_KEY: ClassVar[int] = 9
    VERSION: ClassVar[int] = 0

    topic_id: UUID


@dataclass(frozen=True, slots=True)
class Config:
    """One configuration key of a resource set, or deleted when `value` is None (ConfigRecord).

    A broker resource with the empty name holds the cluster-wide defaults, as in Kafka.
    """

    API_KEY: ClassVar[int] = 4
    VERSION: ClassVar[int] = 0

    resource_type: ConfigResourceType
    resource_name: str
    key: str
    value: str | None


@dataclass(frozen=True, slots=True)
class FeatureLevel:
    """A finalized feature level; level 0 removes the feature (FeatureLevelRecord)."""

    API_KEY: ClassVar[int] = 12
    VERSION: ClassVar[int] = 0

    name: str
    level: int


@dataclass(frozen=True, slots=True)
class ProducerIds:
    """A block of producer ids was handed out; `next_producer_id` starts the next block."""

    API_KEY: ClassVar[int] = 15
    VERSION: ClassVar[int] = 0

    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True, slots=True)
class BrokerRegistrationChange:
    """A registered broker's fencing or controlled-shutdown state changed.

    `fenced`: True fenced, False unfenced, None unchanged. `in_controlled_shutdown`: True entered
    controlled shutdown, None unchanged; Kafka's record cannot leave controlled shutdown (the
    broker re-registers instead), so False is refused.
    """

    API_KEY: ClassVar[int] = 17
    VERSION: ClassVar[int] = 1

    broker_id: int
    broker_epoch: int
    fenced: bool | None = None
    in_controlled_shutdown: bool | None = None

    def __post_init__(self) -> None:
        if self.in_controlled_shutdown is False:
            raise ValueError("a broker leaves controlled shutdown only by registering again")


@dataclass(frozen=True, slots=True)
class NoOp:
    """Nothing: appended by an idle leader so the high watermark keeps moving (KIP-835)."""

    API_KEY: ClassVar[int] = 20
    VERSION: ClassVar[int] = 0


@dataclass(frozen=True, slots=True)
class ReplicaLogState:
    """One replica's log as its broker reported it for an unclean recovery."""

    broker_id: int
    broker_epoch: int
    last_written_leader_epoch: int
    log_end_offset: int


@dataclass(frozen=True, slots=True)
class UncleanRecovery:
    """What an unclean recovery saw and did, for every node's event log: written just before
    the PartitionChange that elects `leader`, so the potential data loss is reported with
    what the controller knew when it chose (the strategy, each answering replica's log); or,
    with `leader` NO_LEADER, when the recovery waits for the replicas in `waiting_for`.

    Not one of Kafka's records (Kafka logs this only on its controller): the api key is far
    above Kafka's so that none of theirs collides with it. Replaying it changes nothing.
    """

    API_KEY: ClassVar[int] = 10_000
    VERSION: ClassVar[int] = 0

    topic_id: UUID
    partition_id: int
    strategy: str
    leader: int
    replica_logs: tuple[ReplicaLogState, ...] = ()
    waiting_for: tuple[int, ...] = ()


MetadataRecord: TypeAlias = (
    RegisterBroker
    | UnregisterBroker
    | Topic
    | Partition
    | PartitionChange
    | FenceBroker
    | UnfenceBroker
    | RemoveTopic
    | Config
    | FeatureLevel
    | ProducerIds
    | BrokerRegistrationChange
    | NoOp
    | UncleanRecovery
)


# --- primitive writers and readers (Kafka's flexible message format) ---------------------------


class _Writer:
    """Appends Kafka flexible-format primitives to a buffer."""

    __slots__ = ("buffer",)

    def __init__(self) -> None:
        self.buffer = bytearray()

    def uvarint(self, value: int) -> None:
        while value >= 0x80:
            self.buffer.append((value & 0x7F) | 0x80)
            value >>= 7
        self.buffer.append(value)

    def int8(self, value: int) -> None:
        self.buffer += struct.pack(">b", value)

    def int16(self, value: int) -> None:
        self.buffer += struct.pack(">h", value)

    def uint16(self, value: int) -> None:
        self.buffer += struct.pack(">H", value)

    def int32(self, value: int) -> None:
        self.buffer += struct.pack(">i", value)

    def int64(self, value: int) -> None:
        self.buffer += struct.pack(">q", value)

    def boolean(self, value: bool) -> None:
        self.buffer.append(1 if value else 0)

    def uuid(self, value: UUID) -> None:
        self.buffer += value.bytes

    def string(self, value: str | None) -> None:
        if value is None:
            self.uvarint(0)
            return
        encoded = value.encode()
        self.uvarint(len(encoded) + 1)
        self.buffer += encoded

    def int32_array(self, values: tuple[int, ...]) -> None:
        self.uvarint(len(values) + 1)
        self.buffer += struct.pack(f">{len(values)}i", *values)

    def tagged_fields(self, fields: list[tuple[int, bytes]]) -> None:
        """The tagged-field section: `fields` in ascending tag order, each already encoded."""
        self.uvarint(len(fields))
        for tag, data in fields:
            self.uvarint(tag)
            self.uvarint(len(data))
            self.buffer += data


def _tagged_int32_array(values: tuple[int, ...]) -> bytes:
    """The bytes of a tagged field holding an array of int32."""
    writer = _Writer()
    writer.int32_array(values)
    return bytes(writer.buffer)


class _Reader:
    """Reads Kafka flexible-format primitives from bytes, failing clearly on truncation."""

    __slots__ = ("data", "position")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def take(self, size: int) -> bytes:
        end = self.position + size
        if size < 0 or end > len(self.data):
            raise RecordDecodeError(f"record truncated at byte {self.position}")
        chunk = self.data[self.position : end]
        self.position = end
        return chunk

    def unpack(self, layout: struct.Struct) -> int:
        value: int = layout.unpack(self.take(layout.size))[0]
        return value

    def uvarint(self) -> int:
        value = 0
        shift = 0
        while True:
            if self.position >= len(self.data):
                raise RecordDecodeError(f"record truncated at byte {self.position}")
            byte = self.data[self.position]
            self.position += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise RecordDecodeError("unsigned varint longer than 64 bits")

    def int8(self) -> int:
        return self.unpack(_INT8)

    def int16(self) -> int:
        return self.unpack(_INT16)

    def uint16(self) -> int:
        return self.unpack(_UINT16)

    def int32(self) -> int:
        return self.unpack(_INT32)

    def int64(self) -> int:
        return self.unpack(_INT64)

    def boolean(self) -> bool:
        return self.take(1) != b"\x00"

    def uuid(self) -> UUID:
        return UUID(bytes=self.take(16))

    def nullable_string(self) -> str | None:
        length = self.uvarint() - 1
        if length < 0:
            return None
        try:
            return self.take(length).decode()
        except UnicodeDecodeError as error:
            raise RecordDecodeError(f"string is not UTF-8: {error}") from error

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise RecordDecodeError("null in a non-nullable string")
        return value

    def nullable_int32_array(self) -> tuple[int, ...] | None:
        length = self.uvarint() - 1
        if length < 0:
            return None
        return struct.unpack(f">{length}i", self.take(4 * length))

    def int32_array(self) -> tuple[int, ...]:
        values = self.nullable_int32_array()
        if values is None:
            raise RecordDecodeError("null in a non-nullable array")
        return values

    def uuid_array(self) -> tuple[UUID, ...]:
        length = self.uvarint() - 1
        if length < 0:
            raise RecordDecodeError("null in a non-nullable array")
        return tuple(self.uuid() for _ in range(length))

    def tagged_fields(self) -> dict[int, _Reader]:
        """The tagged-field section, as a reader over each field's bytes by tag."""
        fields: dict[int, _Reader] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            fields[tag] = _Reader(self.take(self.uvarint()))
        return fields

    def skip_tagged_fields(self) -> None:
        """Reads a tagged-field section whose tags none of our fields use (future ones)."""
        self.tagged_fields()


# --- one encoder and one decoder per record type ------------------------------------------------


def _encode_register_broker(record: RegisterBroker, writer: _Writer) -> None:
    writer.int32(record.broker_id)
    writer.uuid(record.incarnation_id)
    writer.int64(record.broker_epoch)
    writer.uvarint(len(record.listeners) + 1)
    for endpoint in record.listeners:
        writer.string(endpoint.name)
        writer.string(endpoint.host)
        writer.uint16(endpoint.port)
        writer.int16(endpoint.security_protocol)
        writer.tagged_fields([])
    writer.uvarint(len(record.features) + 1)
    for feature in record.features:
        writer.string(feature.name)
        writer.int16(feature.min_supported_version)
        writer.int16(feature.max_supported_version)
        writer.tagged_fields([])
    writer.string(record.rack)
    writer.boolean(record.fenced)
    writer.boolean(record.in_controlled_shutdown)
    writer.tagged_fields([])


def _decode_register_broker(reader: _Reader) -> RegisterBroker:
    broker_id = reader.int32()
    incarnation_id = reader.uuid()
    broker_epoch = reader.int64()
    listeners = []
    for _ in range(reader.uvarint() - 1):
        endpoint = BrokerEndpoint(reader.string(), reader.string(), reader.uint16(), reader.int16())
        reader.skip_tagged_fields()
        listeners.append(endpoint)
    features = []
    for _ in range(reader.uvarint() - 1):
        feature = BrokerFeature(reader.string(), reader.int16(), reader.int16())
        reader.skip_tagged_fields()
        features.append(feature)
    record = RegisterBroker(
        broker_id=broker_id,
        incarnation_id=incarnation_id,
        broker_epoch=broker_epoch,
        listeners=tuple(listeners),
        features=tuple(features),
        rack=reader.nullable_string(),
        fenced=reader.boolean(),
        in_controlled_shutdown=reader.boolean(),
    )
    reader.skip_tagged_fields()
    return record


def _encode_unregister_broker(record: UnregisterBroker, writer: _Writer) -> None:
    writer.int32(record.broker_id)
    writer.int64(record.broker_epoch)
    writer.tagged_fields([])


def _decode_unregister_broker(reader: _Reader) -> UnregisterBroker:
    record = UnregisterBroker(broker_id=reader.int32(), broker_epoch=reader.int64())
    reader.skip_tagged_fields()
    return record


def _encode_topic(record: Topic, writer: _Writer) -> None:
    writer.string(record.name)
    writer.uuid(record.topic_id)
    writer.tagged_fields([])


def _decode_topic(reader: _Reader) -> Topic:
    record = Topic(name=reader.string(), topic_id=reader.uuid())
    reader.skip_tagged_fields()
    return record


# PartitionRecord v2's tags; tag 0 (LeaderRecoveryState) is not modelled.
_PARTITION_ELR_TAG = 1
_PARTITION_LAST_KNOWN_ELR_TAG = 2


def _encode_partition(record: Partition, writer: _Writer) -> None:
    writer.int32(record.partition_id)
    writer.uuid(record.topic_id)
    writer.int32_array(record.replicas)
    writer.int32_array(record.isr)
    writer.int32_array(record.removing_replicas)
    writer.int32_array(record.adding_replicas)
    writer.int32(record.leader)
    writer.int32(record.leader_epoch)
    writer.int32(record.partition_epoch)
    # Directories (v1+): one log directory per node here, so no assignment (Kafka allows empty).
    writer.uvarint(1)
    # As Kafka does, the ELR fields are written only when not empty, to keep records small.
    tagged = []
    if record.elr:
        tagged.append((_PARTITION_ELR_TAG, _tagged_int32_array(record.elr)))
    if record.last_known_elr:
        tagged.append((_PARTITION_LAST_KNOWN_ELR_TAG, _tagged_int32_array(record.last_known_elr)))
    writer.tagged_fields(tagged)


def _decode_partition(reader: _Reader) -> Partition:
    partition_id = reader.int32()
    topic_id = reader.uuid()
    replicas = reader.int32_array()
    isr = reader.int32_array()
    removing_replicas = reader.int32_array()
    adding_replicas = reader.int32_array()
    leader = reader.int32()
    leader_epoch = reader.int32()
    partition_epoch = reader.int32()
    reader.uuid_array()  # Directories: not modelled (see _encode_partition).
    tagged = reader.tagged_fields()
    elr = tagged.get(_PARTITION_ELR_TAG)
    last_known_elr = tagged.get(_PARTITION_LAST_KNOWN_ELR_TAG)
    return Partition(
        topic_id=topic_id,
        partition_id=partition_id,
        replicas=replicas,
        isr=isr,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        elr=(elr.nullable_int32_array() or ()) if elr is not None else (),
        last_known_elr=(last_known_elr.nullable_int32_array() or ())
        if last_known_elr is not None
        else (),
        adding_replicas=adding_replicas,
        removing_replicas=removing_replicas,
    )


# PartitionChangeRecord v2's tags; 5 (LeaderRecoveryState) and 8 (Directories) are not modelled.
_CHANGE_ISR_TAG = 0
_CHANGE_LEADER_TAG = 1
_CHANGE_REPLICAS_TAG = 2
_CHANGE_REMOVING_TAG = 3
_CHANGE_ADDING_TAG = 4
_CHANGE_ELR_TAG = 6
_CHANGE_LAST_KNOWN_ELR_TAG = 7

_CHANGE_ARRAY_TAGS = (
    ("isr", _CHANGE_ISR_TAG),
    ("replicas", _CHANGE_REPLICAS_TAG),
    ("removing_replicas", _CHANGE_REMOVING_TAG),
    ("adding_replicas", _CHANGE_ADDING_TAG),
    ("elr", _CHANGE_ELR_TAG),
    ("last_known_elr", _CHANGE_LAST_KNOWN_ELR_TAG),
)


def _encode_partition_change(record: PartitionChange, writer: _Writer) -> None:
    writer.int32(record.partition_id)
    writer.uuid(record.topic_id)
    # Every field is tagged and written only when it changed (its default is "unchanged").
    tagged: list[tuple[int, bytes]] = []
    for name, tag in _CHANGE_ARRAY_TAGS:
        values: tuple[int, ...] | None = getattr(record, name)
        if values is not None:
            tagged.append((tag, _tagged_int32_array(values)))
    if record.leader is not None:
        tagged.append((_CHANGE_LEADER_TAG, struct.pack(">i", record.leader)))
    tagged.sort()
    writer.tagged_fields(tagged)


def _decode_partition_change(reader: _Reader) -> PartitionChange:
    partition_id = reader.int32()
    topic_id = reader.uuid()
    tagged = reader.tagged_fields()
    arrays = {
        name: tagged[tag].nullable_int32_array() if tag in tagged else None
        for name, tag in _CHANGE_ARRAY_TAGS
    }
    leader = tagged[_CHANGE_LEADER_TAG].int32() if _CHANGE_LEADER_TAG in tagged else None
    return PartitionChange(
        topic_id=topic_id,
        partition_id=partition_id,
        leader=None if leader == _NO_LEADER_CHANGE else leader,
        **arrays,
    )


def _encode_fence_broker(record: FenceBroker, writer: _Writer) -> None:
    writer.int32(record.broker_id)
    writer.int64(record.broker_epoch)
    writer.tagged_fields([])


def _decode_fence_broker(reader: _Reader) -> FenceBroker:
    record = FenceBroker(broker_id=reader.int32(), broker_epoch=reader.int64())
    reader.skip_tagged_fields()
    return record


def _encode_unfence_broker(record: UnfenceBroker, writer: _Writer) -> None:
    writer.int32(record.broker_id)
    writer.int64(record.broker_epoch)
    writer.tagged_fields([])


def _decode_unfence_broker(reader: _Reader) -> UnfenceBroker:
    record = UnfenceBroker(broker_id=reader.int32(), broker_epoch=reader.int64())
    reader.skip_tagged_fields()
    return record


def _encode_remove_topic(record: RemoveTopic, writer: _Writer) -> None:
    writer.uuid(record.topic_id)
    writer.tagged_fields([])


def _decode_remove_topic(reader: _Reader) -> RemoveTopic:
    record = RemoveTopic(topic_id=reader.uuid())
    reader.skip_tagged_fields()
    return record


def _encode_config(record: Config, writer: _Writer) -> None:
    writer.int8(record.resource_type)
    writer.string(record.resource_name)
    writer.string(record.key)
    writer.string(record.value)
    writer.tagged_fields([])


def _decode_config(reader: _Reader) -> Config:
    raw_type = reader.int8()
    try:
        resource_type = ConfigResourceType(raw_type)
    except ValueError as error:
        raise RecordDecodeError(f"unknown config resource type {raw_type}") from error
    record = Config(
        resource_type=resource_type,
        resource_name=reader.string(),
        key=reader.string(),
        value=reader.nullable_string(),
    )
    reader.skip_tagged_fields()
    return record


def _encode_feature_level(record: FeatureLevel, writer: _Writer) -> None:
    writer.string(record.name)
    writer.int16(record.level)
    writer.tagged_fields([])


def _decode_feature_level(reader: _Reader) -> FeatureLevel:
    record = FeatureLevel(name=reader.string(), level=reader.int16())
    reader.skip_tagged_fields()
    return record


def _encode_producer_ids(record: ProducerIds, writer: _Writer) -> None:
    writer.int32(record.broker_id)
    writer.int64(record.broker_epoch)
    writer.int64(record.next_producer_id)
    writer.tagged_fields([])


def _decode_producer_ids(reader: _Reader) -> ProducerIds:
    record = ProducerIds(
        broker_id=reader.int32(), broker_epoch=reader.int64(), next_producer_id=reader.int64()
    )
    reader.skip_tagged_fields()
    return record


# BrokerRegistrationChangeRecord v1's tags and their int8 values; tag 2 (LogDirs) is not modelled.
_CHANGE_FENCED_TAG = 0
_CHANGE_CONTROLLED_SHUTDOWN_TAG = 1
_FENCING_VALUES: dict[bool | None, int] = {True: 1, None: 0, False: -1}
_FENCING_CHANGES = {value: change for change, value in _FENCING_VALUES.items()}


def _encode_broker_registration_change(record: BrokerRegistrationChange, writer: _Writer) -> None:
    writer.int32(record.broker_id)
    writer.int64(record.broker_epoch)
    tagged = []
    if record.fenced is not None:
        tagged.append((_CHANGE_FENCED_TAG, struct.pack(">b", _FENCING_VALUES[record.fenced])))
    if record.in_controlled_shutdown:
        tagged.append((_CHANGE_CONTROLLED_SHUTDOWN_TAG, b"\x01"))
    writer.tagged_fields(tagged)


def _decode_broker_registration_change(reader: _Reader) -> BrokerRegistrationChange:
    broker_id = reader.int32()
    broker_epoch = reader.int64()
    tagged = reader.tagged_fields()
    fencing = tagged[_CHANGE_FENCED_TAG].int8() if _CHANGE_FENCED_TAG in tagged else 0
    shutdown = tagged.get(_CHANGE_CONTROLLED_SHUTDOWN_TAG)
    shutdown_value = shutdown.int8() if shutdown is not None else 0
    if fencing not in _FENCING_CHANGES or shutdown_value not in (0, 1):
        raise RecordDecodeError(
            f"bad BrokerRegistrationChange values: fenced {fencing}, "
            f"in_controlled_shutdown {shutdown_value}"
        )
    return BrokerRegistrationChange(
        broker_id=broker_id,
        broker_epoch=broker_epoch,
        fenced=_FENCING_CHANGES[fencing],
        in_controlled_shutdown=True if shutdown_value else None,
    )


def _encode_no_op(record: NoOp, writer: _Writer) -> None:
    writer.tagged_fields([])


def _decode_no_op(reader: _Reader) -> NoOp:
    reader.skip_tagged_fields()
    return NoOp()


def _encode_unclean_recovery(record: UncleanRecovery, writer: _Writer) -> None:
    writer.uuid(record.topic_id)
    writer.int32(record.partition_id)
    writer.string(record.strategy)
    writer.int32(record.leader)
    writer.uvarint(len(record.replica_logs) + 1)
    for replica in record.replica_logs:
        writer.int32(replica.broker_id)
        writer.int64(replica.broker_epoch)
        writer.int32(replica.last_written_leader_epoch)
        writer.int64(replica.log_end_offset)
        writer.tagged_fields([])
    writer.int32_array(record.waiting_for)
    writer.tagged_fields([])


def _decode_unclean_recovery(reader: _Reader) -> UncleanRecovery:
    topic_id = reader.uuid()
    partition_id = reader.int32()
    strategy = reader.string()
    leader = reader.int32()
    count = reader.uvarint() - 1
    if count < 0:
        raise RecordDecodeError("null in a non-nullable array")
    replica_logs = []
    for _ in range(count):
        replica_logs.append(
            ReplicaLogState(reader.int32(), reader.int64(), reader.int32(), reader.int64())
        )
        reader.skip_tagged_fields()
    waiting_for = reader.int32_array()
    reader.skip_tagged_fields()
    return UncleanRecovery(
        topic_id, partition_id, strategy, leader, tuple(replica_logs), waiting_for
    )


@dataclass(frozen=True, slots=True)
class _Codec:
    record_type: type[MetadataRecord]
    encode: Callable[[MetadataRecord, _Writer], None]
    decode: Callable[[_Reader], MetadataRecord]


_R = TypeVar("_R", bound=MetadataRecord)


def _codec(
    record_type: type[_R], encode: Callable[[_R, _Writer], None], decode: Callable[[_Reader], _R]
) -> _Codec:
    # The registry picks an encoder by the record's class, so each encoder only ever sees its
    # own type: widening its parameter type here is safe.
    return _Codec(
        cast(type[MetadataRecord], record_type),
        cast(Callable[[MetadataRecord, _Writer], None], encode),
        decode,
    )


_CODECS = (
    _codec(RegisterBroker, _encode_register_broker, _decode_register_broker),
    _codec(UnregisterBroker, _encode_unregister_broker, _decode_unregister_broker),
    _codec(Topic, _encode_topic, _decode_topic),
    _codec(Partition, _encode_partition, _decode_partition),
    _codec(PartitionChange, _encode_partition_change, _decode_partition_change),
    _codec(FenceBroker, _encode_fence_broker, _decode_fence_broker),
    _codec(UnfenceBroker, _encode_unfence_broker, _decode_unfence_broker),
    _codec(RemoveTopic, _encode_remove_topic, _decode_remove_topic),
    _codec(Config, _encode_config, _decode_config),
    _codec(FeatureLevel, _encode_feature_level, _decode_feature_level),
    _codec(ProducerIds, _encode_producer_ids, _decode_producer_ids),
    _codec(
        BrokerRegistrationChange,
        _encode_broker_registration_change,
        _decode_broker_registration_change,
    ),
    _codec(NoOp, _encode_no_op, _decode_no_op),
    _codec(UncleanRecovery, _encode_unclean_recovery, _decode_unclean_recovery),
)
_BY_CLASS = {codec.record_type: codec for codec in _CODECS}
# The registry by record type (api key), as the frame names it.
RECORD_TYPES: Mapping[int, type[MetadataRecord]] = MappingProxyType(
    {codec.record_type.API_KEY: codec.record_type for codec in _CODECS}
)
_BY_API_KEY = {codec.record_type.API_KEY: codec for codec in _CODECS}


def encode_record(record: MetadataRecord) -> bytes:
    """The framed bytes of `record`: one metadata-log entry's data."""
    codec = _BY_CLASS[type(record)]
    writer = _Writer()
    writer.uvarint(FRAME_VERSION)
    writer.uvarint(record.API_KEY)
    writer.uvarint(record.VERSION)
    codec.encode(record, writer)
    return bytes(writer.buffer)


def decode_record(data: bytes) -> MetadataRecord:
    """The record framed in `data`; `RecordDecodeError` if it is not one this codec reads."""
    reader = _Reader(data)
    frame_version = reader.uvarint()
    if frame_version != FRAME_VERSION:
        raise RecordDecodeError(f"unknown metadata record frame version {frame_version}")
    api_key = reader.uvarint()
    version = reader.uvarint()
    codec = _BY_API_KEY.get(api_key)
    if codec is None:
        raise RecordDecodeError(f"unknown metadata record type {api_key}")
    if version != codec.record_type.VERSION:
        raise RecordDecodeError(
            f"unsupported version {version} of {codec.record_type.__name__} (type {api_key}); "
            f"this node reads version {codec.record_type.VERSION}"
        )
    record = codec.decode(reader)
    if reader.position != len(data):
        raise RecordDecodeError(
            f"{len(data) - reader.position} bytes left after {codec.record_type.__name__}"
        )
    return record
