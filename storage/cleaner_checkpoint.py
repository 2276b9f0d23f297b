"""The cleaner checkpoint of a compacted log: its first dirty offset.

Everything below it was compacted by an earlier clean (each key there appears once), so a new
clean only reads from there on to learn the latest offset of each key. Kafka keeps one
`cleaner-offset-checkpoint` per log directory; here each partition directory holds its own, in
the same checkpoint text format with a single `offset` entry.
"""

from __future__ import annotations

from pathlib import Path

from storage.checkpoint_file import CheckpointFormatError, read_checkpoint, write_checkpoint

CHECKPOINT_NAME = "cleaner-offset-checkpoint"


def read_first_dirty_offset(directory: Path) -> int | None:
    """The checkpointed first dirty offset of the log in `directory`; None when there is none
    (never cleaned) or the file is unreadable, either of which means "clean from the start"."""
    try:
        rows = read_checkpoint(directory / CHECKPOINT_NAME, fields=1)
    except CheckpointFormatError:
        return None
    if not rows:
        return None
    return int(rows[0][0])


def write_first_dirty_offset(directory: Path, offset: int) -> None:
    """Record `offset` as the first dirty offset, atomically and durably."""
    write_checkpoint(directory / CHECKPOINT_NAME, [[offset]])


def lower_first_dirty_offset(directory: Path, offset: int) -> None:
    """After a truncation to `offset`: what gets appended there next is dirty again."""
    current = read_first_dirty_offset(directory)
    if current is not None and current > offset:
        write_first_dirty_offset(directory, offset)
