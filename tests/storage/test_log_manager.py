"""The node's logs across log directories: checkpoints, the clean-shutdown marker, deletion."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from storage import durability
from storage.log import LogConfig
from storage.log_manager import (
    CLEAN_SHUTDOWN_MARKER,
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    LogManager,
    TopicPartition,
)
from tests.storage.helpers import make_batch, read_values

ORDERS_0 = TopicPartition("orders", 0)
ORDERS_1 = TopicPartition("orders", 1)
METADATA = TopicPartition("__cluster_metadata", 0)


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
    reopened = LogManager.open([directory], LogConfig(segment_bytes=300))
    reopened_log = reopened.get_log(ORDERS_0)
    assert reopened_log is not None
    assert (
        reopened_log.log_start_offset,
        reopened_log.high_watermark,
        reopened_log.log_end_offset,
    ) == (5, 8, 12)
    reopened.close()


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


def test_deleted_logs_are_gone_and_half_deleted_ones_are_finished_at_start(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "a"
    manager = LogManager.open([directory])
    manager.get_or_create_log(ORDERS_0).append(make_batch(), leader_epoch=0)
    manager.get_or_create_log(ORDERS_1).append(make_batch(), leader_epoch=0)
    manager.delete_log(ORDERS_0)
    assert manager.get_log(ORDERS_0) is None
    assert not (directory / "orders-0").exists()
    manager.close()
    (directory / "orders-1").rename(directory / "orders-1-delete")
    reopened = LogManager.open([directory])
    assert reopened.logs == {}
    assert not (directory / "orders-1-delete").exists()
    reopened.close()


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
    assert manager.enforce_retention(now_ms=3_500) == 2
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
