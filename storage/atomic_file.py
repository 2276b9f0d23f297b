"""Replace a small file atomically and durably: temp file, fsync, rename, fsync the directory."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from storage import durability


def write_atomically(path: Path, data: bytes, *, sync_directory: bool = True) -> None:
    """Make `path` hold exactly `data`, durably; a crash leaves either the old or the new file.

    Without `sync_directory`, the new name is durable only once the caller (or the next sync
    of that directory) syncs it; the content is synced either way."""
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        durability.sync_file(fd, temporary)
    except OSError:
        # Do not leave a partial temporary file holding space on a full disk.
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    finally:
        os.close(fd)
    os.replace(temporary, path)
    if sync_directory:
        durability.sync_directory(path.parent)
        durability.record_rename(temporary, path)


def remove_durably(path: Path) -> None:
    """Unlink `path` (if present) and sync its directory, so the removal survives a crash."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    durability.sync_directory(path.parent)
    durability.record_unlink(path)
