"""The node's logs across log directories: checkpoints, the clean-shutdown marker, deletion."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import threading
from pathlib import Path
from uuid import UUID

import pytest

from storage import durability
from storage.errors import InconsistentTopicIdError
from storage.log import Log, LogConfig
from storage.log_manager import (
    CLEAN_SHUTDOWN_MARKER,
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    LogManager,
    TopicPartition,
    write_checkpoints,
)
from storage.partition_metadata import PARTITION_METADATA_FILE, read_partition_metadata
from tests.storage.helpers import make_batch, read_values

ORDERS_0 = TopicPartition("orders", 0)
ORDERS_1 = TopicPartition("orders", 1)
METADATA = TopicPartition("__cluster_metadata", 0)
ORDERS_ID = UUID(int=0x0A)
NEW_ID = UUID(int=0x0B)


def test_first_start_is_unclean_and_has_no_broker_epoch(tmp_path: Path) -> None:
    manager = LogManager.open([tmp_path / "a"])
    assert not manager.clean_shutdown
    assert manager.broker_epoch_at_start is None
    manager.close()


def test_clean_shutdown_writes_the_marker_and_the_next_start_reads_and_removes_it(
    tmp_path: Path,
) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager.open(dirs)
    for partition in (ORDERS_0, ORDERS_1, METADATA):
        log = manager.get_or_create_log(partition)
        log.append(make_batch(3, tag=partition.partition), leader_epoch=2)
        log.update_high_watermark(2)
    manager.shutdown(broker_epoch=42)
    for directory in dirs:
        marker = json.loads((directory / CLEAN_SHUTDOWN_MARKER).read_text())
        assert marker == {"version": 0, "broker_epoch": 42}
    # The three partitions were spread over both directories.
    assert {len([p for p in d.iterdir() if p.is_dir()]) for d in dirs} == {1, 2}

    restarted = LogManager.open(dirs)
    assert restarted.clean_shutdown
    assert restarted.broker_epoch_at_start == 42
    assert not any((d / CLEAN_SHUTDOWN_MARKER).exists() for d in dirs)
    restarted_log = restarted.get_log(ORDERS_1)
    assert restarted_log is not None
    assert (
        restarted_log.log_end_offset,
        restarted_log.high_watermark,
        restarted_log.recovery_point,
    ) == (3, 2, 3)
    assert len(read_values(restarted_log)) == 3
    restarted.close()

    # Without a new clean shutdown, the following start is unclean.
    again = LogManager.open(dirs)
    assert not again.clean_shutdown
    assert again.broker_epoch_at_start is None
    again.close()


def test_a_marker_missing_from_one_directory_makes_the_start_unclean(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager.open(dirs)
    manager.get_or_create_log(ORDERS_0).append(make_batch(), leader_epoch=0)
    manager.shutdown(broker_epoch=7)
    (dirs[1] / CLEAN_SHUTDOWN_MARKER).unlink()
    restarted = LogManager.open(dirs)
    assert not restarted.clean_shutdown
    assert restarted.broker_epoch_at_start is None
    restarted.close()


def test_checkpoints_hold_every_partition_of_their_directory(tmp_path: Path) -> None:
    directory = tmp_path / "a"
    manager = LogManager.open([directory], LogConfig(segment_bytes=300))
    log = manager.get_or_create_log(ORDERS_0)
    for _ in range(6):
        log.append(make_batch(2), leader_epoch=1)
    log.update_high_watermark(8)
    log.delete_records(5)
    log.flush(6)
    manager.checkpoint()
    assert (directory / RECOVERY_POINT_CHECKPOINT).read_text() == "0\n1\norders 0 6\n"
    assert (directory / HIGH_WATERMARK_CHECKPOINT).read_text() == "0\n1\norders 0 8\n"
    assert (directory / LOG_START_OFFSET_CHECKPOINT).read_text() == "0\n1\norders 0 5\n"
    manager.close()
    assert reopened_offsets(directory) == (5, 8, 12)


def reopened_offsets(directory: Path) -> tuple[int, int, int]:
    """Log start, high watermark and log end of orders-0 in `directory`, opened anew."""
    reopened = LogManager.open([directory], LogConfig(segment_bytes=300))
    log = reopened.get_log(ORDERS_0)
    assert log is not None
    offsets = (log.log_start_offset, log.high_watermark, log.log_end_offset)
    reopened.close()
    return offsets


async def test_checkpoints_written_in_a_thread_hold_the_offsets_as_they_were_taken(
    tmp_path: Path,
) -> None:
    # The maintenance task takes the offsets on the event loop and writes them in a thread
    # while the loop goes on appending: the files hold the offsets as they were taken (never
    # offsets of a state the logs had not reached), and a reopened log recovers from them.
    directory = tmp_path / "a"
    manager = LogManager.open([directory], LogConfig(segment_bytes=300))
    log = manager.get_or_create_log(ORDERS_0)
    for _ in range(3):
        log.append(make_batch(2), leader_epoch=1)
    log.update_high_watermark(4)
    log.flush()
    taken = manager.checkpoints()
    writing = asyncio.create_task(asyncio.to_thread(write_checkpoints, taken))
    for _ in range(3):
        log.append(make_batch(2), leader_epoch=1)
    log.update_high_watermark(10)
    await writing
    assert (directory / RECOVERY_POINT_CHECKPOINT).read_text() == "0\n1\norders 0 6\n"
    assert (directory / HIGH_WATERMARK_CHECKPOINT).read_text() == "0\n1\norders 0 4\n"
    manager.close()
    # Unflushed appends past the recovery point are recovered, not trusted blindly.
    assert reopened_offsets(directory) == (0, 4, 12)


def test_a_corrupt_checkpoint_falls_back_to_recovering_everything(tmp_path: Path) -> None:
    directory = tmp_path / "a"
    manager = LogManager.open([directory])
    manager.get_or_create_log(ORDERS_0).append(make_batch(4), leader_epoch=0)
    manager.checkpoint()
    manager.close()
    (directory / RECOVERY_POINT_CHECKPOINT).write_text("garbage")
    reopened = LogManager.open([directory])
    log = reopened.get_log(ORDERS_0)
    assert log is not None and log.log_end_offset == 4
    reopened.close()


def test_an_unclean_start_recovers_every_log_as_a_full_recovery_and_keeps_recovery_points(
    tmp_path: Path,
) -> None:
    # Many logs, opened at one start: each has a flushed prefix, unflushed
    # batches of two leader epochs, and for some a torn tail. Each comes back cut exactly where
    # a full recovery of its own cuts it, and its recovery point stays at what was fsynced.
    directory = tmp_path / "a"
    config = LogConfig(segment_bytes=600)
    manager = LogManager.open([directory], config)
    partitions = [TopicPartition("wide", index) for index in range(24)]
    flushed: dict[TopicPartition, int] = {}
    for partition in partitions:
        written = manager.get_or_create_log(partition)
        for batch in range(1 + partition.partition % 4):
            written.append(make_batch(2, tag=batch), leader_epoch=1)
        written.flush()
        flushed[partition] = written.log_end_offset
        for batch in range(partition.partition % 3):
            written.append(make_batch(3, tag=10 + batch), leader_epoch=2)
    manager.checkpoint()
    manager.close()
    for partition in partitions[::5]:
        active = sorted((directory / partition.dir_name).glob("*.log"))[-1]
        with active.open("ab") as torn:
            torn.write(make_batch(1, tag=99)[:-7])
    full = tmp_path / "full"
    shutil.copytree(directory, full)

    reopened = LogManager.open([directory], config)
    assert not reopened.clean_shutdown
    for partition in partitions:
        log = reopened.get_log(partition)
        assert log is not None
        alone = Log.open(full / partition.dir_name, config, recovery_point=0)
        assert log.log_end_offset == alone.log_end_offset
        assert log.leader_epoch_cache.entries == alone.leader_epoch_cache.entries
        assert read_values(log) == read_values(alone)
        assert log.recovery_point == flushed[partition]
        alone.close()
    reopened.checkpoint()
    reopened.close()
    # Not advanced by the start either: the next unclean start recovers the same tails.
    points = (directory / RECOVERY_POINT_CHECKPOINT).read_text().splitlines()[2:]
    assert {tuple(row.split()) for row in points} == {
        (partition.topic, str(partition.partition), str(flushed[partition]))
        for partition in partitions
    }


def test_deleted_logs_are_gone_and_half_deleted_ones_are_finished_at_start(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "a"
    manager = LogManager.open([directory])
    manager.get_or_create_log(ORDERS_0).append(make_batch(), leader_epoch=0)
    manager.get_or_create_log(ORDERS_1).append(make_batch(), leader_epoch=0)
    manager.get_or_create_log(TopicPartition("orders", 2)).append(make_batch(), leader_epoch=0)
    aside = manager.delete_log(ORDERS_0)
    assert aside is not None
    assert re.fullmatch(r"orders-0\.[0-9a-f]{32}-delete", aside.name)
    assert manager.get_log(ORDERS_0) is None
    assert not (directory / "orders-0").exists()
    assert manager.wait_for_deletions(timeout=10)
    assert not aside.exists()
    manager.close()
    # A crash came before the removal finished: the old style of name and Kafka's.
    (directory / "orders-1").rename(directory / "orders-1-delete")
    (directory / "orders-2").rename(directory / "orders-2.0123456789abcdef0123456789abcdef-delete")
    reopened = LogManager.open([directory])
    assert reopened.logs == {}
    assert reopened.wait_for_deletions(timeout=10)
    assert [path.name for path in directory.iterdir() if path.is_dir()] == []
    reopened.close()


def test_a_log_deleted_twice_before_its_first_removal_ran_goes_aside_under_two_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "a"
    manager = LogManager.open([directory])
    # Hold the deleter: the first directory aside is still there when the second goes.
    release = threading.Event()
    real_rmtree = shutil.rmtree

    def held_rmtree(path: Path) -> None:
        release.wait(10)
        real_rmtree(path)

    monkeypatch.setattr(shutil, "rmtree", held_rmtree)
    asides = []
    for _ in range(2):
        manager.get_or_create_log(ORDERS_0).append(make_batch(), leader_epoch=0)
        aside = manager.delete_log(ORDERS_0)
        assert aside is not None
        asides.append(aside)
    assert asides[0] != asides[1]
    assert all(aside.exists() for aside in asides)
    assert not manager.wait_for_deletions(timeout=0)
    release.set()
    assert manager.wait_for_deletions(timeout=10)
    assert not any(aside.exists() for aside in asides)
    manager.close()


def test_a_deleted_logs_topic_name_is_cut_so_its_name_aside_fits() -> None:
    longest = TopicPartition("t" * 249, 12345)
    name = longest.deleted_dir_name()
    assert len(name) == 255
    assert name.endswith("-12345." + name[-39:-7] + "-delete")


def test_a_log_records_the_topic_id_it_is_created_for_and_reads_it_at_start(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "a"
    manager = LogManager.open([directory])
    manager.get_or_create_logs(
        [(ORDERS_0, None), (ORDERS_1, None), (TopicPartition("other", 0), None)],
        topic_ids={"orders": ORDERS_ID},
    )
    manager.get_or_create_log(METADATA)
    assert read_partition_metadata(directory / "orders-0") == ORDERS_ID
    assert manager.topic_id_of(ORDERS_1) == ORDERS_ID
    # Without an id (the metadata log, or a caller that knows none), no file.
    assert manager.topic_id_of(TopicPartition("other", 0)) is None
    assert not (directory / "other-0" / PARTITION_METADATA_FILE).exists()
    assert not (directory / "__cluster_metadata-0" / PARTITION_METADATA_FILE).exists()
    manager.shutdown(broker_epoch=1)
    reopened = LogManager.open([directory])
    assert reopened.topic_id_of(ORDERS_0) == reopened.topic_id_of(ORDERS_1) == ORDERS_ID
    assert reopened.topic_id_of(TopicPartition("other", 0)) is None
    reopened.close()


def test_a_log_without_a_topic_id_takes_the_one_it_is_first_used_under(tmp_path: Path) -> None:
    directory = tmp_path / "a"
    manager = LogManager.open([directory])
    manager.get_or_create_log(ORDERS_0).append(make_batch(), leader_epoch=0)
    manager.close()
    reopened = LogManager.open([directory])
    assert reopened.topic_id_of(ORDERS_0) is None
    adopted = reopened.get_or_create_log(ORDERS_0, topic_id=ORDERS_ID)
    assert adopted.log_end_offset == 1
    assert read_partition_metadata(directory / "orders-0") == ORDERS_ID
    # Asked again under the same id: nothing changes.
    assert reopened.get_or_create_log(ORDERS_0, topic_id=ORDERS_ID) is adopted
    reopened.close()
    again = LogManager.open([directory])
    assert again.topic_id_of(ORDERS_0) == ORDERS_ID
    again.close()


def test_a_log_of_another_topic_id_is_never_handed_out(tmp_path: Path) -> None:
    manager = LogManager.open([tmp_path / "a"])
    manager.get_or_create_log(ORDERS_0, topic_id=ORDERS_ID)
    with pytest.raises(InconsistentTopicIdError):
        manager.get_or_create_logs(
            [(ORDERS_1, None), (ORDERS_0, None)], topic_ids={"orders": NEW_ID}
        )
    # Refused before anything was created.
    assert manager.get_log(ORDERS_1) is None
    with pytest.raises(InconsistentTopicIdError):
        manager.record_topic_id(ORDERS_0, NEW_ID)
    # Deleted, the partition starts again empty under the new id.
    manager.delete_log(ORDERS_0)
    manager.get_or_create_log(ORDERS_0, topic_id=NEW_ID)
    assert manager.topic_id_of(ORDERS_0) == NEW_ID
    manager.close()


def test_an_unreadable_partition_metadata_file_counts_as_none(tmp_path: Path) -> None:
    directory = tmp_path / "a"
    manager = LogManager.open([directory])
    manager.get_or_create_log(ORDERS_0, topic_id=ORDERS_ID).append(make_batch(), leader_epoch=0)
    manager.close()
    (directory / "orders-0" / PARTITION_METADATA_FILE).write_text("version: 9\n")
    reopened = LogManager.open([directory])
    assert reopened.topic_id_of(ORDERS_0) is None
    assert reopened.get_log(ORDERS_0) is not None
    reopened.close()


def test_the_durability_journal_follows_a_deleted_logs_files_aside(tmp_path: Path) -> None:
    directory = tmp_path / "a"
    journal = tmp_path / "journal"
    durability.enable_journal(journal)
    try:
        manager = LogManager.open([directory])
        log = manager.get_or_create_log(ORDERS_0, topic_id=ORDERS_ID)
        log.append(make_batch(), leader_epoch=0)
        log.flush()
        aside = manager.delete_log(ORDERS_0)
    finally:
        durability.disable_journal()
    assert aside is not None
    lengths = durability.durable_lengths(journal)
    assert not any(path.startswith(str(directory / "orders-0") + os.sep) for path in lengths)
    assert str(aside / "00000000000000000000.log") in lengths
    manager.close()


def test_retention_and_flush_apply_to_every_log(tmp_path: Path) -> None:
    batch_size = len(make_batch(1, value_size=100))
    manager = LogManager.open(
        [tmp_path / "a"],
        LogConfig(segment_bytes=batch_size * 2, retention_ms=1_000, flush_ms=10),
    )
    for partition in (ORDERS_0, ORDERS_1):
        log = manager.get_or_create_log(partition)
        for index in range(6):
            log.append(make_batch(1, value_size=100, timestamp=index * 1_000), leader_epoch=0)
        log.update_high_watermark(6)
    assert set(manager.enforce_retention(now_ms=3_500)) == {ORDERS_0, ORDERS_1}
    assert manager.enforce_retention(now_ms=3_500) == []
    assert {log.log_start_offset for log in manager.logs.values()} == {2}
    manager.flush_due(now_ms=10**13)
    assert {log.recovery_point for log in manager.logs.values()} == {6}
    manager.close()


def test_new_logs_go_to_the_directory_holding_the_fewest(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    seeded = LogManager.open([first])
    seeded.get_or_create_log(TopicPartition("old", 0))
    seeded.get_or_create_log(TopicPartition("old", 1))
    seeded.close()
    manager = LogManager.open([first, second])
    created = manager.get_or_create_logs(
        [(TopicPartition("new", partition), None) for partition in range(4)]
    )
    assert [log.directory.parent for log in created] == [second, second, first, second]
    manager.delete_log(TopicPartition("old", 0))
    manager.delete_log(TopicPartition("old", 1))
    (again,) = manager.get_or_create_logs([(TopicPartition("new", 4), None)])
    assert again.directory.parent == first
    # Asking again gives the same logs, and creates nothing.
    assert manager.get_or_create_logs([(TopicPartition("new", 0), None)]) == created[:1]
    manager.close()


def test_each_directory_gaining_logs_is_synced_once_they_all_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    manager = LogManager.open([first, second])
    # What each log directory held when it was synced (partition directories are synced too,
    # when their segments first flush; only the log directories are of interest here).
    synced: list[tuple[Path, set[str]]] = []
    real_sync = durability.sync_directory

    def sync_directory(path: str | os.PathLike[str]) -> None:
        if Path(path) in (first, second):
            synced.append((Path(path), {child.name for child in Path(path).iterdir()}))
        real_sync(path)

    monkeypatch.setattr(durability, "sync_directory", sync_directory)
    logs = manager.get_or_create_logs(
        [(TopicPartition("wide", partition), None) for partition in range(100)]
    )
    placed = {
        parent: {log.directory.name for log in logs if log.directory.parent == parent}
        for parent in (first, second)
    }
    assert sorted(path for path, _ in synced) == [first, second]
    for path, names in synced:
        assert placed[path] <= names
    assert len(placed[first]) == len(placed[second]) == 50
    manager.close()


def test_new_partition_logs_go_to_partition_directories_only(tmp_path: Path) -> None:
    data, metadata = tmp_path / "data", tmp_path / "metadata"
    manager = LogManager.open([data, metadata], LogConfig(), partition_dirs=[data])
    manager.get_or_create_log(METADATA, directory=metadata)
    manager.get_or_create_logs([(ORDERS_0, None), (ORDERS_1, None)])
    assert sorted(path.name for path in metadata.iterdir() if path.is_dir()) == [
        "__cluster_metadata-0"
    ]
    assert sorted(path.name for path in data.iterdir() if path.is_dir()) == [
        "orders-0",
        "orders-1",
    ]
    manager.shutdown(broker_epoch=3)
    reopened = LogManager.open([data, metadata], LogConfig(), partition_dirs=[data])
    assert reopened.clean_shutdown and reopened.broker_epoch_at_start == 3
    assert set(reopened.logs) == {METADATA, ORDERS_0, ORDERS_1}
    reopened.close()


def test_a_new_logs_topic_id_is_in_its_directory_before_any_sync_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its directory entry is made durable by the log's own first sync of the directory, which
    # comes before any of its records is durable; so no record outlives a crash without it.
    directory = tmp_path / "a"
    manager = LogManager.open([directory])
    partition_dir = directory / "orders-0"
    seen: list[set[str]] = []
    real_sync = durability.sync_directory

    def sync_directory(path: str | os.PathLike[str]) -> None:
        if Path(path) == partition_dir:
            seen.append({child.name for child in partition_dir.iterdir()})
        real_sync(path)

    monkeypatch.setattr(durability, "sync_directory", sync_directory)
    log = manager.get_or_create_log(ORDERS_0, topic_id=ORDERS_ID)
    log.append(make_batch(), leader_epoch=0)
    log.flush()
    assert seen
    assert all(PARTITION_METADATA_FILE in names for names in seen)
    manager.close()


def test_a_clean_shutdown_makes_every_log_durable_with_one_sync_per_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    journal = tmp_path / "journal"
    durability.enable_journal(journal)
    try:
        manager = LogManager.open(dirs, LogConfig(segment_bytes=400, index_interval_bytes=1))
        values = {}
        for index in range(6):
            log = manager.get_or_create_log(TopicPartition("orders", index), topic_id=ORDERS_ID)
            for tag in range(index + 2):
                log.append(make_batch(2, value_size=60, tag=tag), leader_epoch=1 + tag // 3)
            values[index] = read_values(log)
        assert any(len(log.segment_base_offsets) > 1 for log in manager.logs.values())
        file_syncs: list[Path] = []
        file_system_syncs: list[int] = []
        real_sync_file, real_sync_directory = durability.sync_file, durability.sync_directory
        real_syncfs = durability._syncfs
        assert real_syncfs is not None

        def sync_file(fd: int, path: str | os.PathLike[str]) -> None:
            file_syncs.append(Path(path))
            real_sync_file(fd, path)

        def sync_directory(path: str | os.PathLike[str]) -> None:
            file_syncs.append(Path(path))
            real_sync_directory(path)

        def syncfs(fd: int) -> int:
            file_system_syncs.append(fd)
            return real_syncfs(fd)

        monkeypatch.setattr(durability, "sync_file", sync_file)
        monkeypatch.setattr(durability, "sync_directory", sync_directory)
        monkeypatch.setattr(durability, "_syncfs", syncfs)
        manager.shutdown(broker_epoch=3)
    finally:
        durability.disable_journal()
    assert len(file_system_syncs) == len(dirs)
    # Only the checkpoints and markers beside the logs were fsynced, nothing of a log.
    assert file_syncs and all(path.parent in dirs or path in dirs for path in file_syncs)
    assert all(log.recovery_point == log.log_end_offset for log in manager.logs.values())

    # A power cut right after keeps every log whole: the stop was clean.
    durability.power_cut(journal, *dirs)
    reopened = LogManager.open(dirs, LogConfig(segment_bytes=400, index_interval_bytes=1))
    assert reopened.clean_shutdown
    assert reopened.broker_epoch_at_start == 3
    for partition, log in reopened.logs.items():
        assert read_values(log) == values[partition.partition]
        assert log.recovery_point == log.log_end_offset
    reopened.close()
