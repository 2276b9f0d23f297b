"""Producer-state snapshots kept with a real log: written on roll and on close, loaded on open
and after truncation, so a restarted replica replays only the batches after the snapshot."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import pytest

from broker.partition import Partition
from broker.producer_snapshots import SNAPSHOTS_RETAINED, ProducerSnapshots, snapshot_writer
from broker.producer_state import ProducerStateManager, WrittenBatch
from broker.replica_manager import ReplicaManager
from controller.image import MetadataReplayer
from controller.partition_state import PartitionState
from controller.topic_config import KAFKA_DEFAULTS
from net.record_batch import BatchHeader, read_header
from net.records import Record, encode_batch
from storage import durability
from storage.log import Log, LogConfig
from storage.log_manager import LogManager, TopicPartition
from storage.segment import FileSlice

BROKER = 1
PRODUCER = 7
# Two of these batches fill a segment: the third rolls the log.
CONFIG = LogConfig(segment_bytes=160)


def batch(sequence: int, producer_id: int = PRODUCER, epoch: int = 0) -> bytes:
    return encode_batch(
        [Record(f"v{sequence}".encode())],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        now_ms=1_000,
    )


def open_partition(directory: Path, *, leader: int = BROKER) -> Partition:
    partition = Partition("t", UUID(int=1), 0, BROKER, Log.open(directory, CONFIG))
    partition.apply(PartitionState(replicas=(1, 2), isr=(1, 2), leader=leader, leader_epoch=3))
    return partition


def count_scans(replica_log: Log, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, the base offsets of the batches anything reads with `replica_log.batches`."""
    scanned: list[int] = []
    full_scan = replica_log.batches

    def counting(start_offset: int = 0) -> Iterator[tuple[FileSlice, BatchHeader]]:
        for found in full_scan(start_offset):
            scanned.append(found[1].base_offset)
            yield found

    monkeypatch.setattr(replica_log, "batches", counting)
    return scanned


def reopen(partition: Partition, monkeypatch: pytest.MonkeyPatch) -> tuple[Partition, list[int]]:
    """The partition opened again from its directory, and the base offsets of the batches
    it read from the log while opening."""
    partition.log.close()
    replica_log = Log.open(partition.log.directory, CONFIG, clean_shutdown=True)
    scanned = count_scans(replica_log, monkeypatch)
    reopened = Partition("t", UUID(int=1), 0, BROKER, replica_log)
    monkeypatch.undo()
    reopened.apply(PartitionState(replicas=(1, 2), isr=(1, 2), leader=BROKER, leader_epoch=3))
    return reopened, scanned


def replayed(replica_log: Log) -> bytes:
    """The producer state rebuilt from every batch of the log, as a snapshot."""
    state = ProducerStateManager()
    state.replay(header for _, header in replica_log.batches())
    return state.to_snapshot()


def produce(partition: Partition, sequences: range, producer_id: int = PRODUCER) -> list[int]:
    return [partition.append_as_leader(batch(s, producer_id)).first_offset for s in sequences]


def test_a_cleanly_closed_partition_reopens_without_reading_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partition = open_partition(tmp_path / "t-0")
    offsets = produce(partition, range(9))
    produce(partition, range(3), producer_id=8)
    assert len(partition.log.segment_base_offsets) > 3
    partition.close()
    snapshots = ProducerSnapshots(partition.log.directory)
    assert snapshots.offsets()[-1] == partition.log.log_end_offset == 12
    before = partition.producers.to_snapshot()

    reopened, scanned = reopen(partition, monkeypatch)

    assert scanned == []
    assert reopened.producers.to_snapshot() == before == replayed(reopened.log)
    # A retry of the last batch answers the offset it got the first time, writing nothing.
    assert reopened.append_as_leader(batch(8)).first_offset == offsets[8]
    assert reopened.producers.find_duplicate(read_header(batch(4))) == WrittenBatch(
        4, 4, offsets[4], offsets[4]
    )
    assert reopened.log.log_end_offset == 12
    assert reopened.append_as_leader(batch(9)).first_offset == 12


def test_a_partition_reopened_and_closed_without_appends_keeps_its_snapshot_unwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A node hosting thousands of replicas restarted and stopped again would otherwise
    # rewrite (and fsync) thousands of identical snapshots.
    partition = open_partition(tmp_path / "t-0")
    produce(partition, range(3))
    partition.close()
    snapshot = ProducerSnapshots(partition.log.directory).path(3)
    written = snapshot.stat().st_mtime_ns
    reopened, _ = reopen(partition, monkeypatch)
    reopened.close()
    assert snapshot.stat().st_mtime_ns == written
    # Once something is appended, the close snapshots the new end.
    produce(reopened, range(3, 4))
    reopened.close()
    assert ProducerSnapshots(partition.log.directory).offsets()[-1] == 4


