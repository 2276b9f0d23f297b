"""A new log makes no segment file until its first append: a log with no segment file on disk
loads (cleanly or with recovery), reads, reports its offsets and size, answers timestamp
lookups, truncates, flushes, restarts at another offset and is deleted as a log whose segment
is an empty file does; its first append creates the file, which a flush makes durable. A
process killed (with or without a power cut) right after creating logs leaves directories
that load: the logs never written come back empty, with no file made for them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.partition import Partition
from storage.durability import power_cut
from storage.errors import OffsetOutOfRangeError
from storage.leader_epoch_cache import EpochEntry
from storage.log import Log, LogConfig
from storage.log_manager import LogManager, TopicPartition
from storage.partition_metadata import PARTITION_METADATA_FILE, read_partition_metadata
from storage.segment import LOG_SUFFIX, segment_file_name
from tests.storage import new_logs_writer
from tests.storage.helpers import make_batch, read_values

REPO = Path(__file__).resolve().parents[2]
TOPIC_ID = UUID(int=0xC0FFEE)
FIRST_SEGMENT = segment_file_name(0, LOG_SUFFIX)


def _created(directory: Path, count: int = 3) -> tuple[LogManager, list[Log]]:
    manager = LogManager.open([directory])
    wanted = [(TopicPartition("new", p), None) for p in range(count)]
    return manager, manager.get_or_create_logs(wanted, topic_ids={"new": TOPIC_ID})


def _files(log: Log) -> list[str]:
    return sorted(os.listdir(log.directory))


def test_a_new_log_makes_only_its_partition_metadata(tmp_path: Path) -> None:
    manager, logs = _created(tmp_path / "data")
    for log in logs:
        log.start_leader_epoch(2)
        assert _files(log) == [PARTITION_METADATA_FILE]
        assert log.never_written
        assert (log.log_start_offset, log.log_end_offset, log.size_in_bytes) == (0, 0, 0)
    # A clean stop syncs the topic id and makes no segment, index or snapshot file.
    manager.shutdown(broker_epoch=4)
    reopened = LogManager.open([tmp_path / "data"])
    assert reopened.clean_shutdown
    for partition, log in reopened.logs.items():
        assert _files(log) == [PARTITION_METADATA_FILE]
        assert reopened.topic_id_of(partition) == TOPIC_ID
        assert not log.never_written  # opened, not created: its directory may hold files
    reopened.close()


@pytest.mark.parametrize("clean", [True, False])
def test_a_log_without_a_segment_file_behaves_as_an_empty_one(tmp_path: Path, clean: bool) -> None:
    manager, (log, *_) = _created(tmp_path / "data", count=1)
    if clean:
        manager.shutdown(broker_epoch=1)
    else:
        manager.close()
    reopened = LogManager.open([tmp_path / "data"])
    assert reopened.clean_shutdown == clean
    log = reopened.logs[TopicPartition("new", 0)]
    assert FIRST_SEGMENT not in _files(log)
    result = log.read(0, 1024)
    assert result.records is None
    assert (result.log_start_offset, result.log_end_offset, result.high_watermark) == (0, 0, 0)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1, 1024)
    assert log.lookup_timestamp(0) is None
    assert log.bytes_from(0) == 0
    assert log.end_offset_for_epoch(0) == (-1, -1)
    log.truncate_to(0)
    log.flush()
    assert (log.recovery_point, log.log_end_offset, log.size_in_bytes) == (0, 0, 0)
    assert FIRST_SEGMENT not in _files(log)
    # Its first batch makes the file.
    log.start_leader_epoch(1)
    log.append(make_batch(3, tag=1), leader_epoch=1)
    assert FIRST_SEGMENT in _files(log)
    assert read_values(log) == [b"1:0:......", b"1:1:......", b"1:2:......"]
    assert log.lookup_timestamp(0) is not None
    reopened.shutdown(broker_epoch=2)
    again = LogManager.open([tmp_path / "data"])
    log = again.logs[TopicPartition("new", 0)]
    assert read_values(log) == [b"1:0:......", b"1:1:......", b"1:2:......"]
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0)]
    again.close()


def test_a_log_without_a_segment_file_restarts_at_another_offset_and_is_deleted(
    tmp_path: Path,
) -> None:
    manager, (restarted, deleted) = _created(tmp_path / "data", count=2)
    restarted.truncate_fully_and_start_at(40)
    assert not restarted.never_written
    # The new start is a segment file of its own, so it survives without a checkpoint.
    assert segment_file_name(40, LOG_SUFFIX) in _files(restarted)
    restarted.append(make_batch(1, tag=7), leader_epoch=0)
    assert read_values(restarted) == [b"7:0:......"]
    aside = manager.delete_log(TopicPartition("new", 1))
    assert aside is not None and not deleted.directory.exists()
    assert manager.wait_for_deletions(timeout=30)
    assert not aside.exists()
    manager.shutdown(broker_epoch=3)
    reopened = LogManager.open([tmp_path / "data"])
    assert set(reopened.logs) == {TopicPartition("new", 0)}
    log = reopened.logs[TopicPartition("new", 0)]
    assert (log.log_start_offset, log.log_end_offset) == (40, 41)
    reopened.close()


def test_a_replica_on_a_new_log_has_empty_producer_state_and_snapshots_nothing(
    tmp_path: Path,
) -> None:
    manager, (log, *_) = _created(tmp_path / "data", count=1)
    partition = Partition("new", TOPIC_ID, 0, 1, log)
    assert (
        partition.producers.to_snapshot()
        == Partition("new", TOPIC_ID, 0, 1, Log.open(tmp_path / "empty")).producers.to_snapshot()
    )
    partition.close()
    assert _files(log) == [PARTITION_METADATA_FILE]
    manager.close()


def _start_writer(data_dir: Path, journal: Path) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, str(Path(new_logs_writer.__file__)), str(data_dir), str(journal)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if line.strip() != b"ready":
        process.kill()
        _, stderr = process.communicate(timeout=30)
        raise AssertionError(f"writer failed: {stderr.decode(errors='replace')[-3000:]}")
    return process


@pytest.mark.parametrize("cut_power", [False, True], ids=["sigkill", "sigkill_and_power_cut"])
def test_a_node_killed_right_after_creating_logs_loads_them_again(
    tmp_path: Path, cut_power: bool
) -> None:
    data_dir, journal = tmp_path / "data", tmp_path / "journal"
    writer = _start_writer(data_dir, journal)
    os.kill(writer.pid, signal.SIGKILL)
    writer.communicate(timeout=30)
    if cut_power:
        power_cut(journal, data_dir)
    manager = LogManager.open([data_dir])
    assert not manager.clean_shutdown
    topic = new_logs_writer.TOPIC
    # The directories were synced into the log directory before any log was handed out.
    assert set(manager.logs) == {
        TopicPartition(topic, p) for p in range(new_logs_writer.PARTITIONS)
    }
    for p in range(new_logs_writer.PARTITIONS):
        log = manager.logs[TopicPartition(topic, p)]
        written = p % 3 != 0
        durable = p % 3 == 1 or (written and not cut_power)
        expected = [f"{p}:{i}:".encode().ljust(10, b".") for i in range(2)] if durable else []
        assert read_values(log) == expected
        assert log.log_end_offset == len(expected)
        # A flushed log's id is durable; an unflushed one's is the page cache's, which only
        # a power cut loses (then its log is empty too).
        recorded = read_partition_metadata(log.directory)
        assert recorded == (None if cut_power and p % 3 != 1 else new_logs_writer.TOPIC_ID), (
            f"partition {p}"
        )
        if not written:
            assert FIRST_SEGMENT not in _files(log)
    # They take their topic id and writes again.
    logs = manager.get_or_create_logs(
        [(TopicPartition(topic, p), None) for p in range(new_logs_writer.PARTITIONS)],
        topic_ids={topic: new_logs_writer.TOPIC_ID},
    )
    for log in logs:
        log.start_leader_epoch(9)
        log.append(make_batch(1, tag=99), leader_epoch=9)
    manager.shutdown(broker_epoch=8)
    reopened = LogManager.open([data_dir])
    for partition, log in reopened.logs.items():
        assert read_values(log)[-1] == b"99:0:....."
        assert reopened.topic_id_of(partition) == new_logs_writer.TOPIC_ID
    reopened.close()


# Operations on a pair of logs: one created with no segment file, one opened on a directory
# holding an empty segment file (and its indexes) as new logs had before.
Operation = Callable[[Log, Path], Log]


def _append(tag: int) -> Operation:
    def append(log: Log, _: Path) -> Log:
        log.start_leader_epoch(tag % 4)
        log.append(make_batch(1 + tag % 3, tag=tag), leader_epoch=max(tag % 4, 0))
        return log

    return append


def _truncate(offset: int) -> Operation:
    def truncate(log: Log, _: Path) -> Log:
        log.truncate_to(offset)
        return log

    return truncate


def _restart_at(offset: int) -> Operation:
    def restart(log: Log, _: Path) -> Log:
        log.truncate_fully_and_start_at(max(offset, log.log_end_offset))
        return log

    return restart


def _flush(log: Log, _: Path) -> Log:
    log.flush()
    return log


def _reopen(clean: bool) -> Operation:
    def reopen(log: Log, directory: Path) -> Log:
        if clean:
            log.flush()
        log.close()
        return Log.open(
            directory,
            LogConfig(),
            log_start_offset=log.log_start_offset,
            recovery_point=log.recovery_point,
            clean_shutdown=clean,
        )

    return reopen


def _found_by_timestamp(log: Log) -> tuple[int, int] | None:
    found = log.lookup_timestamp(0)
    return None if found is None else (found.offset, found.batch.size)


_OPERATIONS = st.one_of(
    st.integers(0, 40).map(_append),
    st.integers(0, 12).map(_truncate),
    st.integers(0, 30).map(_restart_at),
    st.just(_flush),
    st.booleans().map(_reopen),
)


@settings(max_examples=40, deadline=None)
@given(operations=st.lists(_OPERATIONS, max_size=8))
def test_a_log_with_no_segment_file_equals_one_with_an_empty_file(
    tmp_path_factory: pytest.TempPathFactory, operations: list[Operation]
) -> None:
    root = tmp_path_factory.mktemp("pair")
    lazy_dir, eager_dir = root / "lazy", root / "eager"
    lazy_dir.mkdir()
    lazy = Log.create(lazy_dir, LogConfig())
    eager_dir.mkdir()
    for name in (FIRST_SEGMENT, segment_file_name(0, ".index"), segment_file_name(0, ".timeindex")):
        (eager_dir / name).touch()
    eager = Log.open(eager_dir, LogConfig(), clean_shutdown=True)
    for operation in operations:
        lazy, eager = operation(lazy, lazy_dir), operation(eager, eager_dir)
        for log in (lazy, eager):
            assert not log.offline
        assert read_values(lazy) == read_values(eager)
        assert (lazy.log_start_offset, lazy.log_end_offset, lazy.recovery_point) == (
            eager.log_start_offset,
            eager.log_end_offset,
            eager.recovery_point,
        )
        assert lazy.size_in_bytes == eager.size_in_bytes
        assert lazy.leader_epoch_cache.entries == eager.leader_epoch_cache.entries
        assert _found_by_timestamp(lazy) == _found_by_timestamp(eager)
    lazy.close()
    eager.close()
