"""Log compaction: what a clean keeps and drops, incrementality, and crash safety of the swap."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from net.record_batch import Compression, iter_batches
from net.records import Record, decode_batch, encode_batch
from storage import durability
from storage.cleaner import CleanStats, LogClean, clean, compaction_lag_passed, dirty_ratio
from storage.cleaner_checkpoint import CHECKPOINT_NAME, read_first_dirty_offset
from storage.log import Log, LogConfig
from storage.segment import CLEANED_SUFFIX, SWAP_SUFFIX

CONFIG = LogConfig(segment_bytes=100_000, index_interval_bytes=100, retention_ms=None)
DAY_MS = 24 * 3600 * 1000
# The clock the cleaner judges by, well after the records' timestamps (1_000 on).
NOW = 2_000

Entry = tuple[int, bytes | None, bytes | None]


def batch(
    *pairs: tuple[str | None, str | None],
    timestamp: int = 1_000,
    compression: Compression = Compression.NONE,
    producer_id: int = -1,
) -> bytes:
    records = [
        Record(
            key=None if key is None else key.encode(),
            value=None if value is None else value.encode(),
            timestamp=timestamp + index,
        )
        for index, (key, value) in enumerate(pairs)
    ]
    return encode_batch(
        records,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        now_ms=timestamp,
    )


def entries(log: Log) -> list[Entry]:
    """Every record of the log: offset, key, value."""
    found: list[Entry] = []
    for records_slice, _ in log.batches():
        _, records = decode_batch(records_slice.read())
        found.extend((record.offset or 0, record.key, record.value) for record in records)
    return found


def assert_reads_agree(log: Log) -> None:
    """Fetching from every offset, as a consumer does (on past batches without records), gets
    the first record at or after it."""
    stored = entries(log)
    for offset in range(log.log_start_offset, log.log_end_offset):
        expected = next((entry for entry in stored if entry[0] >= offset), None)
        assert first_record_read(log, offset) == expected, offset


def first_record_read(log: Log, offset: int) -> Entry | None:
    position = offset
    while position < log.log_end_offset:
        result = log.read(position, 1 << 20)
        assert result.records is not None, position
        data = result.records.read()
        for batch_position, header in iter_batches(data):
            _, records = decode_batch(data, batch_position)
            for record in records:
                if (record.offset or 0) >= offset:
                    return record.offset or 0, record.key, record.value
            position = header.next_offset
    return None


def append_segments(log: Log, segments: Sequence[Sequence[bytes]], epoch: int = 0) -> None:
    """Append each group of batches, rolling after each: one sealed segment per group."""
    for batches in segments:
        for data in batches:
            log.append(data, leader_epoch=epoch)
        log.roll()


def latest_only(stored: list[Entry], end: int) -> list[Entry]:
    """What compaction should leave of `stored` below `end`: each key's latest record."""
    latest = {key: offset for offset, key, _ in stored if offset < end and key is not None}
    return [
        entry
        for entry in stored
        if entry[0] >= end or (entry[1] is not None and latest[entry[1]] == entry[0])
    ]


def open_log(directory: Path, config: LogConfig = CONFIG) -> Log:
    return Log.open(directory, config)