def test_without_a_clean_close_the_tail_after_the_last_roll_snapshot_is_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partition = open_partition(tmp_path / "t-0")
    offsets = produce(partition, range(8))
    partition.wait_for_snapshot()
    snapshots = ProducerSnapshots(partition.log.directory)
    # Each written once the batch that rolled the log is in the state.
    assert snapshots.offsets() == [5, 7]
    before = partition.producers.to_snapshot()

    reopened, scanned = reopen(partition, monkeypatch)

    assert scanned == [7]
    assert reopened.producers.to_snapshot() == before
    assert reopened.append_as_leader(batch(7)).first_offset == offsets[7]
    assert reopened.append_as_leader(batch(3)).first_offset == offsets[3]
    assert reopened.log.log_end_offset == 8


def test_a_follower_snapshots_when_its_log_rolls(tmp_path: Path) -> None:
    partition = open_partition(tmp_path / "t-0", leader=2)
    for offset in range(5):
        partition.append_from_leader(
            encode_batch(
                [Record(b"v")],
                base_offset=offset,
                partition_leader_epoch=3,
                producer_id=PRODUCER,
                producer_epoch=0,
                base_sequence=offset,
                now_ms=1_000,
            ),
            leader_high_watermark=offset,
        )
    partition.wait_for_snapshot()
    snapshots = ProducerSnapshots(partition.log.directory)
    # Written after the roll's append: the state after offsets 0..2, and after 0..4.
    assert snapshots.offsets() == [3, 5]
    loaded = snapshots.latest(at_or_below=4)
    assert loaded is not None
    offset, state = loaded
    assert offset == 3
    assert state.find_duplicate(read_header(batch(2))) == WrittenBatch(2, 2, 2, 2)
    assert state.find_duplicate(read_header(batch(3))) is None


def test_truncation_below_a_snapshot_removes_it_and_forgets_the_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partition = open_partition(tmp_path / "t-0")
    produce(partition, range(8))
    partition.wait_for_snapshot()
    snapshots = ProducerSnapshots(partition.log.directory)
    assert snapshots.offsets() == [5, 7]

    scanned = count_scans(partition.log, monkeypatch)
    partition.truncate_to(6)
    monkeypatch.undo()

    assert snapshots.offsets() == [5]
    # Rebuilt from the remaining snapshot, not from offset 0.
    assert scanned == [5]
    assert partition.producers.to_snapshot() == replayed(partition.log)
    assert partition.producers.find_duplicate(read_header(batch(6))) is None
    assert partition.producers.find_duplicate(read_header(batch(5))) == WrittenBatch(5, 5, 5, 5)
    # The producer resends what was truncated: it continues the sequence, it is not a retry.
    assert partition.append_as_leader(batch(6)).first_offset == 6


def test_restarting_the_log_elsewhere_drops_every_snapshot(tmp_path: Path) -> None:
    partition = open_partition(tmp_path / "t-0", leader=2)
    produce_as = open_partition(tmp_path / "source")
    for sequence in range(5):
        produce_as.append_as_leader(batch(sequence))
        records = produce_as.log.read(sequence, 1 << 20).records
        assert records is not None
        partition.append_from_leader(records.read(), sequence)
    partition.wait_for_snapshot()
    snapshots = ProducerSnapshots(partition.log.directory)
    assert snapshots.offsets()

    partition.restart_at(20)

    assert snapshots.offsets() == []
    assert len(partition.producers) == 0


def test_a_corrupt_newest_snapshot_falls_back_to_the_older_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partition = open_partition(tmp_path / "t-0")
    produce(partition, range(7))
    partition.wait_for_snapshot()
    snapshots = ProducerSnapshots(partition.log.directory)
    older, newest = snapshots.offsets()
    damaged = bytearray(snapshots.path(newest).read_bytes())
    damaged[-1] ^= 0xFF
    snapshots.path(newest).write_bytes(bytes(damaged))
    before = partition.producers.to_snapshot()

    reopened, scanned = reopen(partition, monkeypatch)

    assert snapshots.offsets() == [older]
    assert scanned == list(range(older, 7))
    assert reopened.producers.to_snapshot() == before


