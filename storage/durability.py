"""Every fsync the storage layer makes, and an honest record of what it made durable.

All of storage/ syncs through `sync_file`, `sync_directory` and `FileSystemSync` (a whole file
system at once, for a clean stop). When a durability journal is
enabled (`enable_journal`, done by the node when `KRAFT_DURABILITY_JOURNAL` names a file), each
sync appends one line to it, written with `os.write` on an O_APPEND descriptor so the line is in
the kernel before the call returns and survives a SIGKILL of the process:

    F <length> <path>     the first <length> bytes of <path> are on disk
    R <source> <target>   <source> (a file or a directory) was renamed to <target> (then its
                          directory was synced)
    U <path>              <path> was unlinked (then its directory was synced)

(a file system sync writes an F line for every file under its directory)

(fields separated by tabs, so paths may hold spaces)
`power_cut` replays a journal over data directories after the process was killed: each file is
cut back to its last durable length and files never synced are deleted, as a power failure that
drops the page cache would leave them. The length is taken *before* the fsync starts, so it
never claims bytes written concurrently with the sync.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Callable
from pathlib import Path


class _Journal:
    """The process-wide journal descriptor (None when no journal is kept)."""

    fd: int | None = None


_journal = _Journal()


def enable_journal(path: str | os.PathLike[str]) -> None:
    """Start recording durable lengths to `path` (appending; created if missing)."""
    disable_journal()
    _journal.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def disable_journal() -> None:
    if _journal.fd is not None:
        os.close(_journal.fd)
        _journal.fd = None


def _record(line: str) -> None:
    if _journal.fd is not None:
        os.write(_journal.fd, line.encode() + b"\n")


def sync_file(fd: int, path: str | os.PathLike[str]) -> None:
    """fdatasync `fd` (open on `path`) and record the length it made durable."""
    length = os.fstat(fd).st_size
    os.fdatasync(fd)
    _record(f"F\t{length}\t{os.path.abspath(path)}")


def sync_directory(path: str | os.PathLike[str]) -> None:
    """fsync a directory so the names created, renamed or removed in it are durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileSystemSync:
    """syncfs(2) of the file system holding `directory`: every file, name and removal written
    there so far made durable in one call, where fsyncs of each would take one disk flush per
    file (a node stopping with thousands of logs).

    The descriptor is opened here and kept: `sync` then reports every writeback error of the
    file system since (Linux 5.8 and later), as an fsync reports its file's errors since the
    file was opened. On an older kernel, or a C library without syncfs, `supported()` is
    False and the caller fsyncs each file instead."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)

    @staticmethod
    def supported() -> bool:
        """Whether syncfs exists here and reports writeback errors (Linux 5.8+)."""
        release = os.uname().release.split(".")
        try:
            version = (int(release[0]), int(release[1].split("-")[0]))
        except (IndexError, ValueError):
            return False
        return os.uname().sysname == "Linux" and version >= (5, 8) and _syncfs is not None

    def sync(self) -> None:
        """Make everything written on the file system durable. Raises OSError if the kernel
        reports a writeback error (of any file there) since this object was made."""
        # The journal's lengths are taken before the sync: bytes written during it may not
        # be covered.
        lengths = _file_lengths(self.directory) if _journal.fd is not None else {}
        assert _syncfs is not None
        if _syncfs(self._fd) != 0:
            error = ctypes.get_errno()
            raise OSError(error, os.strerror(error), str(self.directory))
        for path, length in lengths.items():
            _record(f"F\t{length}\t{path}")

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _load_syncfs() -> Callable[[int], int] | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    syncfs: Callable[[int], int] = function
    return syncfs


_syncfs = _load_syncfs()


def _file_lengths(directory: Path) -> dict[str, int]:
    """The length of every regular file under `directory`, by absolute path."""
    lengths = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.abspath(os.path.join(root, name))
            with contextlib.suppress(FileNotFoundError):
                lengths[path] = os.stat(path).st_size
    return lengths


def record_rename(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Note that `source` became `target` (call once the directory is synced)."""
    _record(f"R\t{os.path.abspath(source)}\t{os.path.abspath(target)}")


def record_unlink(path: str | os.PathLike[str]) -> None:
    """Note that `path` is gone (call once the directory is synced)."""
    _record(f"U\t{os.path.abspath(path)}")


def durable_lengths(journal: str | os.PathLike[str]) -> dict[str, int]:
    """Replay a journal: the durable length of every file that has one."""
    lengths: dict[str, int] = {}
    with open(journal, encoding="utf-8") as lines:
        for line in lines:
            # A line cut short by the kill is incomplete and was never acted upon.
            if not line.endswith("\n"):
                break
            kind, _, rest = line.rstrip("\n").partition("\t")
            if kind == "F":
                length, _, path = rest.partition("\t")
                lengths[path] = int(length)
            elif kind == "R":
                source, _, target = rest.partition("\t")
                moved = lengths.pop(source, None)
                if moved is not None:
                    lengths[target] = moved
                    continue
                lengths.pop(target, None)
                # A renamed directory (a deleted log put aside) takes its files along.
                inside = source + os.sep
                for path in [path for path in lengths if path.startswith(inside)]:
                    lengths[target + os.sep + path[len(inside) :]] = lengths.pop(path)
            elif kind == "U":
                lengths.pop(rest, None)
    return lengths


def power_cut(journal: str | os.PathLike[str], *directories: str | os.PathLike[str]) -> None:
    """After the writing process is dead, make `directories` look as a power cut would leave
    them: every file truncated to its durable length, files never synced removed."""
    lengths = durable_lengths(journal)
    journal_path = os.path.abspath(journal)
    for directory in directories:
        for root, _, files in os.walk(directory):
            for name in files:
                path = os.path.abspath(os.path.join(root, name))
                if path == journal_path:
                    continue
                durable = lengths.get(path)
                if durable is None:
                    os.unlink(path)
                elif Path(path).stat().st_size > durable:
                    os.truncate(path, durable)
