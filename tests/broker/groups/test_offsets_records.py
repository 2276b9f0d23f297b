"""`__consumer_offsets` records (broker/groups/records.py) against Kafka's byte layout."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.groups.records import (
    CorruptOffsetsRecordError,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_record,
    decode_value,
    encode_key,
    encode_value,
)

# Kafka's layout, spelled out: int16 version, then each field.
COMMIT_KEY = b"\x00\x01" + b"\x00\x05group" + b"\x00\x06orders" + b"\x00\x00\x00\x07"
COMMIT_VALUE_V3 = (
    b"\x00\x03"
    + (42).to_bytes(8, "big")
    + (5).to_bytes(4, "big")
    + b"\x00\x04meta"
    + (1_700_000_000_000).to_bytes(8, "big")
)
GROUP_KEY = b"\x00\x02" + b"\x00\x05group"


def short_string(value: bytes | None) -> bytes:
    return b"\xff\xff" if value is None else len(value).to_bytes(2, "big") + value


def member_v3(member_id: bytes, instance_id: bytes | None) -> bytes:
    return (
        short_string(member_id)
        + short_string(instance_id)
        + short_string(b"cli")
        + short_string(b"host")
        + (60_000).to_bytes(4, "big")
        + (45_000).to_bytes(4, "big")
        + b"\x00\x00\x00\x03sub"
        + b"\x00\x00\x00\x02as"
    )


def test_an_offset_commit_is_written_as_kafka_writes_it() -> None:
    key = OffsetCommitKey("group", "orders", 7)
    value = OffsetCommitValue(42, "meta", 1_700_000_000_000, leader_epoch=5)
    assert encode_key(key) == COMMIT_KEY
    assert encode_value(value) == COMMIT_VALUE_V3
    assert decode_record(COMMIT_KEY, COMMIT_VALUE_V3) == (key, value)
    assert decode_record(COMMIT_KEY, None) == (key, None)


def test_group_metadata_is_written_as_kafka_writes_it() -> None:
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=3,
        protocol="range",
        leader="m1",
        members=(
            MemberMetadata("m1", "cli", "host", 45_000, 60_000, b"sub", b"as", "static-1"),
            MemberMetadata("m2", "cli", "host", 45_000, 60_000, b"sub", b"as"),
        ),
        current_state_timestamp_ms=99,
    )
    expected = (
        b"\x00\x03"
        + b"\x00\x08consumer"
        + (3).to_bytes(4, "big")
        + b"\x00\x05range"
        + b"\x00\x02m1"
        + (99).to_bytes(8, "big")
        + (2).to_bytes(4, "big")
        + member_v3(b"m1", b"static-1")
        + member_v3(b"m2", None)
    )
    assert encode_key(GroupMetadataKey("group")) == GROUP_KEY
    assert encode_value(value) == expected
    assert decode_record(GROUP_KEY, expected) == (GroupMetadataKey("group"), value)


def test_older_versions_kafka_wrote_are_read() -> None:
    # OffsetCommitKey v0, OffsetCommitValue v1 (with an expire timestamp, no leader epoch).
    key = decode_key(b"\x00\x00" + COMMIT_KEY[2:])
    value_v1 = (
        b"\x00\x01"
        + (42).to_bytes(8, "big")
        + b"\x00\x00"
        + (10).to_bytes(8, "big")
        + (20).to_bytes(8, "big")
    )
    assert decode_value(key, value_v1) == OffsetCommitValue(42, "", 10, -1, 20)
    # GroupMetadataValue v0: no state timestamp, no instance id, one timeout for both.
    group_v0 = (
        b"\x00\x00"
        + b"\x00\x08consumer"
        + (1).to_bytes(4, "big")
        + b"\xff\xff"
        + b"\xff\xff"
        + (1).to_bytes(4, "big")
        + b"\x00\x02m1"
        + b"\x00\x03cli"
        + b"\x00\x04host"
        + (30_000).to_bytes(4, "big")
        + b"\x00\x00\x00\x00"
        + b"\x00\x00\x00\x00"
    )
    assert decode_value(GroupMetadataKey("g"), group_v0) == GroupMetadataValue(
        "consumer", 1, None, None, (MemberMetadata("m1", "cli", "host", 30_000, 30_000, b"", b""),)
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"\x00\x09" + COMMIT_KEY[2:], None),  # unknown key version
        (COMMIT_KEY[:-1], None),  # cut short
        (COMMIT_KEY + b"\x00", None),  # bytes after the key
        (b"\x00\x01\xff\xff" + COMMIT_KEY[9:], None),  # null group
        (COMMIT_KEY, b"\x00\x04" + COMMIT_VALUE_V3[2:]),  # value version 4 is flexible
        (COMMIT_KEY, COMMIT_VALUE_V3[:-3]),
        (COMMIT_KEY, COMMIT_VALUE_V3 + b"\x01"),
        (GROUP_KEY, b"\x00\x03\x00\x02\xff\xfe"),  # not UTF-8
    ],
)
def test_anything_else_is_refused(key: bytes, value: bytes | None) -> None:
    with pytest.raises(CorruptOffsetsRecordError):
        decode_record(key, value)


names = st.text(max_size=40)
members = st.builds(
    MemberMetadata,
    names,
    names,
    names,
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.binary(max_size=64),
    st.binary(max_size=64),
    st.none() | names,
)


@given(
    key=st.builds(OffsetCommitKey, names, names, st.integers(0, 2**31 - 1)),
    value=st.builds(
        OffsetCommitValue,
        st.integers(-1, 2**63 - 1),
        names,
        st.integers(-1, 2**63 - 1),
        st.integers(-1, 2**31 - 1),
    ),
)
def test_offset_commits_round_trip(key: OffsetCommitKey, value: OffsetCommitValue) -> None:
    assert decode_record(encode_key(key), encode_value(value)) == (key, value)


@given(
    group=names,
    value=st.builds(
        GroupMetadataValue,
        names,
        st.integers(0, 2**31 - 1),
        st.none() | names,
        st.none() | names,
        st.lists(members, max_size=4).map(tuple),
        st.integers(-1, 2**63 - 1),
    ),
)
def test_group_metadata_round_trips(group: str, value: GroupMetadataValue) -> None:
    key = GroupMetadataKey(group)
    assert decode_record(encode_key(key), encode_value(value)) == (key, value)


def test_flexible_version_4_values_are_read() -> None:
    # OffsetCommitValue v4 (Kafka's first flexible version): compact string, tagged fields.
    value_v4 = (
        b"\x00\x04"
        + (42).to_bytes(8, "big")
        + (5).to_bytes(4, "big")
        + b"\x05meta"
        + (1_700_000_000_000).to_bytes(8, "big")
        + b"\x00"
    )
    assert decode_value(OffsetCommitKey("group", "orders", 7), value_v4) == OffsetCommitValue(
        42, "meta", 1_700_000_000_000, leader_epoch=5
    )
