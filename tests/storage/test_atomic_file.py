"""Files replaced atomically and durably, one at a time or many together."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from storage import durability
from storage.atomic_file import write_all_atomically, write_atomically
from storage.durability import power_cut
from tests.storage.test_power_cut import journal_enabled


def test_many_files_written_together_are_all_durable_and_replace_the_old(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    files = {data_dir / f"p{index}" / "checkpoint": f"{index}\n".encode() for index in range(50)}
    for path in files:
        path.parent.mkdir(parents=True)
    replaced = next(iter(files))
    write_atomically(replaced, b"old version\n")
    journal = tmp_path / "journal"
    with journal_enabled(journal):
        assert write_all_atomically(files) == {}
    # A power cut right after keeps every file as written, and no temporary file.
    power_cut(journal, data_dir)
    assert {path: path.read_bytes() for path in files} == files
    assert not list(data_dir.rglob("*.tmp"))


def test_a_file_that_cannot_be_written_is_reported_and_the_others_are_written(
    tmp_path: Path,
) -> None:
    kept = tmp_path / "kept"
    write_atomically(kept, b"before\n")
    missing_dir = tmp_path / "missing" / "checkpoint"
    written = tmp_path / "written"
    failed = write_all_atomically({missing_dir: b"x\n", written: b"new\n"})
    assert list(failed) == [missing_dir]
    assert isinstance(failed[missing_dir], FileNotFoundError)
    assert written.read_bytes() == b"new\n"
    assert kept.read_bytes() == b"before\n"


def test_the_fsyncs_of_files_written_together_are_in_flight_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each fsync waits until another one is under way too: one after another, they would
    # never get past the barrier.
    barrier = threading.Barrier(2, timeout=10)
    real_sync = durability.sync_file

    def sync_file(fd: int, path: str | os.PathLike[str]) -> None:
        barrier.wait()
        real_sync(fd, path)

    monkeypatch.setattr(durability, "sync_file", sync_file)
    files = {tmp_path / f"f{index}": b"data\n" for index in range(4)}
    assert write_all_atomically(files) == {}
    assert all(path.read_bytes() == b"data\n" for path in files)


def test_without_directory_syncs_the_contents_are_synced_and_the_directories_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced_files: list[str] = []
    synced_directories: list[str] = []
    real_sync = durability.sync_file

    def sync_file(fd: int, path: str | os.PathLike[str]) -> None:
        synced_files.append(os.fspath(path))
        real_sync(fd, path)

    def sync_directory(path: str | os.PathLike[str]) -> None:
        synced_directories.append(os.fspath(path))

    monkeypatch.setattr(durability, "sync_file", sync_file)
    monkeypatch.setattr(durability, "sync_directory", sync_directory)
    files = {tmp_path / f"f{index}": b"data\n" for index in range(3)}
    assert write_all_atomically(files, sync_directories=False) == {}
    assert sorted(synced_files) == sorted(f"{path}.tmp" for path in files)
    assert synced_directories == []
    assert write_all_atomically(files) == {}
    assert synced_directories == [str(tmp_path)]
