"""EIO: the disk fails a read, an fsync, a write or an unlink.

A real EIO needs a failing block device (device-mapper's `error` target), which this machine
kind cannot set up, so the failure is injected at the system-call boundary: the `os` function
the storage layer calls raises OSError(EIO) for the files of one log. Everything above it (our
code) runs for real, on real files. Each test checks that the error reaches the caller with its
errno, that nothing is lost or cut, and that the log reopens to exactly what was appended.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Unpack

import pytest

from storage import durability
from storage.errors import LogOfflineError, OffsetOutOfRangeError, StorageIOError
from storage.log import Log, LogConfig
from storage.log_manager import CLEAN_SHUTDOWN_MARKER, LogManager, TopicPartition
from tests.storage.helpers import LogConfigOverrides, make_batch, open_log, read_values


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


@contextmanager
def failing(
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    under: Path,
    target: Callable[[tuple[Any, ...]], str],
) -> Iterator[list[str]]:
    """`os.<name>` raises EIO for files under `under` (`target` names the file from the call's
    arguments); yields the list of paths it failed on."""
    real = getattr(os, name)
    failed: list[str] = []

    def fail(*args: Any, **kwargs: Any) -> Any:
        path = target(args)
        if path.startswith(str(under)):
            failed.append(path)
            raise OSError(errno.EIO, os.strerror(errno.EIO), path)
        return real(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(os, name, fail)
        yield failed


def by_fd(args: tuple[Any, ...]) -> str:
    return _fd_path(args[0])


def by_path(args: tuple[Any, ...]) -> str:
    path: str | os.PathLike[str] = args[0]
    return os.path.abspath(path)


def file_contents(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def filled_log(
    directory: Path, batches: int, **config: Unpack[LogConfigOverrides]
) -> tuple[Log, list[bytes]]:
    log = open_log(directory, **config)
    for tag in range(batches):
        log.append(make_batch(2, value_size=100, tag=tag), leader_epoch=1 + tag // 4)
    return log, read_values(log)


def test_a_read_error_in_recovery_cuts_nothing_and_the_next_open_has_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, values = filled_log(tmp_path, 12, segment_bytes=1_000)
    assert len(log.segment_base_offsets) > 2
    log.close()
    before = file_contents(tmp_path)
    with (
        failing(monkeypatch, "pread", tmp_path, by_fd) as failed,
        pytest.raises(StorageIOError) as refused,
    ):
        Log.open(tmp_path, LogConfig(segment_bytes=1_000))
    assert failed
    assert refused.value.errno == errno.EIO
    assert file_contents(tmp_path) == before
    reopened = Log.open(tmp_path, LogConfig(segment_bytes=1_000))
    assert read_values(reopened) == values
    assert reopened.log_end_offset == 24
    reopened.close()


def test_an_fsync_error_takes_the_log_offline_and_an_unclean_reopen_keeps_what_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, values = filled_log(tmp_path, 6)
    with failing(monkeypatch, "fdatasync", tmp_path, by_fd), pytest.raises(LogOfflineError):
        log.flush()
    assert log.offline
    assert log.recovery_point == 0
    with pytest.raises(LogOfflineError):
        log.append(make_batch(1), leader_epoch=2)
    log.close()
    reopened = Log.open(tmp_path)
    assert read_values(reopened) == values
    reopened.close()


def test_a_write_error_refuses_the_append_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, values = filled_log(tmp_path, 3)
    segment_files = {
        name: data for name, data in file_contents(tmp_path).items() if name[0].isdigit()
    }
    with (
        failing(monkeypatch, "writev", tmp_path, by_fd),
        pytest.raises(StorageIOError) as refused,
    ):
        log.append(make_batch(1, tag=99), leader_epoch=5)
    assert refused.value.errno == errno.EIO
    assert not log.offline
    assert log.log_end_offset == 6
    assert log.latest_epoch == 1
    # The new epoch's checkpoint entry, written before the data, may stay on disk: it starts
    # at the log end offset, and a reopen drops it.
    assert {name: file_contents(tmp_path)[name] for name in segment_files} == segment_files
    log.close()
    reopened = Log.open(tmp_path)
    assert read_values(reopened) == values
    assert reopened.latest_epoch == 1
    info = reopened.append(make_batch(1, tag=7), leader_epoch=5)
    assert info.first_offset == 6
    assert reopened.end_offset_for_epoch(1) == (1, 6)
    reopened.close()


@pytest.mark.parametrize("deletion", ["retention", "delete_records"])
def test_an_unlink_error_leaves_the_segments_out_of_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deletion: str
) -> None:
    manager = LogManager.open([tmp_path], LogConfig(segment_bytes=1_000, retention_bytes=1_000))
    partition = TopicPartition("orders", 0)
    log = manager.get_or_create_log(partition)
    for tag in range(12):
        log.append(make_batch(2, value_size=100, tag=tag), leader_epoch=1)
    values = read_values(log)
    log.update_high_watermark(log.log_end_offset)
    bases = log.segment_base_offsets
    with (
        failing(monkeypatch, "unlink", log.directory, by_path) as failed,
        pytest.raises(StorageIOError) as refused,
    ):
        if deletion == "retention":
            log.enforce_retention()
        else:
            log.delete_records(bases[2])
    assert failed
    assert refused.value.errno == errno.EIO
    # The segments left the log even though their files did not leave the disk.
    assert not log.offline
    start = log.log_start_offset
    assert start == log.segment_base_offsets[0] > 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 1 << 20)
    assert read_values(log) == values[start:]
    assert (log.directory / "00000000000000000000.log").exists()
    log.append(make_batch(1, tag=99), leader_epoch=2)
    # Once checkpointed, a reopen deletes the leftover files and the log is as it was.
    manager.checkpoint()
    manager.close()
    reopened = LogManager.open([tmp_path], LogConfig(segment_bytes=1_000))
    again = reopened.logs[partition]
    assert again.log_start_offset == start
    assert again.segment_base_offsets[0] == start
    assert not (again.directory / "00000000000000000000.log").exists()
    assert read_values(again)[:-1] == values[start:]
    reopened.close()


def test_a_log_whose_retention_fails_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = LogManager.open([tmp_path], LogConfig(segment_bytes=1_000, retention_bytes=1_000))
    logs = [manager.get_or_create_log(TopicPartition("orders", index)) for index in range(3)]
    for log in logs:
        for tag in range(12):
            log.append(make_batch(2, value_size=100, tag=tag), leader_epoch=1)
        log.update_high_watermark(log.log_end_offset)
    with failing(monkeypatch, "unlink", logs[1].directory, by_path) as failed:
        moved = manager.enforce_retention()
    assert failed
    # The failing log's segments left it all the same: every log start moved, and each
    # log is reported so its readers learn of it.
    assert moved == [TopicPartition("orders", index) for index in range(3)]
    assert all(log.log_start_offset > 0 and not log.offline for log in logs)
    assert len({log.log_start_offset for log in logs}) == 1
    manager.close()


@contextmanager
def failing_file_system_sync(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """syncfs fails with EIO, as it does after a writeback error on its file system; yields
    the descriptors it failed on."""
    failed: list[int] = []

    def fail(fd: int) -> int:
        failed.append(fd)
        ctypes.set_errno(errno.EIO)
        return -1

    with monkeypatch.context() as patch:
        patch.setattr(durability, "_syncfs", fail)
        yield failed


def test_when_the_file_system_sync_fails_each_log_is_flushed_and_a_failing_one_stops_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = LogManager.open([tmp_path])
    failing_log = manager.get_or_create_log(TopicPartition("bad", 0))
    healthy = [manager.get_or_create_log(TopicPartition("good", index)) for index in range(3)]
    for log in [failing_log, *healthy]:
        log.append(make_batch(3), leader_epoch=1)
    with (
        failing_file_system_sync(monkeypatch) as failed_syncs,
        failing(monkeypatch, "fdatasync", failing_log.directory, by_fd),
    ):
        manager.shutdown(broker_epoch=7)
    assert failed_syncs
    # The fsyncs of each log told which one the error was in.
    assert failing_log.offline
    assert all(log.recovery_point == 3 for log in healthy)
    # Not a clean shutdown: the next start recovers, and finds every log whole.
    assert not (tmp_path / CLEAN_SHUTDOWN_MARKER).exists()
    reopened = LogManager.open([tmp_path])
    assert not reopened.clean_shutdown
    assert {partition.topic: log.log_end_offset for partition, log in reopened.logs.items()} == {
        "bad": 3,
        "good": 3,
    }
    reopened.close()


def test_a_truncation_is_made_durable(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    directory = tmp_path / "log"
    durability.enable_journal(journal)
    try:
        log, _ = filled_log(directory, 6)
        log.flush()
        log.truncate_to(5)
        segment = directory / "00000000000000000000.log"
        # Durable at its new length: a power cut now cannot bring the cut batches back.
        assert durability.durable_lengths(journal)[str(segment)] == segment.stat().st_size
        assert log.log_end_offset == 4
        log.close()
    finally:
        durability.disable_journal()


def test_a_file_system_sync_failing_alone_leaves_a_clean_stop_by_fsyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The error syncfs reported was not in these logs (each one's own fsyncs succeed).
    manager = LogManager.open([tmp_path])
    logs = [manager.get_or_create_log(TopicPartition("good", index)) for index in range(3)]
    for log in logs:
        log.append(make_batch(3), leader_epoch=1)
    with failing_file_system_sync(monkeypatch) as failed_syncs:
        manager.shutdown(broker_epoch=7)
    assert failed_syncs
    assert all(not log.offline and log.recovery_point == 3 for log in logs)
    reopened = LogManager.open([tmp_path])
    assert reopened.clean_shutdown
    assert all(log.log_end_offset == 3 for log in reopened.logs.values())
    reopened.close()
