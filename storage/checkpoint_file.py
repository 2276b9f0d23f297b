"""Kafka's checkpoint text format: a version line, an entry count, then one entry per line.

    0
    2
    orders 0 1500
    orders 1 1732

Used for the leader-epoch checkpoint (`epoch start_offset`) of each partition and for the
high-watermark, recovery-point and log-start-offset checkpoints of a log directory
(`topic partition offset`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from storage.atomic_file import write_atomically
from storage.errors import StorageError

CHECKPOINT_VERSION = 0


class CheckpointFormatError(StorageError):
    """A checkpoint file exists but does not parse; callers fall back to a safe default."""


def write_checkpoint(path: Path, entries: Iterable[Sequence[object]]) -> None:
    """Write `entries` (each a row of space-free values) atomically and durably."""
    write_atomically(path, checkpoint_bytes(entries))


def checkpoint_bytes(entries: Iterable[Sequence[object]]) -> bytes:
    """The checkpoint file holding `entries` (each a row of space-free values)."""
    rows = [" ".join(str(value) for value in entry) for entry in entries]
    return ("\n".join([str(CHECKPOINT_VERSION), str(len(rows)), *rows]) + "\n").encode()


def read_checkpoint(path: Path, fields: int) -> list[list[str]] | None:
    """Read a checkpoint whose entries have `fields` values; None if the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        raise CheckpointFormatError(f"{path}: not text") from error
    if not text.endswith("\n"):
        # Written whole with a final newline: without it the last number may be cut short.
        raise CheckpointFormatError(f"{path}: cut short")
    lines = text.splitlines()
    if len(lines) < 2 or lines[0].strip() != str(CHECKPOINT_VERSION):
        raise CheckpointFormatError(f"{path}: missing or unknown version line")
    try:
        count = int(lines[1])
    except ValueError as error:
        raise CheckpointFormatError(f"{path}: bad entry count {lines[1]!r}") from error
    rows = [line.split() for line in lines[2:] if line.strip()]
    if count != len(rows) or any(len(row) != fields for row in rows):
        raise CheckpointFormatError(f"{path}: expected {count} entries of {fields} fields")
    return rows
