"""The declarative codec (net/schema.py) against Kafka's two message formats, byte by byte.

The expected bytes are worked out by hand from Kafka's format rules (the protocol guide's
"Protocol Primitive Types" and KIP-482's tagged fields), not by the codec itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from net.schema import (
    BOOL,
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    Array,
    Codec,
    Field,
    SchemaDecodeError,
    Struct,
    Versions,
    read_uvarint,
    write_uvarint,
)
from net.schema import UUID as UUID_TYPE


@dataclass(frozen=True)
class Point:
    name: str
    port: int


@dataclass(frozen=True)
class Sample:
    small: int
    short: int
    port: int
    big: int
    flag: bool
    id: UUID
    name: str
    label: str | None
    blob: bytes
    numbers: tuple[int, ...] | None
    points: tuple[Point, ...]
    # Version 1+ only, tagged in the flexible versions.
    extra: tuple[int, ...] = ()
    note: str | None = None


POINT = Struct(Point, (Field("name", STRING), Field("port", UINT16)))
SAMPLE = Struct(
    Sample,
    (
        Field("small", INT8),
        Field("short", INT16),
        Field("port", UINT16),
        Field("big", INT64),
        Field("flag", BOOL),
        Field("id", UUID_TYPE),
        Field("name", STRING),
        Field("label", STRING, nullable="0+"),
        Field("blob", BYTES),
        Field("numbers", Array(INT32), nullable="0+"),
        Field("points", Array(POINT)),
        # Declared out of tag order: written in ascending tag order all the same.
        Field("note", STRING, versions="2+", nullable="2+", tag=7, default=None),
        Field("extra", Array(INT32), versions="2+", tag=3, default=()),
    ),
)
# Versions 0 and 1 are non-flexible, 2 is flexible (as Kafka's group records switch at 4).
CODEC = Codec(SAMPLE, versions="0-2", flexible="2+")

ID = UUID("00112233-4455-6677-8899-aabbccddeeff")
VALUE = Sample(
    small=-2,
    short=300,
    port=65535,
    big=1 << 40,
    flag=True,
    id=ID,
    name="ab",
    label=None,
    blob=b"\x01\x02\x03",
    numbers=(7, -1),
    points=(Point("p", 9092),),
)
FIXED = (
    b"\xfe"  # int8 -2
    + b"\x01\x2c"  # int16 300
    + b"\xff\xff"  # uint16 65535
    + b"\x00\x00\x01\x00\x00\x00\x00\x00"  # int64 2**40
    + b"\x01"  # bool true
    + bytes.fromhex("00112233445566778899aabbccddeeff")  # uuid, 16 bytes
)


def test_a_non_flexible_message_is_kafkas_classic_layout() -> None:
    start = (
        FIXED
        + b"\x00\x02ab"  # string: int16 length, UTF-8
        + b"\xff\xff"  # null string: length -1
        + b"\x00\x00\x00\x03\x01\x02\x03"  # bytes: int32 length
    )
    numbers = b"\x00\x00\x00\x02\x00\x00\x00\x07\xff\xff\xff\xff"  # int32 count, int32s
    points = (
        b"\x00\x00\x00\x01"  # one Point (no tagged fields in non-flexible versions)
        + b"\x00\x01p\x23\x84"
    )
    assert CODEC.encode(VALUE, 0) == start + numbers + points
    assert CODEC.decode(start + numbers + points, 0) == VALUE
    # Version 1 has the same fields; a null array is a count of -1.
    null_numbers = Sample(**{**VALUE.__dict__, "numbers": None})
    assert CODEC.encode(null_numbers, 1) == start + b"\xff\xff\xff\xff" + points
    assert CODEC.decode(start + b"\xff\xff\xff\xff" + points, 1) == null_numbers


def test_a_flexible_message_is_the_compact_layout_with_tagged_fields() -> None:
    value = Sample(**{**VALUE.__dict__, "extra": (5,), "note": "hi"})
    expected = (
        FIXED
        + b"\x03ab"  # compact string: length + 1 as an unsigned varint
        + b"\x00"  # null compact string
        + b"\x04\x01\x02\x03"  # compact bytes
        + b"\x03\x00\x00\x00\x07\xff\xff\xff\xff"  # compact array: count + 1
        + b"\x02"  # one Point...
        + b"\x02p\x23\x84\x00"  # ...with its own (empty) tagged-field section
        + b"\x02"  # two tagged fields, ascending tags:
        + b"\x03\x05\x02\x00\x00\x00\x05"  # tag 3, 5 bytes: compact array (5,)
        + b"\x07\x03\x03hi"  # tag 7, 3 bytes: compact string "hi"
    )
    assert CODEC.encode(value, 2) == expected
    assert CODEC.decode(expected, 2) == value


def test_tagged_fields_at_their_default_are_not_written_and_read_as_the_default() -> None:
    data = CODEC.encode(VALUE, 2)
    assert data.endswith(b"\x02p\x23\x84\x00" + b"\x00")  # no tagged fields at all
    assert CODEC.decode(data, 2) == VALUE


def test_unknown_tagged_fields_are_skipped() -> None:
    data = CODEC.encode(VALUE, 2)
    # Tag 5 (unknown to the schema, 2 bytes) between the known ones; tag 7 null.
    with_unknown = data[:-1] + b"\x02" + b"\x05\x02zz" + b"\x07\x01\x00"
    assert CODEC.decode(with_unknown, 2) == VALUE


def test_fields_a_version_lacks_are_not_written_and_read_as_their_default() -> None:
    value = Sample(**{**VALUE.__dict__, "extra": (5,), "note": "hi"})
    assert CODEC.decode(CODEC.encode(value, 0), 0) == VALUE
    assert CODEC.encode(value, 0) == CODEC.encode(VALUE, 0)


def test_long_lengths_are_multi_byte_varints() -> None:
    value = Sample(**{**VALUE.__dict__, "name": "x" * 200})
    data = CODEC.encode(value, 2)
    # 201 = 0b1_1001001: low 7 bits with the continuation bit, then 1.
    assert data[len(FIXED) : len(FIXED) + 3] == b"\xc9\x01x"
    assert CODEC.decode(data, 2) == value


def test_uvarints() -> None:
    for value, encoded in ((0, b"\x00"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02")):
        out = bytearray()
        write_uvarint(out, value)
        assert out == encoded
        assert read_uvarint(encoded, 0) == (value, len(encoded))


def test_versions_are_read_as_kafkas_specs_write_them() -> None:
    assert 3 in Versions.parse("0+")
    assert 4 not in Versions.parse("1-3")
    assert 2 in Versions.parse("2")
    assert 0 not in Versions.parse("none")
    assert str(Versions.parse("1-3")) == "1-3"


@pytest.mark.parametrize(
    ("data", "version", "message"),
    [
        (CODEC.encode(VALUE, 0)[:-1], 0, "truncated"),
        (CODEC.encode(VALUE, 2)[:-3], 2, "truncated"),
        (CODEC.encode(VALUE, 2) + b"\x00", 2, "1 bytes left"),
        (FIXED + b"\xff\xff", 0, "null in the non-nullable name"),
        (FIXED + b"\x00", 2, "null in the non-nullable name"),
        (FIXED + b"\x00\x02\xff\xfe", 0, "bad Sample v0"),  # not UTF-8
        (CODEC.encode(VALUE, 0), 3, "unsupported version 3 of Sample"),
        # Tag 3 says 6 bytes but its array is 5.
        (CODEC.encode(VALUE, 2)[:-1] + b"\x01\x03\x06\x02\x00\x00\x00\x05\x00", 2, "tag 3"),
    ],
)
def test_anything_else_is_a_decode_error(data: bytes, version: int, message: str) -> None:
    with pytest.raises(SchemaDecodeError, match=message):
        CODEC.decode(data, version)


def test_conversions_and_ignored_fields() -> None:
    @dataclass(frozen=True)
    class Change:
        leader: int | None

    codec = Codec(
        Struct(
            Change,
            (
                Field("padding", INT32, default=0, ignored=True),
                Field(
                    "leader", INT32, tag=1, default=None, decode=lambda v: None if v == -2 else v
                ),
            ),
        ),
        versions="0",
        flexible="0+",
    )
    assert codec.encode(Change(None), 0) == b"\x00\x00\x00\x00\x00"
    assert codec.encode(Change(3), 0) == b"\x00\x00\x00\x00\x01\x01\x04\x00\x00\x00\x03"
    assert codec.decode(b"\x00\x00\x00\x09\x01\x01\x04\xff\xff\xff\xfe", 0) == Change(None)


texts = st.text(max_size=150)
samples = st.builds(
    Sample,
    small=st.integers(-128, 127),
    short=st.integers(-(2**15), 2**15 - 1),
    port=st.integers(0, 2**16 - 1),
    big=st.integers(-(2**63), 2**63 - 1),
    flag=st.booleans(),
    id=st.uuids(),
    name=texts,
    label=st.none() | texts,
    blob=st.binary(max_size=40),
    numbers=st.none() | st.lists(st.integers(-(2**31), 2**31 - 1), max_size=40).map(tuple),
    points=st.lists(st.builds(Point, texts, st.integers(0, 2**16 - 1)), max_size=3).map(tuple),
    extra=st.lists(st.integers(-(2**31), 2**31 - 1), max_size=3).map(tuple),
    note=st.none() | texts,
)


@given(samples)
def test_every_version_round_trips(value: Sample) -> None:
    assert CODEC.decode(CODEC.encode(value, 2), 2) == value
    lacking = Sample(**{**value.__dict__, "extra": (), "note": None})
    assert CODEC.decode(CODEC.encode(value, 0), 0) == lacking
