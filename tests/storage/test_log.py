"""Behaviour of one partition log: appends, reads, rolls, truncation, retention, flushing."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import crc32c
import pytest

from net.record_batch import (
    NO_TIMESTAMP,
    BatchHeader,
    CorruptBatchError,
    InvalidBatchError,
    TimestampType,
    UnsupportedMagicError,
    iter_batches,
    read_header,
)
from net.records import Record, decode_batch, encode_batch
from storage.errors import (
    InvalidTimestampError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    UnexpectedAppendOffsetError,
)
from storage.index import TimeIndex
from storage.log import Log, LogConfig
from tests.storage.helpers import make_batch, open_log, read_values


def test_append_assigns_offsets_and_stamps_the_leader_epoch(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = log.append(make_batch(3, tag=1), leader_epoch=5)
    second = log.append(make_batch(2, tag=2), leader_epoch=5)
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    data = log.read(0, 1 << 20).records
    assert data is not None
    headers = [header for _, header in iter_batches(data.read())]
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 5), (3, 5)]
    assert [entry.epoch for entry in log.leader_epoch_cache.entries] == [5]


def test_read_returns_the_whole_batch_containing_the_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for tag in range(4):
        log.append(make_batch(10, tag=tag), leader_epoch=0)
    result = log.read(25, 1 << 20)
    assert result.records is not None
    data = result.records.read()
    assert read_header(data).base_offset == 20
    assert (result.log_start_offset, result.log_end_offset) == (0, 40)


def test_read_respects_max_bytes_but_returns_one_batch_at_least(tmp_path: Path) -> None:
    log = open_log(tmp_path, index_interval_bytes=100)
    sizes = [len(make_batch(5, value_size=50, tag=tag)) for tag in range(20)]
    for tag in range(20):
        log.append(make_batch(5, value_size=50, tag=tag), leader_epoch=0)
    result = log.read(0, sizes[0] * 3 + 10)
    assert result.records is not None
    assert result.records.size == sum(sizes[:3])
    big = log.read(0, 10)
    assert big.records is not None and big.records.size == sizes[0]
    assert log.read(0, 10, min_one_batch=False).records is None


def test_read_stops_below_max_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for tag in range(5):
        log.append(make_batch(2, tag=tag), leader_epoch=0)
    log.update_high_watermark(6)
    result = log.read(0, 1 << 20, max_offset=log.high_watermark)
    assert result.records is not None
    last = [header for _, header in iter_batches(result.records.read())][-1]
    assert last.last_offset == 5
    assert log.read(6, 1 << 20, max_offset=6).records is None


def test_reads_outside_the_log_are_out_of_range(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(make_batch(3), leader_epoch=0)
    assert log.read(3, 100).records is None
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_a_corrupt_batch_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    good = make_batch(2, tag=1)
    corrupt = bytearray(make_batch(2, tag=2))
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptBatchError, match="CRC"):
        log.append(good + bytes(corrupt), leader_epoch=0)
    with pytest.raises(CorruptBatchError, match="claims"):
        log.append(good[:-5], leader_epoch=0)
    with pytest.raises(CorruptBatchError, match="truncated"):
        log.append(good[:30], leader_epoch=0)
    assert log.log_end_offset == 0
    assert log.size_in_bytes == 0
    assert log.leader_epoch_cache.entries == []


def test_before_write_sees_validated_headers_and_can_refuse_the_append(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    seen: list[list[int]] = []

    def refuse(headers: Sequence[BatchHeader]) -> None:
        seen.append([header.record_count for header in headers])
        raise LookupError("refused by the caller")

    batches = make_batch(2, tag=1) + make_batch(3, tag=2)
    with pytest.raises(LookupError):
        log.append(batches, leader_epoch=0, before_write=refuse)
    assert seen == [[2, 3]]
    assert (log.log_end_offset, log.size_in_bytes) == (0, 0)
    # A corrupt batch is refused before the caller is asked anything.
    corrupt = bytearray(make_batch(1, tag=3))
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptBatchError):
        log.append(bytes(corrupt), leader_epoch=0, before_write=refuse)
    assert seen == [[2, 3]]
    log.append(batches, leader_epoch=0, before_write=lambda headers: seen.append([]))
    assert log.log_end_offset == 5


def test_old_magic_and_inconsistent_batches_are_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path, max_message_bytes=2000)
    magic_one = bytearray(make_batch())
    magic_one[16] = 1
    with pytest.raises(UnsupportedMagicError):
        log.append(bytes(magic_one), leader_epoch=0)
    two_records = encode_batch([Record(value=b"a"), Record(value=b"b")])
    lying = bytearray(two_records)
    lying[57:61] = (3).to_bytes(4, "big")  # the record count is covered by the CRC
    with pytest.raises(CorruptBatchError):
        log.append(bytes(lying), leader_epoch=0)
    with pytest.raises(RecordBatchTooLargeError):
        log.append(make_batch(1, value_size=3000), leader_epoch=0)
    with pytest.raises(InvalidBatchError):
        log.append(b"", leader_epoch=0)
    assert log.log_end_offset == 0


def test_record_count_must_match_the_offset_delta(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    batch = encode_batch([Record(value=b"a"), Record(value=b"b")])
    header = read_header(batch)
    # Rebuild the same batch claiming one record with a valid CRC.
    forged = bytearray(batch)
    forged[57:61] = (1).to_bytes(4, "big")
    forged[17:21] = crc32c.crc32c(bytes(forged[21:])).to_bytes(4, "big")
    assert header.record_count == 2
    with pytest.raises(InvalidBatchError, match="record count"):
        log.append(bytes(forged), leader_epoch=0)


def test_log_append_time_rewrites_timestamp_and_crc(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    info = log.append(make_batch(2, timestamp=5), leader_epoch=1, log_append_time_ms=99_000)
    assert info.max_timestamp == 99_000
    result = log.read(0, 1 << 20)
    assert result.records is not None
    header, _ = decode_batch(result.records.read())
    assert header.max_timestamp == 99_000
    assert header.timestamp_type.name == "LOG_APPEND_TIME"


def test_a_log_append_time_log_stamps_its_own_clock(tmp_path: Path) -> None:
    clock = [1_000_000]
    log = open_log(
        tmp_path,
        clock,
        message_timestamp_type=TimestampType.LOG_APPEND_TIME,
    )
    # Its producers' timestamps are replaced, so no bound applies to them.
    info = log.append(make_batch(2, timestamp=10**15), leader_epoch=0)
    assert info.max_timestamp == 1_000_000
    result = log.read(0, 1 << 20)
    assert result.records is not None
    header, _ = decode_batch(result.records.read())
    assert (header.max_timestamp, header.timestamp_type) == (
        1_000_000,
        TimestampType.LOG_APPEND_TIME,
    )


def test_create_time_timestamps_must_lie_within_the_bounds(tmp_path: Path) -> None:
    hour = 3600 * 1000
    now = 100 * hour
    log = open_log(tmp_path, [now], message_timestamp_before_max_ms=2 * hour)
    log.append(make_batch(timestamp=now + hour), leader_epoch=0)
    log.append(make_batch(timestamp=now - 2 * hour), leader_epoch=0)
    for refused in (now + hour + 1, now - 2 * hour - 1):
        with pytest.raises(InvalidTimestampError) as error:
            log.append(make_batch(1, tag=1) + make_batch(timestamp=refused), leader_epoch=0)
        assert error.value.error_code == 32
    assert log.log_end_offset == 2
    # Without bounds anything goes; a batch with no timestamp always does.
    unbounded = open_log(tmp_path / "unbounded", [now], message_timestamp_after_max_ms=None)
    unbounded.append(make_batch(timestamp=now * 1000), leader_epoch=0)
    log.append(make_batch(timestamp=-1), leader_epoch=0)
    assert (unbounded.log_end_offset, log.log_end_offset) == (1, 3)


def test_each_record_is_checked_and_those_out_of_bounds_are_named(tmp_path: Path) -> None:
    hour = 3600 * 1000
    now = 100 * hour
    log = open_log(tmp_path, [now], message_timestamp_before_max_ms=2 * hour)
    # The first record's timestamp (the batch's base) and the max are in bounds; two records
    # between them are not: the whole batch is refused, naming them by index.
    stamps = [now, now - 3 * hour, now - 4 * hour, now]
    batch = encode_batch([Record(b"v", timestamp=stamp) for stamp in stamps])
    with pytest.raises(InvalidTimestampError) as error:
        log.append(batch, leader_epoch=0)
    assert [e.batch_index for e in error.value.record_errors] == [1, 2]
    assert error.value.record_errors[0].message == (
        f"Timestamp {now - 3 * hour} of message with offset 1 is out of range. The timestamp "
        f"should be within [{now - 2 * hour}, {now + hour}]"
    )
    assert log.log_end_offset == 0


def test_follower_append_keeps_offsets_and_epochs(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    leader.append(make_batch(3, tag=1), leader_epoch=1)
    leader.append(make_batch(3, tag=2), leader_epoch=4)
    follower = open_log(tmp_path / "follower")
    data = leader.read(0, 1 << 20).records
    assert data is not None
    info = follower.append_as_follower(data.read())
    assert (info.first_offset, info.last_offset) == (0, 5)
    assert [(e.epoch, e.start_offset) for e in follower.leader_epoch_cache.entries] == [
        (1, 0),
        (4, 3),
    ]
    assert read_values(follower) == read_values(leader)
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(data.read())
    assert follower.log_end_offset == 6


def test_segments_roll_by_size_and_by_age(tmp_path: Path) -> None:
    batch = make_batch(1, value_size=100, timestamp=1_000)
    log = open_log(tmp_path, segment_bytes=len(batch) * 3, segment_ms=60_000)
    for _ in range(7):
        log.append(batch, leader_epoch=0)
    assert log.segment_base_offsets == [0, 3, 6]
    assert sorted(p.name for p in tmp_path.glob("*.log")) == [
        "00000000000000000000.log",
        "00000000000000000003.log",
        "00000000000000000006.log",
    ]
    # Age is measured from the max timestamp of the segment's first batch (Kafka's rule).
    log.append(make_batch(1, value_size=100, timestamp=60_999), leader_epoch=0)
    assert log.segment_base_offsets == [0, 3, 6]
    log.append(make_batch(1, value_size=100, timestamp=61_000), leader_epoch=0)
    assert log.segment_base_offsets == [0, 3, 6, 8]
    assert len(read_values(log)) == 9


def test_bytes_from_an_offset_count_whole_batches_to_the_end_across_segments(
    tmp_path: Path,
) -> None:
    batch = make_batch(2, value_size=100, timestamp=1_000)
    log = open_log(tmp_path, segment_bytes=len(batch) * 3)
    for _ in range(7):
        log.append(batch, leader_epoch=0)
    assert log.segment_base_offsets == [0, 6, 12]
    assert log.bytes_from(0) == log.size_in_bytes == 7 * len(batch)
    # Offset 3 is inside the second batch: from its start.
    assert log.bytes_from(3) == 6 * len(batch)
    assert log.bytes_from(6) == 4 * len(batch)
    assert log.bytes_from(13) == len(batch)
    assert log.bytes_from(14) == log.bytes_from(99) == 0
    log.update_high_watermark(14)
    log.delete_records(6)
    assert log.log_start_offset == 6
    # Below the log start: the whole log.
    assert log.bytes_from(0) == log.size_in_bytes


@pytest.mark.parametrize("clean_shutdown", [True, False])
def test_a_reopened_segment_rolls_by_the_age_of_its_first_batch(
    tmp_path: Path, clean_shutdown: bool
) -> None:
    log = open_log(tmp_path, segment_ms=60_000)
    log.append(make_batch(1, timestamp=1_000), leader_epoch=0)
    log.append(make_batch(1, timestamp=40_000), leader_epoch=0)
    log.flush()
    log.close()
    reopened = Log.open(tmp_path, LogConfig(segment_ms=60_000), clean_shutdown=clean_shutdown)
    reopened.append(make_batch(1, timestamp=61_000), leader_epoch=0)
    assert reopened.segment_base_offsets == [0, 2]


def test_batches_without_timestamps_roll_by_the_clock_since_the_first_append(
    tmp_path: Path,
) -> None:
    clock = [0]
    batch = make_batch(1, timestamp=NO_TIMESTAMP)
    log = open_log(tmp_path, clock, segment_ms=60_000)
    log.append(batch, leader_epoch=0)
    clock[0] = 59_999
    log.append(batch, leader_epoch=0)
    assert log.segment_base_offsets == [0]
    clock[0] = 60_000
    log.append(batch, leader_epoch=0)
    assert log.segment_base_offsets == [0, 2]
    log.close()
    # A reopen cannot know when the segment's first batch came: the clock starts again.
    reopened = open_log(tmp_path, clock, segment_ms=60_000)
    clock[0] = 200_000
    reopened.append(batch, leader_epoch=0)
    clock[0] = 259_999
    reopened.append(batch, leader_epoch=0)
    assert reopened.segment_base_offsets == [0, 2]
    clock[0] = 260_000
    reopened.append(batch, leader_epoch=0)
    assert reopened.segment_base_offsets == [0, 2, 5]


def test_lookup_by_timestamp_uses_the_time_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path, index_interval_bytes=0, segment_bytes=600)
    for index in range(30):
        log.append(make_batch(2, timestamp=1_000 + index * 10, tag=index), leader_epoch=0)
    assert len(log.segment_base_offsets) > 3
    # What the time index answers, to see the walk start from its entry.
    answers: list[tuple[int, int] | None] = []
    floor = TimeIndex.floor

    def recorded_floor(index: TimeIndex, timestamp: int) -> tuple[int, int] | None:
        answers.append(floor(index, timestamp))
        return answers[-1]

    monkeypatch.setattr(TimeIndex, "floor", recorded_floor)
    found = log.lookup_timestamp(1_155)
    assert found is not None
    assert (found.offset, found.max_timestamp) == (32, 1_160)
    # The segment holding offset 32 indexed each of its batches: the entry of the batch before
    # (max timestamp 1,150, offset 30) is where the walk started.
    segment_base = max(base for base in log.segment_base_offsets if base <= 32)
    assert (1_150, 30 - segment_base) in answers
    first = log.lookup_timestamp(0)
    assert first is not None and first.offset == 0
    assert log.lookup_timestamp(5_000) is None


def test_truncate_to_removes_whole_batches_and_epochs(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=400)
    for epoch in (1, 1, 2, 2, 3, 3):
        log.append(make_batch(3, tag=epoch), leader_epoch=epoch)
    log.update_high_watermark(18)
    log.truncate_to(10)
    assert log.log_end_offset == 9
    assert log.high_watermark == 9
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [
        (1, 0),
        (2, 6),
    ]
    assert len(read_values(log)) == 9
    info = log.append(make_batch(1), leader_epoch=4)
    assert info.first_offset == 9


def test_truncate_past_the_end_forgets_epochs_that_start_there(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(make_batch(3), leader_epoch=1)
    # Led epoch 2 without writing in it, then a follower again.
    log.start_leader_epoch(2)
    log.truncate_to(3)
    assert log.log_end_offset == 3
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(1, 0)]
    reopened = Log.open(tmp_path, LogConfig())
    assert reopened.latest_epoch == 1


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(make_batch(5), leader_epoch=2)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset) == (100, 100)
    assert log.leader_epoch_cache.entries == []
    assert log.append(make_batch(1), leader_epoch=3).first_offset == 100
    assert [p.name for p in tmp_path.glob("*.log")] == ["00000000000000000100.log"]


def test_retention_by_time_and_size_deletes_whole_segments_below_the_hw(tmp_path: Path) -> None:
    batch_size = len(make_batch(1, value_size=100))
    log = open_log(tmp_path, segment_bytes=batch_size * 2, retention_ms=1_000)
    for index in range(10):
        log.append(make_batch(1, value_size=100, timestamp=index * 1_000), leader_epoch=0)
    assert len(log.segment_base_offsets) == 5
    assert log.enforce_retention(now_ms=5_500) == 0  # nothing below the high watermark
    log.update_high_watermark(10)
    assert log.enforce_retention(now_ms=5_500) == 2
    assert log.log_start_offset == 4
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 100)
    sized = Log.open(
        tmp_path / "sized",
        LogConfig(segment_bytes=batch_size * 2, retention_ms=None, retention_bytes=batch_size * 5),
    )
    for _ in range(10):
        sized.append(make_batch(1, value_size=100), leader_epoch=0)
    sized.update_high_watermark(10)
    assert sized.enforce_retention() == 2
    assert sized.log_start_offset == 4
    assert sized.size_in_bytes == batch_size * 6


def test_retention_deletes_a_segment_left_wholly_below_the_log_start(tmp_path: Path) -> None:
    # DeleteRecords past everything of the active segment keeps it; once a later segment holds
    # the log start, retention deletes it whatever its age (Kafka's
    # deleteLogStartOffsetBreachedSegments), with no retention limit reached.
    log = open_log(tmp_path, retention_ms=None)
    log.append(make_batch(6, timestamp=5_000), leader_epoch=0)
    log.update_high_watermark(6)
    log.delete_records(6)
    assert log.segment_base_offsets == [0]
    log.roll()
    log.append(make_batch(1, timestamp=6_000), leader_epoch=0)
    assert log.enforce_retention(now_ms=6_000) == 1
    assert log.segment_base_offsets == [6]
    assert (log.log_start_offset, log.log_end_offset) == (6, 7)


def test_delete_records_moves_the_log_start_up_to_the_hw(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=300)
    for _ in range(10):
        log.append(make_batch(2), leader_epoch=1)
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(5)
    log.update_high_watermark(20)
    assert log.delete_records(7) == 7
    assert log.segment_base_offsets[0] <= 7
    assert len(read_values(log)) == 13
    assert log.leader_epoch_cache.entries[0].start_offset == 7


def test_end_offset_for_epoch(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(make_batch(2), leader_epoch=1)
    log.append(make_batch(3), leader_epoch=3)
    log.append(make_batch(1), leader_epoch=6)
    assert log.end_offset_for_epoch(6) == (6, 6)
    assert log.end_offset_for_epoch(3) == (3, 5)
    assert log.end_offset_for_epoch(4) == (3, 5)
    assert log.end_offset_for_epoch(1) == (1, 2)
    assert log.end_offset_for_epoch(0) == (0, 0)
    assert log.end_offset_for_epoch(7) == (-1, -1)


def test_flush_every_write_advances_the_recovery_point(tmp_path: Path) -> None:
    log = open_log(tmp_path, flush_messages=1)
    log.append(make_batch(3), leader_epoch=0)
    assert log.recovery_point == 3
    every_five = open_log(tmp_path / "five", flush_messages=5)
    every_five.append(make_batch(3), leader_epoch=0)
    assert every_five.recovery_point == 0
    every_five.append(make_batch(3), leader_epoch=0)
    assert every_five.recovery_point == 6


def test_flush_by_time_and_on_roll(tmp_path: Path) -> None:
    clock = [0]
    timed = open_log(tmp_path / "timed", clock, flush_ms=100)
    timed.append(make_batch(2), leader_epoch=0)
    timed.flush_if_due(50)
    assert timed.recovery_point == 0
    timed.flush_if_due(100)
    assert timed.recovery_point == 2
    batch = make_batch(1, value_size=100)
    rolled = open_log(tmp_path / "rolled", clock, segment_bytes=len(batch) * 2)
    for _ in range(5):
        rolled.append(batch, leader_epoch=0)
    rolled.flush_if_due()
    assert rolled.recovery_point == 4  # sealed segments only; the active one waits
    assert rolled.log_end_offset == 5


def test_clean_reopen_keeps_everything(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=500, index_interval_bytes=64)
    for tag in range(12):
        log.append(make_batch(2, tag=tag), leader_epoch=tag // 4)
    values = read_values(log)
    log.flush()
    log.close()
    reopened = Log.open(
        tmp_path,
        LogConfig(segment_bytes=500, index_interval_bytes=64),
        recovery_point=log.log_end_offset,
        clean_shutdown=True,
    )
    assert reopened.log_end_offset == 24
    assert read_values(reopened) == values
    assert reopened.leader_epoch_cache.entries == log.leader_epoch_cache.entries
    assert reopened.append(make_batch(1), leader_epoch=3).first_offset == 24


def test_clean_open_trusts_sealed_data_and_unclean_open_validates_it(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=300)
    for tag in range(6):
        log.append(make_batch(2, tag=tag), leader_epoch=0)
    log.flush()
    log.close()
    second_segment = sorted(tmp_path.glob("*.log"))[1]
    data = bytearray(second_segment.read_bytes())
    data[-3] ^= 0x55  # inside a record: only the CRC can tell
    second_segment.write_bytes(data)
    trusted = Log.open(tmp_path, LogConfig(segment_bytes=300), clean_shutdown=True)
    assert trusted.log_end_offset == 12
    trusted.close()
    recovered = Log.open(tmp_path, LogConfig(segment_bytes=300), clean_shutdown=False)
    assert recovered.log_end_offset < 12
    assert len(read_values(recovered)) == recovered.log_end_offset


def test_missing_leader_epoch_checkpoint_is_rebuilt_from_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(make_batch(2), leader_epoch=3)
    log.append(make_batch(2), leader_epoch=7)
    log.flush()
    log.close()
    os.unlink(tmp_path / "leader-epoch-checkpoint")
    reopened = Log.open(tmp_path, recovery_point=4, clean_shutdown=True)
    assert [(e.epoch, e.start_offset) for e in reopened.leader_epoch_cache.entries] == [
        (3, 0),
        (7, 2),
    ]


def test_a_new_log_writes_its_leader_epoch_checkpoint_with_its_first_epoch(
    tmp_path: Path,
) -> None:
    checkpoint = tmp_path / "leader-epoch-checkpoint"
    log = open_log(tmp_path)
    assert not checkpoint.exists()
    log.close()
    assert Log.open(tmp_path).latest_epoch is None
    assert not checkpoint.exists()
    reopened = Log.open(tmp_path)
    reopened.append(make_batch(2), leader_epoch=4)
    assert checkpoint.read_text().splitlines()[-1] == "4 0"
    reopened.close()


def test_an_unreadable_leader_epoch_checkpoint_of_an_empty_log_is_rewritten(
    tmp_path: Path,
) -> None:
    open_log(tmp_path).close()
    checkpoint = tmp_path / "leader-epoch-checkpoint"
    checkpoint.write_text("garbage")
    Log.open(tmp_path).close()
    assert checkpoint.read_text().splitlines() == ["0", "0"]


def test_a_follower_rolling_at_an_offset_gap_keeps_its_segments_through_recovery(
    tmp_path: Path,
) -> None:
    # A compacted leader's batches leave offset gaps; the follower rolls at one.
    batch = make_batch(1, value_size=100)
    follower = open_log(tmp_path, segment_bytes=len(batch) * 2)
    for base_offset in (0, 1, 5, 9, 20):
        shifted = bytearray(batch)
        shifted[0:8] = base_offset.to_bytes(8, "big")
        follower.append_as_follower(bytes(shifted))
    assert follower.log_end_offset == 21
    # Each new segment starts where the log ended, not at its first batch.
    assert follower.segment_base_offsets == [0, 2, 10]
    expected = read_values(follower)
    follower.close()

    # An unclean open recovers every segment: the gaps are not taken for a crash's cut.
    reopened = open_log(tmp_path, segment_bytes=len(batch) * 2)
    assert reopened.log_end_offset == 21
    assert read_values(reopened) == expected and len(expected) == 5
    assert read_values(reopened, 6) == expected[3:]
