"""The records of the `__consumer_offsets` topic, in Kafka's own format.

Every record is keyed, so compaction keeps the newest one per key:

- an offset commit: key OffsetCommitKey (group, topic, partition), value OffsetCommitValue
  (offset, leader epoch, metadata, commit timestamp);
- a group's metadata: key GroupMetadataKey (group), value GroupMetadataValue (protocol type,
  generation, protocol, leader, members with their subscription and assignment);
- a null value (a tombstone) deletes what the key held: an offset, or a whole group.

Keys and values start with an int16, then the fields. A key's int16 says which record it is
(0 and 1: offset commit, 2: group metadata), as in Kafka, and its fields are the key's version 0
in Kafka's non-flexible encoding (big-endian integers, strings as int16 length + UTF-8 with -1
for null). A value's int16 is its version: versions 0 to 3 are non-flexible (bytes as int32
length, arrays as int32 count), version 4 is flexible (compact strings, bytes and arrays, tagged
fields). This broker writes OffsetCommitValue v3 and GroupMetadataValue v3, the versions Kafka
3.x writes, and reads versions 0 to 4 of both, so `kcat` and Kafka's tools can read the topic,
and a log Kafka wrote can be read here. The records are declared with `net.schema`, as Kafka's
specs (group-coordinator/src/main/resources/common/message/) declare them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

from net.schema import BYTES, INT32, INT64, STRING, Array, Codec, Field, SchemaDecodeError, Struct

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
_EXPIRING_OFFSET_COMMIT_VALUE_VERSION = 1
GROUP_METADATA_VALUE_VERSION = 3

_INT16 = struct.Struct(">h")


class CorruptOffsetsRecordError(ValueError):
    """Bytes that are not a `__consumer_offsets` record of a version this broker reads."""


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp_ms: int
    leader_epoch: int = -1
    # Only version 1 has it (an explicit retention); later versions leave it to the broker.
    expire_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...]
    current_state_timestamp_ms: int = -1


OffsetsKey = OffsetCommitKey | GroupMetadataKey
OffsetsValue = OffsetCommitValue | GroupMetadataValue


# --- the records as Kafka's specs declare them ---------------------------------------------------

# OffsetCommitKey and GroupMetadataKey: version 0 of each, after the int16 record type.
_OFFSET_COMMIT_KEY = Codec(
    Struct(
        OffsetCommitKey, (Field("group", STRING), Field("topic", STRING), Field("partition", INT32))
    ),
    versions="0",
    flexible="none",
)
_GROUP_METADATA_KEY = Codec(
    Struct(GroupMetadataKey, (Field("group", STRING),)), versions="0", flexible="none"
)
_KEYS = {0: _OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY_VERSION: _OFFSET_COMMIT_KEY}
_KEYS[GROUP_METADATA_KEY_VERSION] = _GROUP_METADATA_KEY

_OFFSET_COMMIT_VALUE = Codec(
    Struct(
        OffsetCommitValue,
        (
            Field("offset", INT64),
            Field("leader_epoch", INT32, versions="3+", default=-1),
            Field("metadata", STRING),
            Field("commit_timestamp_ms", INT64),
            Field("expire_timestamp_ms", INT64, versions="1", default=-1),
        ),
    ),
    versions="0-4",
    flexible="4+",
)
_MEMBER_METADATA = Struct(
    MemberMetadata,
    (
        Field("member_id", STRING),
        Field("group_instance_id", STRING, versions="3+", nullable="3+", default=None),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("rebalance_timeout_ms", INT32, versions="1+", default=-1),
        Field("session_timeout_ms", INT32),
        Field("subscription", BYTES),
        Field("assignment", BYTES),
    ),
)
_GROUP_METADATA_VALUE = Codec(
    Struct(
        GroupMetadataValue,
        (
            Field("protocol_type", STRING),
            Field("generation", INT32),
            Field("protocol", STRING, nullable="0+"),
            Field("leader", STRING, nullable="0+"),
            Field("current_state_timestamp_ms", INT64, versions="2+", default=-1),
            Field("members", Array(_MEMBER_METADATA)),
        ),
    ),
    versions="0-4",
    flexible="4+",
)


def _encode(prefix: int, codec: Codec, message: object, version: int) -> bytes:
    out = bytearray(_INT16.pack(prefix))
    codec.write(message, version, out)
    return bytes(out)


def encode_key(key: OffsetsKey) -> bytes:
    """The record key of `key`, at the version Kafka writes."""
    if isinstance(key, OffsetCommitKey):
        return _encode(OFFSET_COMMIT_KEY_VERSION, _OFFSET_COMMIT_KEY, key, 0)
    return _encode(GROUP_METADATA_KEY_VERSION, _GROUP_METADATA_KEY, key, 0)


def encode_value(value: OffsetsValue) -> bytes:
    """The record value of `value`, at version 3; an offset commit with an explicit expiry at
    version 1, the only one that holds it (as Kafka writes one)."""
    if isinstance(value, OffsetCommitValue):
        if value.expire_timestamp_ms >= 0:
            version = _EXPIRING_OFFSET_COMMIT_VALUE_VERSION
        else:
            version = OFFSET_COMMIT_VALUE_VERSION
        return _encode(version, _OFFSET_COMMIT_VALUE, value, version)
    version = GROUP_METADATA_VALUE_VERSION
    return _encode(version, _GROUP_METADATA_VALUE, value, version)


def _decode(data: bytes, codecs: dict[int, Codec], what: str) -> object:
    if len(data) < 2:
        raise CorruptOffsetsRecordError(f"{what} cut short at byte {len(data)}")
    version = _INT16.unpack_from(data)[0]
    codec = codecs.get(version)
    if codec is None:
        raise CorruptOffsetsRecordError(f"unknown {what} version {version}")
    try:
        message, end = codec.read(data, 2, 0 if what == "key" else version)
    except SchemaDecodeError as error:
        raise CorruptOffsetsRecordError(str(error)) from error
    if end != len(data):
        raise CorruptOffsetsRecordError(f"{len(data) - end} bytes after the record")
    return message


def decode_key(data: bytes) -> OffsetsKey:
    """The key of a `__consumer_offsets` record; CorruptOffsetsRecordError if it is none."""
    key = _decode(data, _KEYS, "key")
    assert isinstance(key, OffsetCommitKey | GroupMetadataKey)
    return key


_OFFSET_COMMIT_VALUES = dict.fromkeys(range(5), _OFFSET_COMMIT_VALUE)
_GROUP_METADATA_VALUES = dict.fromkeys(range(5), _GROUP_METADATA_VALUE)


def decode_value(key: OffsetsKey, data: bytes) -> OffsetsValue:
    """The value stored under `key` (versions 0 to 4)."""
    if isinstance(key, OffsetCommitKey):
        value = _decode(data, _OFFSET_COMMIT_VALUES, "value")
        assert isinstance(value, OffsetCommitValue)
        return value
    group = _decode(data, _GROUP_METADATA_VALUES, "value")
    assert isinstance(group, GroupMetadataValue)
    if any(member.rebalance_timeout_ms == -1 for member in group.members):
        # Version 0 had one timeout for both, as Kafka reads it.
        members = tuple(
            replace(member, rebalance_timeout_ms=member.session_timeout_ms)
            if member.rebalance_timeout_ms == -1
            else member
            for member in group.members
        )
        group = replace(group, members=members)
    return group


def decode_record(key: bytes, value: bytes | None) -> tuple[OffsetsKey, OffsetsValue | None]:
    """A record of the topic: its key, and its value or None for a tombstone."""
    decoded = decode_key(key)
    return decoded, None if value is None else decode_value(decoded, value)
