"""Creating many logs at once (a topic's partitions), their file work on the storage threads:
each created log behaves as a log opened on its directory does (appends, reads, restarts), a
crash that cuts what was never synced right after creation leaves logs that take their topic
id and epochs again, a partition directory left from an earlier attempt is opened as is, and
logs prepared ahead (made while the caller sets up others) are handed out as if made when
asked for."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest

from storage import durability
from storage.durability import power_cut
from storage.errors import InconsistentTopicIdError
from storage.leader_epoch_cache import EpochEntry
from storage.log import Log, LogConfig
from storage.log_manager import LogManager, TopicPartition
from storage.partition_metadata import read_partition_metadata
from tests.storage.helpers import make_batch, read_values

WIDE_ID = UUID(int=0x1D)
PARTITIONS = 40


def _wide(count: int = PARTITIONS) -> list[tuple[TopicPartition, LogConfig | None]]:
    return [(TopicPartition("wide", partition), None) for partition in range(count)]


def test_logs_created_at_once_behave_as_logs_opened_on_their_directories(
    tmp_path: Path,
) -> None:
    manager = LogManager.open([tmp_path / "bulk"])
    created = manager.get_or_create_logs(_wide(), topic_ids={"wide": WIDE_ID})
    opened = [Log.open(tmp_path / "single" / f"wide-{p}", LogConfig()) for p in range(PARTITIONS)]
    for partition, (bulk, single) in enumerate(zip(created, opened, strict=True)):
        for log in (bulk, single):
            log.start_leader_epoch(partition % 3)
            for tag in range(partition % 4):
                log.append(make_batch(2, tag=tag), leader_epoch=partition % 3)
        assert read_values(bulk) == read_values(single)
        assert bulk.leader_epoch_cache.entries == single.leader_epoch_cache.entries
        assert bulk.log_end_offset == single.log_end_offset
        single.close()
    manager.shutdown(broker_epoch=5)
    reopened = LogManager.open([tmp_path / "bulk"])
    assert reopened.clean_shutdown
    for partition in range(PARTITIONS):
        found = TopicPartition("wide", partition)
        restarted = reopened.get_log(found)
        assert restarted is not None
        single = Log.open(tmp_path / "single" / f"wide-{partition}", LogConfig())
        assert read_values(restarted) == read_values(single)
        # Both keep the epochs written in; an epoch started on an empty log and never
        # written in is gone from both.
        assert restarted.leader_epoch_cache.entries == single.leader_epoch_cache.entries
        assert reopened.topic_id_of(found) == WIDE_ID
        single.close()
    reopened.close()


def test_a_power_cut_right_after_creation_leaves_logs_that_are_used_again(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "data"
    journal = tmp_path / "journal"
    durability.enable_journal(journal)
    try:
        manager = LogManager.open([directory])
        created = manager.get_or_create_logs(_wide(), topic_ids={"wide": WIDE_ID})
        for log in created:
            log.start_leader_epoch(0)
        manager.close()
    finally:
        durability.disable_journal()
    power_cut(journal, directory)
    manager = LogManager.open([directory])
    assert not manager.clean_shutdown
    # The directories were synced into the log directory: the logs are there, empty, and
    # whatever of their id was lost they take again.
    assert set(manager.logs) == {partition for partition, _ in _wide()}
    again = manager.get_or_create_logs(_wide(), topic_ids={"wide": WIDE_ID})
    for log in again:
        assert (log.log_start_offset, log.log_end_offset) == (0, 0)
        assert log.leader_epoch_cache.entries == []
        assert read_partition_metadata(log.directory) == WIDE_ID
        log.start_leader_epoch(1)
        log.append(make_batch(1, tag=9), leader_epoch=1)
        assert log.leader_epoch_cache.entries == [EpochEntry(1, 0)]
    manager.shutdown(broker_epoch=6)
    reopened = LogManager.open([directory])
    for partition, _ in _wide():
        restarted = reopened.get_log(partition)
        assert restarted is not None
        assert read_values(restarted) == [b"9:0:......"]
        assert restarted.leader_epoch_cache.entries == [EpochEntry(1, 0)]
    reopened.close()


def test_a_partition_directory_left_by_an_earlier_attempt_is_opened_as_is(
    tmp_path: Path,
) -> None:
    manager = LogManager.open([tmp_path])
    leftover = Log.open(tmp_path / "wide-3", LogConfig())
    leftover.append(make_batch(1, tag=4), leader_epoch=2)
    leftover.flush()
    leftover.close()
    created = manager.get_or_create_logs(_wide(5), topic_ids={"wide": WIDE_ID})
    assert read_values(created[3]) == [b"4:0:......"]
    assert created[3].leader_epoch_cache.entries == [EpochEntry(2, 0)]
    assert all(log.log_end_offset == 0 for p, log in enumerate(created) if p != 3)
    assert all(read_partition_metadata(log.directory) == WIDE_ID for log in created)
    manager.close()


def test_logs_prepared_ahead_are_handed_out_as_if_created_when_asked(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    manager = LogManager.open([first, second])
    wanted = _wide()
    manager.prepare_logs(wanted[20:], topic_ids={"wide": WIDE_ID})
    logs = manager.get_or_create_logs(wanted, topic_ids={"wide": WIDE_ID})
    assert [log.directory.name for log in logs] == [f"wide-{p}" for p in range(PARTITIONS)]
    # Placed as they would have been without preparing: the directories hold as many.
    assert sum(log.directory.parent == first for log in logs) == PARTITIONS // 2
    for partition, log in zip(wanted, logs, strict=True):
        assert manager.get_log(partition[0]) is log
        assert manager.topic_id_of(partition[0]) == WIDE_ID
        log.start_leader_epoch(1)
        log.append(make_batch(1, tag=3), leader_epoch=1)
    manager.shutdown(broker_epoch=2)
    reopened = LogManager.open([first, second])
    assert set(reopened.logs) == {partition for partition, _ in wanted}
    assert all(read_values(log) == [b"3:0:......"] for log in reopened.logs.values())
    reopened.close()


def test_a_log_prepared_for_another_topic_id_is_never_handed_out(tmp_path: Path) -> None:
    manager = LogManager.open([tmp_path])
    manager.prepare_logs(_wide(2), topic_ids={"wide": WIDE_ID})
    with pytest.raises(InconsistentTopicIdError):
        manager.get_or_create_logs(_wide(2), topic_ids={"wide": UUID(int=0x2E)})
    manager.close()


@pytest.mark.parametrize("made", ["created", "prepared"])
def test_new_empty_logs_keep_their_topic_id_after_a_clean_stop(tmp_path: Path, made: str) -> None:
    # Their `partition.metadata` waits for a flush that an empty log's data never asks for:
    # the clean stop's flush makes it durable. Logs only prepared (an apply of metadata cut
    # short by the stop) are made durable and closed with the others.
    directory = tmp_path / "data"
    journal = tmp_path / "journal"
    durability.enable_journal(journal)
    try:
        manager = LogManager.open([directory])
        if made == "created":
            manager.get_or_create_logs(_wide(4), topic_ids={"wide": WIDE_ID})
        else:
            manager.prepare_logs(_wide(4), topic_ids={"wide": WIDE_ID})
        manager.shutdown(broker_epoch=3)
    finally:
        durability.disable_journal()
    assert set(manager.logs) == {partition for partition, _ in _wide(4)}
    power_cut(journal, directory)
    reopened = LogManager.open([directory])
    assert reopened.clean_shutdown
    assert set(reopened.logs) == {partition for partition, _ in _wide(4)}
    assert all(reopened.topic_id_of(partition) == WIDE_ID for partition, _ in _wide(4))
    reopened.close()
