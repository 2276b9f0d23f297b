"""The records of the `__consumer_offsets` topic, in Kafka's own format.

Every record is keyed, so compaction keeps the newest one per key:

- an offset commit: key OffsetCommitKey (group, topic, partition), value OffsetCommitValue
  (offset, leader epoch, metadata, commit timestamp);
- a group's metadata: key GroupMetadataKey (group), value GroupMetadataValue (protocol type,
  generation, protocol, leader, members with their subscription and assignment);
- a null value (a tombstone) deletes what the key held: an offset, or a whole group.

Keys and values start with an int16 version, then the fields in Kafka's non-flexible encoding
(big-endian integers, strings as int16 length + UTF-8 with -1 for null, bytes as int32 length,
arrays as int32 count). The key version says which record it is (0 and 1: offset commit, 2:
group metadata), as in Kafka. This broker writes OffsetCommitValue v3 and GroupMetadataValue
v3, the versions Kafka 3.x writes, and reads versions 0 to 3 of both, so `kcat` and Kafka's
tools can read the topic, and a log Kafka wrote can be read here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
_EXPIRING_OFFSET_COMMIT_VALUE_VERSION = 1
GROUP_METADATA_VALUE_VERSION = 3
_MAX_VALUE_VERSION = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


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


# --- encoding --------------------------------------------------------------------------------


class _Writer:
    def __init__(self, version: int) -> None:
        self.parts: list[bytes] = [_INT16.pack(version)]

    def int32(self, value: int) -> None:
        self.parts.append(_INT32.pack(value))

    def int64(self, value: int) -> None:
        self.parts.append(_INT64.pack(value))

    def string(self, value: str | None) -> None:
        if value is None:
            self.parts.append(_INT16.pack(-1))
            return
        data = value.encode()
        if len(data) > 0x7FFF:
            raise ValueError(f"string of {len(data)} bytes is too long for an int16 length")
        self.parts.append(_INT16.pack(len(data)))
        self.parts.append(data)

    def blob(self, value: bytes) -> None:
        self.parts.append(_INT32.pack(len(value)))
        self.parts.append(value)

    def result(self) -> bytes:
        return b"".join(self.parts)


def encode_key(key: OffsetsKey) -> bytes:
    """The record key of `key`, at the version Kafka writes."""
    if isinstance(key, OffsetCommitKey):
        writer = _Writer(OFFSET_COMMIT_KEY_VERSION)
        writer.string(key.group)
        writer.string(key.topic)
        writer.int32(key.partition)
    else:
        writer = _Writer(GROUP_METADATA_KEY_VERSION)
        writer.string(key.group)
    return writer.result()


def encode_value(value: OffsetsValue) -> bytes:
    """The record value of `value`, at version 3; an offset commit with an explicit expiry at
    version 1, the only one that holds it (as Kafka writes one)."""
    if isinstance(value, OffsetCommitValue) and value.expire_timestamp_ms >= 0:
        writer = _Writer(_EXPIRING_OFFSET_COMMIT_VALUE_VERSION)
        writer.int64(value.offset)
        writer.string(value.metadata)
        writer.int64(value.commit_timestamp_ms)
        writer.int64(value.expire_timestamp_ms)
        return writer.result()
    if isinstance(value, OffsetCommitValue):
        writer = _Writer(OFFSET_COMMIT_VALUE_VERSION)
        writer.int64(value.offset)
        writer.int32(value.leader_epoch)
        writer.string(value.metadata)
        writer.int64(value.commit_timestamp_ms)
        return writer.result()
    writer = _Writer(GROUP_METADATA_VALUE_VERSION)
    writer.string(value.protocol_type)
    writer.int32(value.generation)
    writer.string(value.protocol)
    writer.string(value.leader)
    writer.int64(value.current_state_timestamp_ms)
    writer.int32(len(value.members))
    for member in value.members:
        writer.string(member.member_id)
        writer.string(member.group_instance_id)
        writer.string(member.client_id)
        writer.string(member.client_host)
        writer.int32(member.rebalance_timeout_ms)
        writer.int32(member.session_timeout_ms)
        writer.blob(member.subscription)
        writer.blob(member.assignment)
    return writer.result()


# --- decoding --------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def _unpack(self, layout: struct.Struct) -> int:
        if self.position + layout.size > len(self.data):
            raise CorruptOffsetsRecordError(f"record cut short at byte {self.position}")
        (value,) = layout.unpack_from(self.data, self.position)
        self.position += layout.size
        return int(value)

    def int16(self) -> int:
        return self._unpack(_INT16)

    def int32(self) -> int:
        return self._unpack(_INT32)

    def int64(self) -> int:
        return self._unpack(_INT64)

    def _take(self, length: int) -> bytes:
        end = self.position + length
        if length < 0 or end > len(self.data):
            raise CorruptOffsetsRecordError(f"record cut short at byte {self.position}")
        chunk = self.data[self.position : end]
        self.position = end
        return chunk

    def nullable_string(self) -> str | None:
        length = self.int16()
        if length == -1:
            return None
        try:
            return self._take(length).decode()
        except UnicodeDecodeError as error:
            raise CorruptOffsetsRecordError(f"string is not UTF-8: {error}") from error

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise CorruptOffsetsRecordError(f"null string at byte {self.position}")
        return value

    def blob(self) -> bytes:
        return self._take(self.int32())

    def finish(self) -> None:
        if self.position != len(self.data):
            raise CorruptOffsetsRecordError(
                f"{len(self.data) - self.position} bytes after the record"
            )


def decode_key(data: bytes) -> OffsetsKey:
    """The key of a `__consumer_offsets` record; CorruptOffsetsRecordError if it is none."""
    reader = _Reader(data)
    version = reader.int16()
    key: OffsetsKey
    if version in (0, OFFSET_COMMIT_KEY_VERSION):
        key = OffsetCommitKey(reader.string(), reader.string(), reader.int32())
    elif version == GROUP_METADATA_KEY_VERSION:
        key = GroupMetadataKey(reader.string())
    else:
        raise CorruptOffsetsRecordError(f"unknown key version {version}")
    reader.finish()
    return key


def decode_value(key: OffsetsKey, data: bytes) -> OffsetsValue:
    """The value stored under `key` (versions 0 to 3)."""
    reader = _Reader(data)
    version = reader.int16()
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise CorruptOffsetsRecordError(f"unknown value version {version}")
    value: OffsetsValue
    if isinstance(key, OffsetCommitKey):
        offset = reader.int64()
        leader_epoch = reader.int32() if version >= 3 else -1
        metadata = reader.string()
        commit_timestamp = reader.int64()
        expire_timestamp = reader.int64() if version == 1 else -1
        value = OffsetCommitValue(
            offset, metadata, commit_timestamp, leader_epoch, expire_timestamp
        )
    else:
        protocol_type = reader.string()
        generation = reader.int32()
        protocol = reader.nullable_string()
        leader = reader.nullable_string()
        state_timestamp = reader.int64() if version >= 2 else -1
        members = []
        for _ in range(reader.int32()):
            member_id = reader.string()
            instance_id = reader.nullable_string() if version >= 3 else None
            client_id = reader.string()
            client_host = reader.string()
            rebalance_timeout = reader.int32() if version >= 1 else -1
            session_timeout = reader.int32()
            subscription = reader.blob()
            assignment = reader.blob()
            members.append(
                MemberMetadata(
                    member_id,
                    client_id,
                    client_host,
                    session_timeout,
                    # Version 0 had one timeout for both, as Kafka reads it.
                    session_timeout if rebalance_timeout == -1 else rebalance_timeout,
                    subscription,
                    assignment,
                    instance_id,
                )
            )
        value = GroupMetadataValue(
            protocol_type, generation, protocol, leader, tuple(members), state_timestamp
        )
    reader.finish()
    return value


def decode_record(key: bytes, value: bytes | None) -> tuple[OffsetsKey, OffsetsValue | None]:
    """A record of the topic: its key, and its value or None for a tombstone."""
    decoded = decode_key(key)
    return decoded, None if value is None else decode_value(decoded, value)
