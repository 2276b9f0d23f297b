"""Every fsync the storage layer makes, and an honest record of what it made durable.

All of storage/ syncs through `sync_file` and `sync_directory`. When a durability journal is
enabled (`enable_journal`, done by the node when `KRAFT_DURABILITY_JOURNAL` names a file), each
sync appends one line to it, written with `os.write` on an O_APPEND descriptor so the line is in
the kernel before the call returns and survives a SIGKILL of the process:

    F <length> <path>     the first <length> bytes of <path> are on disk
    R <source> <target>   <source> (a file or a directory) was renamed to <target> (then its
                          directory was synced)
    U <path>              <path> was unlinked (then its directory was synced)

(fields separated by tabs, so paths may hold spaces)
`power_cut` replays a journal over data directories after the process was killed: each file is
cut back to its last durable length and files never synced are deleted, as a power failure that
drops the page cache would leave them. The length is taken *before* the fsync starts, so it
never claims bytes written concurrently with the sync.
"""

from __future__ import annotations

import os
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
