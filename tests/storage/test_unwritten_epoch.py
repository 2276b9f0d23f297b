"""A leader epoch started on a log that holds no batch is checkpointed by the log's first
append, not when it starts (creating thousands of led partitions then costs no fsync for it);
an append writes the checkpoint its batches need without fsync, and the log's flush syncs it
before any of them is durable (as a new log's `partition.metadata`). Such a lazily
checkpointed log behaves as one whose epoch was checkpointed at once: appends, reads, follower
appends, truncation, restarts clean, after a crash, or after a power cut."""

from __future__ import annotations

import tempfile
from pathlib import Path
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from storage import durability
from storage.durability import durable_lengths, power_cut
from storage.leader_epoch_cache import CHECKPOINT_NAME, EpochEntry, LeaderEpochCache
from storage.log import Log, LogConfig
from storage.log_manager import LogManager, TopicPartition
from storage.partition_metadata import PARTITION_METADATA_FILE, read_partition_metadata
from tests.storage.helpers import make_batch, read_values


def _on_disk(log: Log) -> list[EpochEntry] | None:
    cache = LeaderEpochCache.load(log.directory)
    return None if cache is None else cache.entries


def _reopen(log: Log, *, clean: bool) -> Log:
    """The log as a restart finds it: closed (flushed first when `clean`) and opened again."""
    if clean:
        log.flush()
    log.close()
    return Log.open(
        log.directory,
        LogConfig(),
        recovery_point=log.recovery_point,
        high_watermark=log.high_watermark,
        clean_shutdown=clean,
    )


def test_a_new_logs_first_epoch_is_checkpointed_by_its_first_append(tmp_path: Path) -> None:
    log = Log.open(tmp_path, LogConfig())
    log.start_leader_epoch(3)
    assert log.leader_epoch_cache.entries == [EpochEntry(3, 0)]
    assert log.end_offset_for_epoch(3) == (3, 0)
    assert _on_disk(log) is None
    log.append(make_batch(2, tag=1), leader_epoch=3)
    assert _on_disk(log) == [EpochEntry(3, 0)]
    log = _reopen(log, clean=True)
    assert log.leader_epoch_cache.entries == [EpochEntry(3, 0)]
    assert read_values(log) == [b"1:0:......", b"1:1:......"]


def test_a_crash_before_the_first_append_leaves_an_empty_log_that_leads_again(
    tmp_path: Path,
) -> None:
    log = Log.open(tmp_path, LogConfig())
    log.start_leader_epoch(0)
    log = _reopen(log, clean=False)
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    assert log.leader_epoch_cache.entries == []
    log.start_leader_epoch(1)
    log.append(make_batch(1, tag=7), leader_epoch=1)
    log = _reopen(log, clean=False)
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0)]
    assert read_values(log) == [b"7:0:......"]


def test_a_follower_append_checkpoints_its_epochs(tmp_path: Path) -> None:
    leader = Log.open(tmp_path / "leader", LogConfig())
    leader.start_leader_epoch(2)
    leader.append(make_batch(2, tag=1), leader_epoch=2)
    replicated = leader.read(0, 1 << 20).records
    assert replicated is not None
    follower = Log.open(tmp_path / "follower", LogConfig())
    # Led once before its leader moved on: that epoch is only in memory.
    follower.start_leader_epoch(1)
    follower.append_as_follower(replicated.read())
    assert _on_disk(follower) == [EpochEntry(2, 0)]
    assert not follower.leader_epoch_cache.unpersisted


def test_truncation_drops_an_unwritten_epoch_from_memory_and_disk(tmp_path: Path) -> None:
    log = Log.open(tmp_path, LogConfig())
    log.start_leader_epoch(4)
    log.truncate_to(0)
    assert log.leader_epoch_cache.entries == []
    assert _on_disk(log) == []
    assert not log.leader_epoch_cache.unpersisted


def test_an_epoch_started_on_a_log_holding_batches_is_checkpointed_at_once(
    tmp_path: Path,
) -> None:
    log = Log.open(tmp_path, LogConfig())
    log.append(make_batch(1), leader_epoch=0)
    log.start_leader_epoch(1)
    assert _on_disk(log) == [EpochEntry(0, 0), EpochEntry(1, 1)]
    assert not log.leader_epoch_cache.unpersisted


_OPERATIONS = st.lists(
    st.one_of(
        st.just(("lead", 0)),
        st.tuples(st.just("append"), st.integers(1, 3)),
        st.tuples(st.just("truncate"), st.integers(0, 4)),
        st.tuples(st.just("reopen"), st.integers(0, 1)),
    ),
    max_size=12,
)


def _written(entries: list[EpochEntry], log_end_offset: int) -> list[EpochEntry]:
    """The entries a restart must keep: those with a batch written in them."""
    return [entry for entry in entries if entry.start_offset < log_end_offset]


