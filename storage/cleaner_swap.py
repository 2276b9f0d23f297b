"""The files of the cleaner's segment swap, and what opening a log does with a swap a crash cut.

A clean writes and fsyncs `<base offset>.log.cleaned`, holding the same offset range as the
sealed segments it replaces and ending with the same batch (Kafka's replaceSegments):

1. renaming it to `.log.swap` commits the swap;
2. the replaced segments' files are unlinked;
3. the swap file takes its final name, `<base offset>.log`, and its indexes are rebuilt.

A crash before step 1 leaves the old segments and a `.cleaned` file, which
`finish_interrupted_swaps` deletes; one after it leaves a `.swap` file, which it finishes (as
Kafka's LogLoader does). `Log.replace_segments` puts the new segment in the log's list.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import structlog

from net.record_batch import HEADER_SIZE, read_header
from storage import durability
from storage.segment import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    Segment,
    segment_file_name,
)

log = structlog.get_logger(__name__)


def swap_in(
    directory: Path, cleaned: Path, replaced: Sequence[Segment], index_interval_bytes: int
) -> Segment:
    """Replace the files of the segments `replaced` (consecutive, oldest first) by `cleaned`,
    committing as the module docstring says, and open the new segment. Raises OSError or
    RecordBatchError once the swap may have begun: only a reopen then knows which of the two
    is on disk."""
    base_offset = replaced[0].base_offset
    final = directory / segment_file_name(base_offset, LOG_SUFFIX)
    swap = final.with_name(final.name + SWAP_SUFFIX)
    _rename_durably(cleaned, swap)
    for segment in replaced:
        segment.delete()
    durability.sync_directory(directory)
    _rename_durably(swap, final)
    segment = Segment.open_existing(directory, base_offset, index_interval_bytes)
    segment.offset_index.sync()
    segment.time_index.sync()
    return segment


def cleaned_path(directory: Path, base_offset: int) -> Path:
    """Where the cleaned segment replacing segments from `base_offset` on must be written."""
    return directory / segment_file_name(base_offset, LOG_SUFFIX + CLEANED_SUFFIX)


def interrupted_swap_in(names: Iterable[str]) -> bool:
    """Whether a directory holding files `names` holds what a crash left of a swap (a
    `.cleaned` or `.swap` log file), which `finish_interrupted_swaps` must settle."""
    left = (LOG_SUFFIX + CLEANED_SUFFIX, LOG_SUFFIX + SWAP_SUFFIX)
    return any(name.endswith(left) for name in names)


def finish_interrupted_swaps(directory: Path) -> None:
    """Roll back or finish what a crash left of a swap: a `.cleaned` file was never committed
    and goes; a `.swap` file was, so the segments whose base offsets lie in its offset range
    (the ones it replaces, not all unlinked yet) go, and it takes its final name."""
    _unlink_durably(
        directory,
        [path for path in directory.iterdir() if path.name.endswith(LOG_SUFFIX + CLEANED_SUFFIX)],
    )
    for swap in sorted(directory.glob("*" + LOG_SUFFIX + SWAP_SUFFIX)):
        stem = swap.name.removesuffix(LOG_SUFFIX + SWAP_SUFFIX)
        if not stem.isdigit():
            continue
        base_offset = int(stem)
        end_offset = _next_offset_of(swap, base_offset)
        _unlink_durably(
            directory,
            [
                path
                for path in directory.iterdir()
                if path.suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)
                and path.stem.isdigit()
                and base_offset <= int(path.stem) < end_offset
            ],
        )
        _rename_durably(swap, directory / segment_file_name(base_offset, LOG_SUFFIX))
        log.warning("log_segment_swap_finished", directory=str(directory), base_offset=base_offset)


def _next_offset_of(path: Path, base_offset: int) -> int:
    """The offset after the last batch of a log file that was fsynced whole (a swap file)."""
    next_offset = base_offset
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        position = 0
        while position < size:
            header = read_header(os.pread(fd, HEADER_SIZE, position))
            next_offset = header.next_offset
            position += header.size
    finally:
        os.close(fd)
    return next_offset


def _unlink_durably(directory: Path, paths: list[Path]) -> None:
    for path in paths:
        path.unlink()
    if paths:
        durability.sync_directory(directory)
    for path in paths:
        durability.record_unlink(path)


def _rename_durably(source: Path, target: Path) -> None:
    os.replace(source, target)
    durability.sync_directory(target.parent)
    durability.record_rename(source, target)