def test_overwritten_keys_keep_only_their_latest_value(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append_segments(
        log,
        [
            [batch(("a", f"a{round}"), ("b", f"b{round}")) for round in range(5)],
            [batch(("a", f"a{round}"), ("c", f"c{round}")) for round in range(5, 9)],
        ],
    )
    log.append(batch(("a", "active")), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    before = entries(log)
    log_end = log.log_end_offset

    stats = clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)

    assert entries(log) == [
        (9, b"b", b"b4"),
        (16, b"a", b"a8"),
        (17, b"c", b"c8"),
        (18, b"a", b"active"),
    ]
    assert entries(log) == latest_only(before, stats.end_offset)
    assert stats.end_offset == 18
    assert stats.records_removed == 15
    assert log.log_end_offset == log_end
    assert_reads_agree(log)
    log.close()
    reopened = Log.open(tmp_path, CONFIG, high_watermark=log_end)
    assert entries(reopened) == latest_only(before, 18)
    assert_reads_agree(reopened)


def test_records_without_a_key_are_dropped_as_kafka_does(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append_segments(log, [[batch((None, "x"), ("a", "1"), (None, "y"))]])
    log.update_high_watermark(log.log_end_offset)
    clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    assert entries(log) == [(1, b"a", b"1")]
    # The batch keeps its whole offset range: the next segment still starts where it ends.
    assert [header.last_offset for _, header in log.batches()] == [2]


def test_active_segment_and_offsets_above_the_high_watermark_are_untouched(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    append_segments(log, [[batch(("a", "1"))], [batch(("a", "2"))], [batch(("a", "3"))]])
    log.append(batch(("a", "4")), leader_epoch=0)
    # The third segment (offset 2) reaches the high watermark: it may still be truncated.
    log.update_high_watermark(2)
    stats = clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    assert stats.end_offset == 2
    assert entries(log) == [(1, b"a", b"2"), (2, b"a", b"3"), (3, b"a", b"4")]
    assert read_first_dirty_offset(tmp_path) == 2

    log.update_high_watermark(log.log_end_offset)
    clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    # Only the active segment's record is left beside the latest sealed one.
    assert entries(log) == [(2, b"a", b"3"), (3, b"a", b"4")]


def test_tombstones_are_kept_until_delete_retention_has_passed_since_their_clean(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    append_segments(log, [[batch(("a", "1"), ("b", "1"))], [batch(("a", None))]])
    log.append(batch(("b", "2")), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)

    stats = clean(log, now_ms=10_000, delete_retention_ms=500)
    assert entries(log) == [(1, b"b", b"1"), (2, b"a", None), (3, b"b", b"2")]
    tombstone_batch = next(header for _, header in log.batches() if header.base_offset == 2)
    assert tombstone_batch.has_delete_horizon
    assert tombstone_batch.base_timestamp == 10_500
    assert stats.next_delete_horizon_ms == 10_500

    # Nothing dirty and the horizon not reached: nothing to do.
    stats = clean(log, now_ms=10_499, delete_retention_ms=500)
    assert stats.segments_written == 0
    assert stats.next_delete_horizon_ms == 10_500
    assert entries(log) == [(1, b"b", b"1"), (2, b"a", None), (3, b"b", b"2")]

    stats = clean(log, now_ms=10_500, delete_retention_ms=500)
    assert stats.records_removed == 1
    assert stats.next_delete_horizon_ms is None
    assert entries(log) == [(1, b"b", b"1"), (3, b"b", b"2")]
    # The tombstone's batch was the last of the cleaned range: it stays, without records.
    assert [(header.base_offset, header.record_count) for _, header in log.batches()] == [
        (0, 1),
        (2, 0),
        (3, 1),
    ]
    assert_reads_agree(log)


def test_offsets_epochs_and_the_leader_epoch_cache_are_unchanged(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for epoch in range(4):
        append_segments(log, [[batch(("a", str(epoch)), ("b", str(epoch)))]], epoch=epoch)
    log.append(batch(("c", "x")), leader_epoch=5)
    log.update_high_watermark(log.log_end_offset)
    cache = log.leader_epoch_cache.entries
    log_end = log.log_end_offset

    clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)

    headers = [header for _, header in log.batches()]
    assert [(h.base_offset, h.last_offset, h.partition_leader_epoch) for h in headers] == [
        (6, 7, 3),
        (8, 8, 5),
    ]
    assert log.leader_epoch_cache.entries == cache
    assert log.log_end_offset == log_end
    log.close()
    reopened = Log.open(tmp_path, CONFIG, high_watermark=log_end)
    assert reopened.leader_epoch_cache.entries == cache
    assert reopened.log_end_offset == log_end


def test_last_batch_of_an_active_producer_stays_empty(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append_segments(log, [[batch(("a", "1"), producer_id=7), batch(("a", "2")), batch(("b", "3"))]])
    log.update_high_watermark(log.log_end_offset)
    clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    kept = [(h.base_offset, h.record_count, h.producer_id) for _, h in log.batches()]
    assert kept == [(0, 0, 7), (1, 1, -1), (2, 1, -1)]

    # At the next clean, a producer the broker no longer tracks loses its empty batch.
    append_segments(log, [[batch(("c", "4"))]])
    log.update_high_watermark(log.log_end_offset)
    clean(log, now_ms=2_000, delete_retention_ms=DAY_MS, active_producers={})
    kept = [(h.base_offset, h.record_count, h.producer_id) for _, h in log.batches()]
    assert kept == [(1, 1, -1), (2, 1, -1), (3, 1, -1)]


@pytest.mark.parametrize(
    "codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
)
def test_compressed_batches_are_filtered_and_keep_their_codec(
    tmp_path: Path, codec: Compression
) -> None:
    log = open_log(tmp_path)
    append_segments(
        log,
        [
            [batch(("a", "1"), ("b", "1"), ("c", "1"), compression=codec)],
            [batch(("b", "2"), ("d", "2"), compression=codec)],
        ],
    )
    log.update_high_watermark(log.log_end_offset)
    clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    assert entries(log) == [(0, b"a", b"1"), (2, b"c", b"1"), (3, b"b", b"2"), (4, b"d", b"2")]
    headers = [header for _, header in log.batches()]
    assert [header.compression for header in headers] == [codec, codec]
    assert [(header.base_offset, header.last_offset) for header in headers] == [(0, 2), (3, 4)]
    # Record timestamps survive the rewrite.
    first = next(log.batches())[0].read()
    assert [record.timestamp for record in decode_batch(first)[1]] == [1_000, 1_002]


def test_small_segments_are_grouped_into_segments_that_fit_segment_bytes(
    tmp_path: Path,
) -> None:
    config = LogConfig(segment_bytes=700, index_interval_bytes=100, retention_ms=None)
    log = open_log(tmp_path, config)
    append_segments(log, [[batch((f"k{index % 3}", "v" * 40))] for index in range(12)])
    log.update_high_watermark(log.log_end_offset)
    sizes = [segment.size for segment in log.segments[:-1]]
    assert len(sizes) == 12

    stats = clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)

    assert stats.segments_replaced == 12
    assert stats.segments_written == len(log.segments) - 1 < 12
    assert all(segment.size <= config.segment_bytes for segment in log.segments)
    assert entries(log) == [(9, b"k0", b"v" * 40), (10, b"k1", b"v" * 40), (11, b"k2", b"v" * 40)]
    assert_reads_agree(log)


def test_a_second_clean_maps_only_the_dirty_part(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append_segments(log, [[batch(("a", "1"), ("b", "1"))], [batch(("a", "2"))]])
    log.update_high_watermark(log.log_end_offset)
    first = clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    assert (first.first_dirty_offset, first.end_offset) == (0, 3)
    assert (first.dirty_segments_read, first.keys_mapped) == (2, 2)
    assert (tmp_path / CHECKPOINT_NAME).exists()
    assert read_first_dirty_offset(tmp_path) == 3

    append_segments(log, [[batch(("b", "2"))], [batch(("c", "3"))]])
    log.update_high_watermark(log.log_end_offset)
    second = clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    assert (second.first_dirty_offset, second.end_offset) == (3, 5)
    assert (second.dirty_segments_read, second.keys_mapped) == (2, 2)
    assert entries(log) == [(2, b"a", b"2"), (3, b"b", b"2"), (4, b"c", b"3")]

    # Nothing new: nothing is read or rewritten.
    third = clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    assert (third.dirty_segments_read, third.segments_written) == (0, 0)


def test_truncation_below_the_checkpoint_makes_new_appends_dirty(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append_segments(log, [[batch(("a", "1"))], [batch(("a", "2"))], [batch(("b", "1"))]])
    log.update_high_watermark(log.log_end_offset)
    clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    assert read_first_dirty_offset(tmp_path) == 3
    log.truncate_to(2)
    assert read_first_dirty_offset(tmp_path) == 2


# -- a clean in steps, with the log changing between them ---------------------------------


def three_sealed_segments(directory: Path) -> Log:
    log = open_log(directory)
    append_segments(log, [[batch(("a", "1"))], [batch(("a", "2"))], [batch(("b", "1"))]])
    log.update_high_watermark(log.log_end_offset)
    return log


def test_a_clean_in_steps_does_what_clean_does(tmp_path: Path) -> None:
    log = three_sealed_segments(tmp_path)
    log_clean = LogClean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    groups = log_clean.prepare()
    assert [[segment.base_offset for segment in group] for group in groups] == [[0, 1, 2]]
    cleaned = log_clean.write(groups[0])
    assert cleaned.path is not None and cleaned.path.exists()
    assert log_clean.swap(cleaned)
    stats = log_clean.finish()
    assert (stats.segments_written, stats.records_removed) == (1, 1)
    assert entries(log) == [(1, b"a", b"2"), (2, b"b", b"1")]
    assert read_first_dirty_offset(tmp_path) == 3


def test_a_truncation_during_a_clean_voids_it(tmp_path: Path) -> None:
    log = three_sealed_segments(tmp_path)
    log_clean = LogClean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    cleaned = log_clean.write(log_clean.prepare()[0])
    # A follower truncates and re-appends: the same offsets now hold other records.
    log.truncate_to(1)
    append_segments(log, [[batch(("a", "other"))], [batch(("c", "1"))]])
    log.update_high_watermark(log.log_end_offset)

    assert not log_clean.swap(cleaned)
    stats = log_clean.finish()
    assert cleaned.path is not None and not cleaned.path.exists()
    assert stats.segments_written == 0
    assert entries(log) == [(0, b"a", b"1"), (1, b"a", b"other"), (2, b"c", b"1")]
    assert read_first_dirty_offset(tmp_path) is None


def test_segments_deleted_during_a_clean_void_it(tmp_path: Path) -> None:
    log = three_sealed_segments(tmp_path)
    log_clean = LogClean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    cleaned = log_clean.write(log_clean.prepare()[0])
    log.delete_records(1)

    assert not log_clean.swap(cleaned)
    log_clean.finish()
    assert entries(log) == [(1, b"a", b"2"), (2, b"b", b"1")]
    assert [segment.base_offset for segment in log.segments] == [1, 2, 3]
    assert read_first_dirty_offset(tmp_path) is None
    assert_reads_agree(log)


def test_segments_deleted_before_their_cleaned_copy_is_written_void_the_clean(
    tmp_path: Path,
) -> None:
    log = three_sealed_segments(tmp_path)
    log_clean = LogClean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    (group,) = log_clean.prepare()
    log.delete_records(1)
    cleaned = log_clean.write(group)
    assert cleaned.path is None
    assert not list(tmp_path.glob("*.cleaned"))
    assert not log_clean.swap(cleaned)
    log_clean.finish()
    assert entries(log) == [(1, b"a", b"2"), (2, b"b", b"1")]
    assert read_first_dirty_offset(tmp_path) is None


def test_dirty_ratio_is_the_dirty_share_of_the_cleanable_bytes(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert dirty_ratio(log, NOW) == 0.0
    append_segments(log, [[batch(("a", "1"))], [batch(("a", "2"))]])
    assert dirty_ratio(log, NOW) == 0.0  # above the high watermark: not cleanable yet
    log.update_high_watermark(log.log_end_offset)
    assert dirty_ratio(log, NOW) == 1.0
    clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    assert dirty_ratio(log, NOW) == 0.0
    append_segments(log, [[batch(("b", "1"))]])
    log.update_high_watermark(log.log_end_offset)
    sizes = [segment.size for segment in log.segments[:-1]]
    assert dirty_ratio(log, NOW) == pytest.approx(sizes[-1] / sum(sizes))


def test_retention_leaves_a_compact_only_log_alone(tmp_path: Path) -> None:
    compact = LogConfig(
        segment_bytes=100_000, retention_ms=1, cleanup_policy=frozenset({"compact"})
    )
    log = open_log(tmp_path, compact)
    append_segments(log, [[batch(("a", "1"))], [batch(("a", "2"))]])
    log.update_high_watermark(log.log_end_offset)
    assert log.enforce_retention(now_ms=10 * DAY_MS) == 0
    log.config = dataclasses.replace(compact, cleanup_policy=frozenset({"compact", "delete"}))
    assert log.enforce_retention(now_ms=10 * DAY_MS) == 2


# -- crash safety ---------------------------------------------------------------------------


class SimulatedCrash(BaseException):
    """The process dies here: nothing after it runs, not even cleanup handlers."""


def build_template(directory: Path) -> Log:
    """A log of four sealed segments with overwritten keys, a tombstone and an active
    segment, flushed, with its high watermark at its end."""
    log = open_log(directory)
    append_segments(
        log,
        [
            [batch(("a", "1"), ("b", "1")), batch(("c", "1"))],
            [batch(("a", "2"), compression=Compression.ZSTD)],
            [batch(("b", None), ("d", "1"))],
            [batch(("c", "2"))],
        ],
    )
    log.append(batch(("a", "3")), leader_epoch=0)
    log.flush()
    log.update_high_watermark(log.log_end_offset)
    return log


@contextmanager
def crash_after(
    monkeypatch: pytest.MonkeyPatch, targets: Sequence[tuple[object, str]], count: int
) -> Iterator[list[int]]:
    """Count calls to `targets`; the `count`-th raises SimulatedCrash once it has run."""
    calls = [0]

    def wrap(function: Callable[..., object]) -> Callable[..., object]:
        def crashing(*args: object, **kwargs: object) -> object:
            result = function(*args, **kwargs)
            calls[0] += 1
            if calls[0] == count:
                raise SimulatedCrash
            return result

        return crashing

    with monkeypatch.context() as patch:
        for owner, name in targets:
            patch.setattr(owner, name, wrap(getattr(owner, name)))
        yield calls


FILE_OPERATIONS = [(os, "replace"), (os, "unlink"), (os, "fsync"), (os, "fdatasync")]
# Every durable step the storage layer records: a crash then a power cut after each.
JOURNAL_STEPS = [(durability, "_record")]


def expected_states(tmp_path: Path) -> tuple[list[Entry], list[Entry]]:
    log = build_template(tmp_path / "reference")
    old = entries(log)
    clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
    cleaned = entries(log)
    assert cleaned != old
    log.close()
    return old, cleaned


@pytest.mark.parametrize("power_cut", [False, True], ids=["crash", "crash-and-power-cut"])
def test_a_crash_at_any_step_of_a_clean_leaves_the_old_or_the_cleaned_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, power_cut: bool
) -> None:
    old, cleaned = expected_states(tmp_path)
    outcomes = set()
    for step in range(1, 200):
        directory = tmp_path / f"crash-{step}"
        journal = tmp_path / f"journal-{step}"
        durability.enable_journal(journal)
        try:
            log = build_template(directory)
            log_end = log.log_end_offset
            targets = JOURNAL_STEPS if power_cut else FILE_OPERATIONS
            with crash_after(monkeypatch, targets, step) as calls:
                try:
                    clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
                    crashed = False
                except SimulatedCrash:
                    crashed = True
        finally:
            durability.disable_journal()
        del log
        if power_cut:
            durability.power_cut(journal, directory)

        reopened = Log.open(directory, CONFIG, recovery_point=0, high_watermark=log_end)
        stored = entries(reopened)
        assert stored in (old, cleaned), step
        outcomes.add("cleaned" if stored == cleaned else "old")
        assert not [
            path for path in directory.iterdir() if path.suffix in (CLEANED_SUFFIX, SWAP_SUFFIX)
        ]
        assert reopened.log_end_offset == log_end
        assert_reads_agree(reopened)
        # A clean after the restart finishes the job.
        clean(reopened, now_ms=2_000, delete_retention_ms=DAY_MS)
        assert entries(reopened) == cleaned
        reopened.close()
        if not crashed:
            assert calls[0] < step
            break
    else:
        pytest.fail("the clean never completed")
    assert outcomes == {"old", "cleaned"}


def test_leftover_cleaned_and_swap_files_are_rolled_back_or_finished(tmp_path: Path) -> None:
    old, cleaned = expected_states(tmp_path)
    reference = tmp_path / "reference"
    cleaned_file = reference / "00000000000000000000.log"

    # A cleaned file cut short by the crash: the swap never began.
    directory = tmp_path / "cut-cleaned"
    build_template(directory).close()
    (directory / ("00000000000000000000.log" + CLEANED_SUFFIX)).write_bytes(
        cleaned_file.read_bytes()[:50]
    )
    log = Log.open(directory, CONFIG, recovery_point=0)
    assert entries(log) == old
    log.close()

    # A committed swap file beside all the old segments: the swap is finished.
    directory = tmp_path / "swap"
    build_template(directory).close()
    (directory / ("00000000000000000000.log" + SWAP_SUFFIX)).write_bytes(cleaned_file.read_bytes())
    log = Log.open(directory, CONFIG, recovery_point=0)
    assert entries(log) == cleaned
    assert len(log.segments) == 2
    assert_reads_agree(log)


# -- property ---------------------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "c", "d", "e"])
VALUES = st.one_of(st.none(), st.text("xyz", min_size=1, max_size=3))
BATCHES = st.lists(st.tuples(KEYS, VALUES), min_size=1, max_size=4)
SEGMENTS = st.lists(st.lists(BATCHES, min_size=1, max_size=3), min_size=1, max_size=5)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    phases=st.lists(SEGMENTS, min_size=1, max_size=3),
    codec=st.sampled_from([Compression.NONE, Compression.LZ4]),
)
def test_cleaning_keeps_exactly_the_latest_record_of_each_key(
    tmp_path_factory: pytest.TempPathFactory,
    phases: list[list[list[list[tuple[str, str | None]]]]],
    codec: Compression,
) -> None:
    config = LogConfig(segment_bytes=400, index_interval_bytes=60, retention_ms=None)
    log = open_log(tmp_path_factory.mktemp("cleaner-property"), config)
    appended: list[Entry] = []
    stats: CleanStats | None = None
    for phase in phases:
        for segment in phase:
            for pairs in segment:
                info = log.append(batch(*pairs, compression=codec), leader_epoch=0)
                appended.extend(
                    (info.first_offset + index, key.encode(), None if v is None else v.encode())
                    for index, (key, v) in enumerate(pairs)
                )
            log.roll()
        log.update_high_watermark(log.log_end_offset)
        stats = clean(log, now_ms=2_000, delete_retention_ms=DAY_MS)
        stored = entries(log)
        # Nothing is invented or altered: every record is one that was appended.
        assert set(stored) <= set(appended)
        # Every key's latest record is there; below the cleaned end, nothing older is.
        latest = {key: offset for offset, key, _ in appended}
        assert {entry for entry in appended if latest[entry[1]] == entry[0]} <= set(stored)
        assert stored == latest_only(appended, stats.end_offset)
        assert_reads_agree(log)
    log.close()


def test_min_compaction_lag_keeps_recent_records_uncompacted(tmp_path: Path) -> None:
    config = dataclasses.replace(CONFIG, min_compaction_lag_ms=5_000)
    log = open_log(tmp_path, config)
    # Two sealed segments: the first old enough at 10_000, the second (timestamps 8_000 on) not.
    append_segments(
        log,
        [[batch(("a", "1"), timestamp=1_000)], [batch(("a", "2"), timestamp=8_000)]],
    )
    log.update_high_watermark(log.log_end_offset)
    assert dirty_ratio(log, 10_000) == 1.0  # only the old segment is cleanable
    clean(log, now_ms=10_000, delete_retention_ms=DAY_MS)
    assert entries(log) == [(0, b"a", b"1"), (1, b"a", b"2")]
    # Once the lag has passed for the second segment too, the older value goes.
    clean(log, now_ms=13_001, delete_retention_ms=DAY_MS)
    assert entries(log) == [(1, b"a", b"2")]


def test_max_compaction_lag_makes_a_log_due_whatever_its_dirty_ratio(tmp_path: Path) -> None:
    log = open_log(tmp_path, dataclasses.replace(CONFIG, max_compaction_lag_ms=3_000))
    assert not compaction_lag_passed(log, 10_000)  # nothing dirty
    append_segments(log, [[batch(("a", "1"), timestamp=1_000)]])
    log.update_high_watermark(log.log_end_offset)
    assert not compaction_lag_passed(log, 4_000)
    assert compaction_lag_passed(log, 4_001)
    clean(log, now_ms=4_001, delete_retention_ms=DAY_MS)
    assert not compaction_lag_passed(log, 20_000)  # cleaned: nothing dirty left
    assert not compaction_lag_passed(open_log(tmp_path / "unbounded"), 20_000)
