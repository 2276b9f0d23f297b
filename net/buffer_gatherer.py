"""BufferGatherer: a `write` sink that builds a list of buffers without copying large ones."""

from typing import TypeAlias

Buffer: TypeAlias = bytes | bytearray | memoryview

# Chunks at least this large are kept by reference; smaller ones are copied together.
GATHER_MIN = 4096


class BufferGatherer:
    """Collects written chunks for `transport.writelines`.

    Small chunks (field encodings) are appended to one growing bytearray; chunks of GATHER_MIN
    bytes or more (record data) are kept as the very objects written, so a memoryview of a
    segment file reaches the socket without being copied. Accepts anything with `write`
    semantics, e.g. as the buffer argument of kio's entity writers.
    """

    __slots__ = ("_buffers", "_pending")

    def __init__(self) -> None:
        self._buffers: list[Buffer] = []
        self._pending = bytearray()

    def write(self, data: Buffer) -> int:
        if len(data) >= GATHER_MIN:
            if self._pending:
                self._buffers.append(self._pending)
                self._pending = bytearray()
            self._buffers.append(data)
        else:
            self._pending += data
        return len(data)

    def buffers(self) -> list[Buffer]:
        """The buffers written so far, in order; their concatenation is everything written."""
        if self._pending:
            self._buffers.append(self._pending)
            self._pending = bytearray()
        return self._buffers
