"""Replace small files atomically and durably: temp file, fsync, rename, fsync the directory
(and the unsynced forms whose caller syncs them later).

`write_atomically` replaces one file; `write_all_atomically` replaces many (a topic's thousands
of new partitions each write a leader-epoch checkpoint and a `partition.metadata`) with the
same guarantee for each, but with its fsyncs issued in parallel: the file system commits
concurrent fsyncs together, so a thousand files cost about what a few dozen sequential ones do.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from storage import durability
from storage.file_threads import file_threads


def write_atomically(path: Path, data: bytes, *, sync_directory: bool = True) -> None:
    """Make `path` hold exactly `data`, durably; a crash leaves either the old or the new file.

    Without `sync_directory`, the new name is durable only once the caller (or the next sync
    of that directory) syncs it; the content is synced either way."""
    temporary = _temporary(path)
    _write(temporary, data)
    os.replace(temporary, path)
    if sync_directory:
        durability.sync_directory(path.parent)
        durability.record_rename(temporary, path)


def replace_unsynced(path: Path, data: bytes) -> None:
    """Make `path` hold exactly `data` (a temp file renamed over it), with no fsync: a process
    crash leaves the old or the new file, a power cut maybe neither. For a file nothing
    depends on until the caller's `sync_replaced` of it."""
    temporary = _temporary(path)
    _write(temporary, data, synced=False)
    os.replace(temporary, path)


def write_new_unsynced(path: Path, data: bytes) -> None:
    """Write `data` in place to `path`, a file no one reads yet (in a directory just made),
    with no fsync and no temp file: a crash may leave it missing, empty or cut short, which
    its reader must take as never written. For a file nothing depends on until the
    caller's `sync_replaced` of it."""
    _write(path, data, synced=False)


def sync_replaced(path: Path) -> None:
    """Make a file `replace_unsynced` or `write_new_unsynced` wrote durable: its content,
    then its name."""
    fd = os.open(path, os.O_RDONLY)
    try:
        durability.sync_file(fd, path)
    finally:
        os.close(fd)
    durability.sync_directory(path.parent)


def write_all_atomically(
    files: Mapping[Path, bytes], *, sync_directories: bool = True
) -> dict[Path, OSError]:
    """`write_atomically` for every `path -> data` of `files`, the fsyncs of the contents and
    then of the distinct directories each issued in parallel. Every file is written, synced and
    renamed, or left as it was; returns the files that failed, with their error (a failed
    directory sync fails every file renamed into it)."""
    failed: dict[Path, OSError] = {}
    if not files:
        return failed
    pool = file_threads()
    written = dict(
        zip(files, pool.map(_written_or_error, files.keys(), files.values()), strict=True)
    )
    renamed: list[Path] = []
    for path, write_error in written.items():
        if write_error is not None:
            failed[path] = write_error
            continue
        try:
            os.replace(_temporary(path), path)
        except OSError as rename_error:
            failed[path] = rename_error
            continue
        renamed.append(path)
    if not sync_directories:
        return failed
    directories = sorted({path.parent for path in renamed})
    synced = dict(zip(directories, pool.map(_directory_synced_or_error, directories), strict=True))
    for path in renamed:
        directory_error = synced[path.parent]
        if directory_error is None:
            durability.record_rename(_temporary(path), path)
        else:
            failed[path] = directory_error
    return failed


def remove_durably(path: Path) -> None:
    """Unlink `path` (if present) and sync its directory, so the removal survives a crash."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    durability.sync_directory(path.parent)
    durability.record_unlink(path)


def _temporary(path: Path) -> Path:
    return path.with_name(path.name + ".tmp")


def _write(temporary: Path, data: bytes, *, synced: bool = True) -> None:
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if synced:
            durability.sync_file(fd, temporary)
    except OSError:
        # Do not leave a partial temporary file holding space on a full disk.
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    finally:
        os.close(fd)


def _written_or_error(path: Path, data: bytes) -> OSError | None:
    try:
        _write(_temporary(path), data)
    except OSError as error:
        return error
    return None


def _directory_synced_or_error(directory: Path) -> OSError | None:
    try:
        durability.sync_directory(directory)
    except OSError as error:
        return error
    return None