@settings(max_examples=40, deadline=None)
@given(_OPERATIONS)
def test_a_lazily_checkpointed_log_behaves_as_an_eagerly_checkpointed_one(
    operations: list[tuple[str, int]],
) -> None:
    with tempfile.TemporaryDirectory() as root:
        lazy = Log.open(Path(root) / "lazy", LogConfig())
        eager = Log.open(Path(root) / "eager", LogConfig())
        epoch = -1
        for kind, argument in operations:
            if kind == "lead":
                epoch += 1
                lazy.start_leader_epoch(epoch)
                # Checkpointed at once, as every epoch start was before.
                eager.leader_epoch_cache.assign(epoch, eager.log_end_offset)
            elif kind == "append" and epoch >= 0:
                for log in (lazy, eager):
                    log.append(make_batch(argument, tag=argument), leader_epoch=epoch)
            elif kind == "truncate":
                for log in (lazy, eager):
                    log.truncate_to(max(log.log_end_offset - argument, 0))
            elif kind == "reopen":
                lazy = _reopen(lazy, clean=bool(argument))
                eager = _reopen(eager, clean=bool(argument))
                # What a restart keeps differs at most by an epoch with nothing written in it.
                end = lazy.log_end_offset
                assert _written(lazy.leader_epoch_cache.entries, end) == _written(
                    eager.leader_epoch_cache.entries, end
                )
                continue
            assert lazy.leader_epoch_cache.entries == eager.leader_epoch_cache.entries
            assert lazy.log_end_offset == eager.log_end_offset
            assert read_values(lazy) == read_values(eager)
            # On disk, whatever a batch was written in.
            on_disk = _on_disk(lazy) or []
            assert _written(on_disk, lazy.log_end_offset) == _written(
                lazy.leader_epoch_cache.entries, lazy.log_end_offset
            )
        lazy.close()
        eager.close()


def test_the_checkpoint_an_append_writes_is_synced_by_the_flush_before_its_batches(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "log"
    journal = tmp_path / "journal"
    checkpoint = str(directory / CHECKPOINT_NAME)
    durability.enable_journal(journal)
    try:
        log = Log.open(directory, LogConfig())
        log.start_leader_epoch(0)
        log.append(make_batch(2, tag=1), leader_epoch=0)
        # Written for the batch, not synced: a power cut now loses both.
        assert _on_disk(log) == [EpochEntry(0, 0)]
        assert checkpoint not in durable_lengths(journal)
        log.flush()
        assert checkpoint in durable_lengths(journal)
        # A new epoch's batch, not flushed: its checkpoint is not synced either.
        log.append(make_batch(1, tag=2), leader_epoch=1)
        assert _on_disk(log) == [EpochEntry(0, 0), EpochEntry(1, 2)]
        log.close()
    finally:
        durability.disable_journal()
    power_cut(journal, directory)
    reopened = Log.open(directory, LogConfig(), recovery_point=2)
    assert reopened.log_end_offset == 2
    assert reopened.leader_epoch_cache.entries == [EpochEntry(0, 0)]
    assert read_values(reopened) == [b"1:0:......", b"1:1:......"]
    reopened.close()


def test_a_crash_keeps_unflushed_batches_with_their_epochs(tmp_path: Path) -> None:
    log = Log.open(tmp_path, LogConfig())
    log.append(make_batch(1, tag=1), leader_epoch=0)
    log.flush()
    log.append(make_batch(1, tag=2), leader_epoch=3)
    # Killed: the page cache keeps what was written, nothing was flushed after the first.
    log.close()
    reopened = Log.open(tmp_path, LogConfig(), recovery_point=1)
    assert reopened.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(3, 1)]
    assert read_values(reopened) == [b"1:0:......", b"2:0:......"]
    reopened.close()


def test_a_new_logs_topic_id_is_synced_by_its_first_flush(tmp_path: Path) -> None:
    directory = tmp_path / "data"
    journal = tmp_path / "journal"
    topic_id = UUID(int=0x5A)
    durability.enable_journal(journal)
    try:
        manager = LogManager.open([directory])
        log = manager.get_or_create_log(TopicPartition("orders", 0), topic_id=topic_id)
        recorded = str(log.directory / PARTITION_METADATA_FILE)
        assert read_partition_metadata(log.directory) == topic_id
        assert recorded not in durable_lengths(journal)
        log.start_leader_epoch(0)
        log.append(make_batch(1, tag=4), leader_epoch=0)
        log.flush()
        assert recorded in durable_lengths(journal)
        manager.close()
    finally:
        durability.disable_journal()
    power_cut(journal, directory)
    reopened = LogManager.open([directory])
    partition = TopicPartition("orders", 0)
    assert reopened.topic_id_of(partition) == topic_id
    restarted = reopened.get_log(partition)
    assert restarted is not None
    assert read_values(restarted) == [b"4:0:......"]
    assert restarted.leader_epoch_cache.entries == [EpochEntry(0, 0)]
    reopened.close()