def test_snapshots_below_the_log_start_or_beyond_the_newest_few_are_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partition = open_partition(tmp_path / "t-0")
    produce(partition, range(9))
    partition.wait_for_snapshot()
    snapshots = ProducerSnapshots(partition.log.directory)
    assert len(snapshots.offsets()) == SNAPSHOTS_RETAINED
    older, _ = snapshots.offsets()
    partition.log.update_high_watermark(partition.log.log_end_offset)
    partition.log.delete_records(older + 1)

    reopened, _ = reopen(partition, monkeypatch)

    assert min(snapshots.offsets()) >= reopened.log.log_start_offset == older + 1


def test_an_unclean_open_dropping_an_empty_segment_keeps_the_snapshot_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "t-0"
    partition = open_partition(directory)
    produce(partition, range(4))
    partition.log.roll()
    end = partition.log.log_end_offset
    partition.close()
    partition.log.close()
    # Unclean: the empty active segment goes, and with it nothing of the producer state.
    replica_log = Log.open(directory, CONFIG)
    assert replica_log.segment_base_offsets[-1] < end == replica_log.log_end_offset
    assert ProducerSnapshots(directory).offsets()[-1] == end
    scanned = count_scans(replica_log, monkeypatch)
    reopened = Partition("t", UUID(int=1), 0, BROKER, replica_log)
    reopened.apply(PartitionState(replicas=(1,), isr=(1,), leader=BROKER, leader_epoch=3))
    assert scanned == []
    assert reopened.append_as_leader(batch(3)).first_offset == 3


def test_log_batches_from_an_offset_include_the_batch_holding_it(tmp_path: Path) -> None:
    replica_log = Log.open(tmp_path / "t-0", CONFIG)
    for _ in range(4):
        replica_log.append(encode_batch([Record(b"a"), Record(b"b")], now_ms=1_000), leader_epoch=0)
    assert len(replica_log.segment_base_offsets) == 2
    assert [h.base_offset for _, h in replica_log.batches()] == [0, 2, 4, 6]
    assert [h.base_offset for _, h in replica_log.batches(3)] == [2, 4, 6]
    assert [h.base_offset for _, h in replica_log.batches(4)] == [4, 6]
    assert [h.base_offset for _, h in replica_log.batches(8)] == []


async def test_stopping_the_replica_manager_snapshots_every_partition(tmp_path: Path) -> None:
    # More partitions than closes run at once, each with its own producer and log end.
    logs = LogManager.open([tmp_path / "data"], CONFIG)
    manager = ReplicaManager(BROKER, logs, MetadataReplayer(), CONFIG, KAFKA_DEFAULTS)
    partitions = []
    for index in range(20):
        partition = Partition(
            "t",
            UUID(int=1),
            index,
            BROKER,
            logs.get_or_create_log(TopicPartition("t", index), CONFIG),
        )
        partition.apply(PartitionState(replicas=(1,), isr=(1,), leader=BROKER, leader_epoch=0))
        manager.partitions[("t", index)] = partition
        produce(partition, range(index % 4 + 1), producer_id=100 + index)
        partitions.append(partition)

    await manager.stop()

    for index, partition in enumerate(partitions):
        found = ProducerSnapshots(partition.log.directory).load(0, partition.log.log_end_offset)
        assert found is not None
        offset, state = found
        assert offset == partition.log.log_end_offset == index % 4 + 1
        assert state.to_snapshot() == partition.producers.to_snapshot() == replayed(partition.log)


def leading(logs: LogManager, count: int) -> ReplicaManager:
    """A replica manager leading partitions 0 to `count` - 1 of topic `t` alone."""
    manager = ReplicaManager(BROKER, logs, MetadataReplayer(), LogConfig(), KAFKA_DEFAULTS)
    for index in range(count):
        partition = Partition(
            "t", UUID(int=1), index, BROKER, logs.get_or_create_log(TopicPartition("t", index))
        )
        partition.apply(PartitionState(replicas=(1,), isr=(1,), leader=BROKER))
        manager.partitions[("t", index)] = partition
    return manager


