"""ListOffsets answers over real logs of RecordBatch v2 batches, against Kafka's rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.offsets import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    NOT_FOUND,
    OffsetAnswer,
    offset_for_timestamp,
)
from net.record_batch import TimestampType
from net.records import Record, encode_batch
from storage.log import Log
from tests.storage.helpers import open_log

# (leader epoch, record timestamps) of each batch, appended in order from offset 0:
#   offsets 0-2 epoch 0, 3-5 epoch 0, 6-8 epoch 2, 9-10 epoch 5.
# Timestamps are out of order inside batches and across them, as producers may write them.
BATCHES = [
    (0, [1_000, 1_010, 1_005]),
    (0, [1_020, 1_040, 1_030]),
    (2, [1_050, 1_100, 1_100]),
    (5, [1_060, 1_070]),
]
LOG_END = 11


def batch(timestamps: list[int], *, log_append_time: bool = False) -> bytes:
    records = [
        Record(value=f"v{index}".encode(), key=b"k", timestamp=timestamp)
        for index, timestamp in enumerate(timestamps)
    ]
    timestamp_type = TimestampType.LOG_APPEND_TIME if log_append_time else TimestampType.CREATE_TIME
    return encode_batch(records, timestamp_type=timestamp_type, now_ms=max(timestamps))


def build_log(directory: Path, *, roll_each_batch: bool) -> Log:
    """BATCHES in one segment, or one segment per batch; the high watermark at the end."""
    log = open_log(directory, index_interval_bytes=0)
    for epoch, timestamps in BATCHES:
        log.append(batch(timestamps), leader_epoch=epoch)
        if roll_each_batch:
            log.roll()
    assert log.log_end_offset == LOG_END
    log.update_high_watermark(LOG_END)
    return log


@pytest.fixture(params=[False, True], ids=["one_segment", "segment_per_batch"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Log:
    return build_log(tmp_path, roll_each_batch=request.param)


def answer(log: Log, timestamp: int, *, committed: bool = False) -> OffsetAnswer:
    return offset_for_timestamp(log, timestamp, isolation_committed=committed)


@pytest.mark.parametrize("timestamp", [EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP])
def test_earliest_is_the_log_start_with_its_epoch(log: Log, timestamp: int) -> None:
    assert answer(log, timestamp) == OffsetAnswer(0, -1, 0)


def test_latest_is_the_high_watermark_for_both_isolations(log: Log) -> None:
    assert answer(log, LATEST_TIMESTAMP) == OffsetAnswer(LOG_END, -1, 5)
    assert answer(log, LATEST_TIMESTAMP, committed=True) == OffsetAnswer(LOG_END, -1, 5)
    log.update_high_watermark(6)
    # The epoch is the one that wrote the offset below the high watermark, not the latest.
    assert answer(log, LATEST_TIMESTAMP) == OffsetAnswer(6, -1, 0)
    log.update_high_watermark(0)
    assert answer(log, LATEST_TIMESTAMP) == OffsetAnswer(0, -1, -1)


def test_latest_answers_the_leader_epoch_given(log: Log) -> None:
    found = offset_for_timestamp(log, LATEST_TIMESTAMP, isolation_committed=False, leader_epoch=7)
    assert found == OffsetAnswer(LOG_END, -1, 7)


def test_latest_tiered_without_remote_storage_is_minus_one(log: Log) -> None:
    assert answer(log, LATEST_TIERED_TIMESTAMP) == OffsetAnswer(-1, -1, -1)


def test_max_timestamp_is_the_first_record_holding_it(log: Log) -> None:
    # Offsets 7 and 8 both carry 1_100: the first wins.
    assert answer(log, MAX_TIMESTAMP) == OffsetAnswer(7, 1_100, 2)
    assert answer(log, MAX_TIMESTAMP, committed=True) == OffsetAnswer(7, 1_100, 2)


def test_max_timestamp_at_or_above_the_high_watermark_is_not_found(log: Log) -> None:
    log.update_high_watermark(8)
    assert answer(log, MAX_TIMESTAMP) == OffsetAnswer(7, 1_100, 2)
    # Kafka does not fall back to the largest timestamp below the high watermark.
    log.update_high_watermark(7)
    assert answer(log, MAX_TIMESTAMP) == NOT_FOUND


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        (0, OffsetAnswer(0, 1_000, 0)),  # before the first record
        (1_000, OffsetAnswer(0, 1_000, 0)),
        # Inside the first batch: 1_010 at offset 1 comes before 1_005 at offset 2.
        (1_005, OffsetAnswer(1, 1_010, 0)),
        (1_011, OffsetAnswer(3, 1_020, 0)),
        (1_035, OffsetAnswer(4, 1_040, 0)),  # middle of a batch
        (1_041, OffsetAnswer(6, 1_050, 2)),
        # 1_070 at offset 10 comes after 1_100 at offset 7: the first offset wins.
        (1_065, OffsetAnswer(7, 1_100, 2)),
        (1_100, OffsetAnswer(7, 1_100, 2)),
        (1_101, NOT_FOUND),  # after the last record
    ],
)
def test_timestamp_finds_the_first_record_at_or_after_it(
    log: Log, timestamp: int, expected: OffsetAnswer
) -> None:
    assert answer(log, timestamp) == expected
    assert answer(log, timestamp, committed=True) == expected


def test_a_record_at_or_above_the_high_watermark_is_not_found(log: Log) -> None:
    log.update_high_watermark(4)
    assert answer(log, 1_035) == NOT_FOUND  # offset 4
    assert answer(log, 1_011) == OffsetAnswer(3, 1_020, 0)
    log.update_high_watermark(3)
    assert answer(log, 1_011) == NOT_FOUND


def test_log_append_time_batches_stamp_every_record(tmp_path: Path) -> None:
    log = open_log(tmp_path, index_interval_bytes=0)
    log.append(batch([10, 30, 20]), leader_epoch=1, log_append_time_ms=5_000)
    log.append(batch([40, 50]), leader_epoch=3, log_append_time_ms=6_000)
    log.append(batch([60, 70]), leader_epoch=3, log_append_time_ms=6_000)
    log.update_high_watermark(log.log_end_offset)
    assert answer(log, 0) == OffsetAnswer(0, 5_000, 1)
    assert answer(log, 5_000) == OffsetAnswer(0, 5_000, 1)
    assert answer(log, 5_001) == OffsetAnswer(3, 6_000, 3)
    assert answer(log, MAX_TIMESTAMP) == OffsetAnswer(3, 6_000, 3)
    assert answer(log, 6_001) == NOT_FOUND


def test_a_producer_log_append_time_batch_keeps_its_max_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path, index_interval_bytes=0)
    log.append(batch([100, 300, 200], log_append_time=True), leader_epoch=4)
    log.update_high_watermark(log.log_end_offset)
    assert answer(log, 150) == OffsetAnswer(0, 300, 4)
    assert answer(log, MAX_TIMESTAMP) == OffsetAnswer(0, 300, 4)


def test_an_empty_log(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert answer(log, EARLIEST_TIMESTAMP) == OffsetAnswer(0, -1, -1)
    assert answer(log, EARLIEST_LOCAL_TIMESTAMP) == OffsetAnswer(0, -1, -1)
    assert answer(log, LATEST_TIMESTAMP) == OffsetAnswer(0, -1, -1)
    assert answer(log, LATEST_TIERED_TIMESTAMP) == NOT_FOUND
    assert answer(log, MAX_TIMESTAMP) == NOT_FOUND
    assert answer(log, 0) == NOT_FOUND


def test_after_delete_records_answers_start_at_the_new_log_start(log: Log) -> None:
    assert log.delete_records(4) == 4
    assert answer(log, EARLIEST_TIMESTAMP) == OffsetAnswer(4, -1, 0)
    assert answer(log, 1_035) == OffsetAnswer(4, 1_040, 0)
    assert answer(log, 1_011) == OffsetAnswer(4, 1_040, 0)  # offset 3 (1_020) is gone
    assert log.delete_records(7) == 7
    assert answer(log, EARLIEST_TIMESTAMP) == OffsetAnswer(7, -1, 2)
    assert answer(log, EARLIEST_LOCAL_TIMESTAMP) == OffsetAnswer(7, -1, 2)
    assert answer(log, 1_041) == OffsetAnswer(7, 1_100, 2)


@pytest.mark.parametrize("roll_each_batch", [False, True], ids=["one_segment", "segment_per_batch"])
def test_a_timestamp_older_than_the_log_start_answers_from_it(
    tmp_path: Path, roll_each_batch: bool
) -> None:
    log = build_log(tmp_path, roll_each_batch=roll_each_batch)
    log.delete_records(4)
    assert answer(log, 0) == OffsetAnswer(4, 1_040, 0)
    log.delete_records(8)
    assert answer(log, 1_000) == OffsetAnswer(8, 1_100, 2)


def test_search_reads_past_a_batch_straddling_the_log_start(log: Log) -> None:
    # Offset 4 (1_040) is gone; the rest of its batch (offset 5, 1_030) is too old.
    log.delete_records(5)
    assert answer(log, 1_035) == OffsetAnswer(6, 1_050, 2)
    log.delete_records(8)
    # Offset 7 (1_100) is gone: offset 8, with the same timestamp, answers.
    assert answer(log, 1_100) == OffsetAnswer(8, 1_100, 2)


def test_max_timestamp_looks_at_batches_below_the_log_start_as_kafka_does(
    tmp_path: Path,
) -> None:
    log = build_log(tmp_path, roll_each_batch=True)
    log.delete_records(9)
    # The segment holding offsets 6-8 went; the max of what is left is offset 10.
    assert log.segment_base_offsets[0] == 9
    assert answer(log, MAX_TIMESTAMP) == OffsetAnswer(10, 1_070, 5)

    log = build_log(tmp_path / "one", roll_each_batch=False)
    log.delete_records(9)
    # Kafka scans the segments, not the offsets from the log start: offset 7 still answers.
    assert log.segment_base_offsets == [0]
    assert answer(log, MAX_TIMESTAMP) == OffsetAnswer(7, 1_100, 2)
    assert answer(log, EARLIEST_TIMESTAMP) == OffsetAnswer(9, -1, 5)
