"""The variable-length forms of Kafka's wire format (unsigned varints, lengths and strings,
compact in flexible versions), appended to a bytearray by the hand-written encoders of hot
messages (`net.produce_response`, `net.fetch_request`)."""

import struct

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")


def append_uvarint(out: bytearray, value: int) -> None:
    """An unsigned varint (flexible versions' lengths and tags)."""
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def append_length(out: bytearray, length: int, flexible: bool) -> None:
    """An array's length: a compact (length + 1) varint when `flexible`, else an int32."""
    if flexible:
        append_uvarint(out, length + 1)
    else:
        out += _INT32.pack(length)


def append_string(out: bytearray, value: str, flexible: bool) -> None:
    """A string: compact when `flexible`, else int16-length prefixed."""
    encoded = value.encode()
    if flexible:
        append_uvarint(out, len(encoded) + 1)
    else:
        out += _INT16.pack(len(encoded))
    out += encoded


def append_nullable_string(out: bytearray, value: str | None, flexible: bool) -> None:
    """A nullable string: null is a 0 varint when `flexible`, else length -1."""
    if value is None:
        if flexible:
            out.append(0)
        else:
            out += _INT16.pack(-1)
        return
    append_string(out, value, flexible)