async def test_a_clean_stop_writes_the_snapshots_unsynced_and_its_file_system_sync_keeps_them(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    journal = tmp_path / "journal"
    durability.enable_journal(journal)
    try:
        # Segments that do not roll: the only snapshots are those of the stop.
        logs = LogManager.open([data])
        manager = leading(logs, 3)
        for (_, index), partition in manager.partitions.items():
            produce(partition, range(index + 1), producer_id=100 + index)
        await manager.stop()
        # No fsync per snapshot (thousands of replicas stop at once)...
        assert not any(p.endswith(".snapshot") for p in durability.durable_lengths(journal))
        logs.shutdown(broker_epoch=1)
    finally:
        durability.disable_journal()
    # ...the stop's sync of the file system made them durable.
    durability.power_cut(journal, data)
    for (_, index), partition in manager.partitions.items():
        found = ProducerSnapshots(partition.log.directory).load(0, index + 1)
        assert found is not None
        assert found[0] == index + 1
        assert found[1].to_snapshot() == partition.producers.to_snapshot()


async def test_the_event_loop_runs_on_while_the_replicas_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Closing thousands of replicas takes seconds; the node's Raft replica answers meanwhile.
    logs = LogManager.open([tmp_path / "data"])
    manager = leading(logs, 4)
    closing = threading.Event()
    release = threading.Event()
    close = Partition.close

    closed: list[int] = []

    def slow_close(partition: Partition, *, durable: bool = True) -> None:
        closing.set()
        # Bounded, so that a stop blocking the loop fails this test instead of hanging.
        release.wait(10)
        close(partition, durable=durable)
        closed.append(partition.partition_id)

    monkeypatch.setattr(Partition, "close", slow_close)
    stopping = asyncio.create_task(manager.stop())
    async with asyncio.timeout(10):
        while not closing.is_set():
            await asyncio.sleep(0.01)
    ticks = 0
    for _ in range(3):
        await asyncio.sleep(0.01)
        ticks += 1
    assert ticks == 3 and not stopping.done()
    release.set()
    async with asyncio.timeout(10):
        await stopping
    assert sorted(closed) == [0, 1, 2, 3]
    logs.shutdown(broker_epoch=1)


def test_a_rolls_snapshot_is_written_on_the_writer_thread_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writers: list[tuple[str, int]] = []
    write_encoded = ProducerSnapshots._write_encoded

    def recording(self: ProducerSnapshots, offset: int, encoded: bytes) -> None:
        writers.append((threading.current_thread().name, offset))
        write_encoded(self, offset, encoded)

    monkeypatch.setattr(ProducerSnapshots, "_write_encoded", recording)
    partition = open_partition(tmp_path / "t-0")
    produce(partition, range(9))
    partition.wait_for_snapshot()
    # Not on the event loop's thread, and in the order the rolls took them.
    assert {name for name, _ in writers} == {"producer-snapshots_0"}
    assert [offset for _, offset in writers] == [3, 5, 7, 9]
    assert ProducerSnapshots(partition.log.directory).offsets() == [7, 9]


def test_a_truncation_waits_for_the_snapshot_being_written(tmp_path: Path) -> None:
    partition = open_partition(tmp_path / "t-0")
    produce(partition, range(6))
    partition.wait_for_snapshot()
    # The writer thread is held busy, so the next roll's snapshot (at 7) is still queued
    # when the truncation below it starts; it is released a little later.
    release = threading.Event()
    snapshot_writer().submit(release.wait)
    produce(partition, range(6, 8))
    threading.Timer(0.2, release.set).start()
    partition.truncate_to(6)
    snapshot_writer().submit(lambda: None).result()  # whatever was queued is written now

    # The snapshot at 7 describes batches the log no longer holds: it was written before the
    # truncation looked, and removed by it.
    snapshots = ProducerSnapshots(partition.log.directory)
    assert max(snapshots.offsets()) <= partition.log.log_end_offset == 6
    assert partition.producers.to_snapshot() == replayed(partition.log)
    assert partition.append_as_leader(batch(6)).first_offset == 6


def test_a_roll_snapshot_that_failed_is_written_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partition = open_partition(tmp_path / "t-0")
    produce(partition, range(6))
    partition.wait_for_snapshot()
    write_encoded = ProducerSnapshots._write_encoded

    def failing(self: ProducerSnapshots, offset: int, encoded: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ProducerSnapshots, "_write_encoded", failing)
    produce(partition, range(6, 7))  # rolls: its snapshot, at the log end 7, fails
    partition.wait_for_snapshot()
    monkeypatch.setattr(ProducerSnapshots, "_write_encoded", write_encoded)
    snapshots = ProducerSnapshots(partition.log.directory)
    assert snapshots.offsets() == [3, 5]

    # Nothing was appended since, yet the close writes it: the failed one is not on disk.
    partition.close()
    assert snapshots.offsets() == [5, 7] and partition.log.log_end_offset == 7
