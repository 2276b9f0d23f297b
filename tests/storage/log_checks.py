"""What a log must look like after a crash: exactly a prefix of what was appended to it.

Shared by the crash, power-cut and disk-error tests. `Appended` records each batch as the log
stored it (offsets and leader epoch stamped); `assert_valid_prefix` checks a (re)opened log
against that history through every public read path, and returns how many batches survived.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from net.record_batch import (
    iter_batches,
    read_header,
    set_base_offset,
    set_partition_leader_epoch,
    validate_batch,
)
from net.records import Record, decode_batch, encode_batch
from storage.errors import OffsetOutOfRangeError
from storage.leader_epoch_cache import LeaderEpochCache
from storage.log import Log
from tests.storage.helpers import read_values


@dataclass(frozen=True, slots=True)
class Appended:
    """One batch as the log stored it, and where."""

    base_offset: int
    next_offset: int
    epoch: int
    max_timestamp: int
    raw: bytes
    values: tuple[bytes, ...]
    file: Path
    position: int


@dataclass(frozen=True, slots=True)
class Planned:
    """One append to make: `records` values of `value_size` bytes, as leader of `epoch`."""

    records: int
    value_size: int
    timestamp: int
    epoch: int
    tag: int


def plan_appends(seed: int, count: int, epochs: Sequence[int]) -> list[Planned]:
    """`count` appends of varied sizes, timestamps that mostly grow but sometimes go back, and
    leader epochs taken in order from `epochs` (each used for a stretch of appends)."""
    chooser = random.Random(seed)
    stretch = max(1, count // len(epochs))
    plan = []
    timestamp = 1_000_000
    for tag in range(count):
        timestamp += chooser.randint(-300, 1_000)
        plan.append(
            Planned(
                records=chooser.randint(1, 6),
                value_size=chooser.randint(4, 90),
                timestamp=timestamp,
                epoch=epochs[min(tag // stretch, len(epochs) - 1)],
                tag=tag,
            )
        )
    return plan


def encode_planned(planned: Planned) -> bytes:
    """The batch a producer sends for `planned` (values name the append and the record)."""
    records = [
        Record(
            value=f"v{planned.tag}:{index}:".encode().ljust(planned.value_size, b"#"),
            key=f"k{index}".encode(),
            timestamp=planned.timestamp - 10 * index,
        )
        for index in range(planned.records)
    ]
    return encode_batch(records, now_ms=planned.timestamp)


def append_planned(log: Log, planned: Planned) -> None:
    info = log.append(encode_planned(planned), leader_epoch=planned.epoch)
    assert info.last_offset - info.first_offset + 1 == planned.records


def expected_history(plan: Sequence[Planned], base_offset: int = 0) -> list[Appended]:
    """The batches a leader log that took `plan` in order from `base_offset` holds (their
    place on disk is not known: `file` is empty, `position` -1)."""
    history = []
    for planned in plan:
        raw = bytearray(encode_planned(planned))
        set_base_offset(raw, 0, base_offset)
        set_partition_leader_epoch(raw, 0, planned.epoch)
        header = read_header(raw)
        _, records = decode_batch(raw)
        history.append(
            Appended(
                base_offset=base_offset,
                next_offset=header.next_offset,
                epoch=planned.epoch,
                max_timestamp=header.max_timestamp,
                raw=bytes(raw),
                values=tuple(record.value or b"" for record in records),
                file=Path(),
                position=-1,
            )
        )
        base_offset = header.next_offset
    return history


def stored_batches(log: Log) -> list[Appended]:
    """Every batch of `log` as it is on disk, decoded (its CRC checked on the way)."""
    stored = []
    for file_slice, header in log.batches():
        raw = file_slice.read()
        _, records = decode_batch(raw)
        stored.append(
            Appended(
                base_offset=header.base_offset,
                next_offset=header.next_offset,
                epoch=header.partition_leader_epoch,
                max_timestamp=header.max_timestamp,
                raw=raw,
                values=tuple(record.value or b"" for record in records),
                file=file_slice.file.path,
                position=file_slice.position,
            )
        )
    return stored


def expected_epochs(batches: Sequence[Appended]) -> list[tuple[int, int]]:
    """The leader-epoch cache entries a log holding exactly `batches` must have."""
    entries: list[tuple[int, int]] = []
    for batch in batches:
        if not entries or batch.epoch > entries[-1][0]:
            entries.append((batch.epoch, batch.base_offset))
    return entries


def assert_valid_prefix(
    log: Log, appended: Sequence[Appended], *, at_least: int = 0, timestamps: bool = True
) -> int:
    """`log` holds exactly the first k batches of `appended` (same bytes, offsets, epochs),
    with k such that they reach `at_least`; returns k. With `timestamps`, lookups by
    timestamp are checked too."""
    start = appended[0].base_offset if appended else 0
    end = log.log_end_offset
    assert log.log_start_offset == start
    assert end >= at_least, f"log end {end} lost offsets below {at_least}"
    boundaries = [start] + [batch.next_offset for batch in appended]
    assert end in boundaries, f"log end {end} is not the end of an appended batch"
    kept = boundaries.index(end)
    prefix = appended[:kept]

    # Batch by batch, as stored: same bytes (so same offsets, epochs, records), valid CRCs.
    stored = [(file_slice.read(), header) for file_slice, header in log.batches()]
    assert [raw for raw, _ in stored] == [batch.raw for batch in prefix]
    for raw, header in stored:
        assert validate_batch(raw) == header

    # Record by record, through `read`.
    assert read_values(log) == [value for batch in prefix for value in batch.values]

    # Raw reads from every offset return whole, valid batches that continue the history.
    for index, batch in enumerate(prefix):
        for offset in (batch.base_offset, batch.next_offset - 1):
            result = log.read(offset, 1 << 20)
            assert result.records is not None
            data = result.records.read()
            headers = [header for _, header in iter_batches(data)]
            assert headers, f"empty read at {offset}"
            following = b"".join(later.raw for later in prefix[index : index + len(headers)])
            assert data == following, f"read at {offset} does not match what was appended"
            one = log.read(offset, 1).records
            assert one is not None and one.read() == batch.raw
    assert log.read(end, 1 << 20).records is None
    with pytest.raises(OffsetOutOfRangeError):
        log.read(end + 1, 1 << 20)

    # The leader-epoch cache, in memory and in its checkpoint, describes the batches.
    epochs = expected_epochs(prefix)
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == epochs
    on_disk = LeaderEpochCache.load(log.directory)
    assert on_disk is not None
    assert [(e.epoch, e.start_offset) for e in on_disk.entries] == epochs
    if epochs:
        assert log.end_offset_for_epoch(epochs[-1][0]) == (epochs[-1][0], end)

    # Lookups by timestamp find the first batch whose max timestamp reaches the target.
    if not timestamps:
        return kept
    targets = sorted({batch.max_timestamp for batch in prefix})
    for target in [*targets[:: max(1, len(targets) // 12)], *targets[-2:]]:
        found = log.lookup_timestamp(target)
        first = next(batch for batch in prefix if batch.max_timestamp >= target)
        assert found is not None, f"no batch found for timestamp {target}"
        assert (found.offset, found.batch.read()) == (first.base_offset, first.raw)
    beyond = (targets[-1] + 1) if targets else 0
    assert log.lookup_timestamp(beyond) is None
    return kept


def assert_appends_continue(log: Log, planned: Planned) -> Appended:
    """A new append lands at the log end offset, under a newer epoch; returns it as stored."""
    end = log.log_end_offset
    latest = log.latest_epoch
    assert planned.epoch > (-1 if latest is None else latest)
    info = log.append(encode_planned(planned), leader_epoch=planned.epoch)
    assert info.first_offset == end
    stored = stored_batches(log)[-1]
    assert stored.base_offset == end and stored.epoch == planned.epoch
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries][-1] == (
        planned.epoch,
        end,
    )
    return stored


def log_files(directory: Path, suffix: str) -> list[Path]:
    return sorted(directory.glob(f"*{suffix}"))
