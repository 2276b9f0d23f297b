"""Random sequences of operations on a Log, checked after each step against a simple model.

The model knows batches, offsets, epochs and the high watermark; segment boundaries are the
log's own business, so the retention rules read the layout from the log and check which of its
segments the rules allow to go (never the active one, none reaching the high watermark).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from net.records import Record, encode_batch
from storage.log import Log, LogConfig
from tests.storage.helpers import read_values

CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=150, retention_ms=None)
RETENTION_MS = 1_000


@dataclass
class ModelBatch:
    base_offset: int
    values: list[bytes]
    # Each record's timestamp is its counter, so timestamps grow with offsets.
    max_timestamp: int

    @property
    def next_offset(self) -> int:
        return self.base_offset + len(self.values)


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="log-model-"))
        self.log = Log.open(self.directory, CONFIG)
        self.batches: list[ModelBatch] = []
        self.epochs: list[tuple[int, int]] = []
        self.log_start = 0
        self.high_watermark = 0
        self.epoch = 0
        self.counter = 0

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def log_end(self) -> int:
        return self.batches[-1].next_offset if self.batches else self.log_start

    @rule(count=st.integers(1, 6), size=st.integers(1, 120), bump=st.booleans())
    def append(self, count: int, size: int, bump: bool) -> None:
        if bump:
            self.epoch += 1
        values = []
        for _ in range(count):
            self.counter += 1
            values.append(str(self.counter).encode().ljust(size, b"-"))
        batch = encode_batch([Record(value=value, timestamp=self.counter) for value in values])
        info = self.log.append(batch, leader_epoch=self.epoch)
        assert info.first_offset == self.log_end
        if not self.epochs or self.epochs[-1][0] < self.epoch:
            # An older epoch recorded at this same offset never wrote a batch: it is replaced.
            self.epochs = [entry for entry in self.epochs if entry[1] < self.log_end]
            self.epochs.append((self.epoch, self.log_end))
        self.batches.append(ModelBatch(self.log_end, values, self.counter))

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(data=st.data())
    def raise_high_watermark(self, data: st.DataObject) -> None:
        self.high_watermark = data.draw(st.integers(self.high_watermark, self.log_end))
        self.log.update_high_watermark(self.high_watermark)

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.log_start, self.log_end))
        self.log.truncate_to(offset)
        while self.batches and self.batches[-1].next_offset > offset:
            self.batches.pop()
        if self.batches and self.batches[-1].next_offset < self.log_start:
            self.batches = []
        end = self.log_end
        self.epochs = [entry for entry in self.epochs if entry[1] < end]
        self.high_watermark = min(self.high_watermark, end)

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.log_start, self.high_watermark))
        self.log.delete_records(offset)
        if offset > self.log_start:
            self.log_start = offset
            self.batches = [batch for batch in self.batches if batch.next_offset > offset]
            spanning = [entry for entry in self.epochs if entry[1] <= offset]
            later = [entry for entry in self.epochs if entry[1] > offset]
            self.epochs = ([(spanning[-1][0], offset)] if spanning else []) + later

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def truncate_fully(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.log_start, self.log_end + 5))
        self.log.truncate_fully_and_start_at(offset)
        self.batches = []
        self.epochs = []
        self.log_start = self.high_watermark = offset

    @rule(by_time=st.booleans(), retention_bytes=st.integers(0, 3000), data=st.data())
    def retention(self, by_time: bool, retention_bytes: int, data: st.DataObject) -> None:
        # Retention runs on committed data: what the high watermark has passed.
        self.raise_high_watermark(data)
        # By time: segments whose newest record is older than `cutoff` have expired.
        cutoff = data.draw(st.integers(0, self.counter + 1))
        layout = self.segment_layout()
        # Segments wholly below the log start go first, whatever their age or size (Kafka).
        expected = 0
        while expected + 1 < len(layout) and layout[expected + 1][0] <= self.log_start:
            expected += 1
        excess = sum(size for _, size, _ in layout[expected:]) - retention_bytes
        while expected + 1 < len(layout) and layout[expected + 1][0] <= self.high_watermark:
            _, size, max_timestamp = layout[expected]
            if not (max_timestamp < cutoff if by_time else excess >= size):
                break
            excess -= size
            expected += 1
        self.log.config = LogConfig(
            segment_bytes=CONFIG.segment_bytes,
            index_interval_bytes=CONFIG.index_interval_bytes,
            retention_ms=RETENTION_MS if by_time else None,
            retention_bytes=None if by_time else retention_bytes,
        )
        assert self.log.enforce_retention(now_ms=cutoff + RETENTION_MS) == expected
        self.log.config = CONFIG
        if expected:
            start = max(self.log_start, layout[expected][0])
            self.log_start = start
            self.batches = [batch for batch in self.batches if batch.base_offset >= start]
            spanning = [entry for entry in self.epochs if entry[1] <= start]
            later = [entry for entry in self.epochs if entry[1] > start]
            self.epochs = ([(spanning[-1][0], start)] if spanning else []) + later

    def segment_layout(self) -> list[tuple[int, int, int]]:
        """Each segment's base offset and size (from the log) and newest record's timestamp
        (from the model: the timestamp of the last batch below the next segment)."""
        bases = self.log.segment_base_offsets
        layout = []
        for index, segment in enumerate(self.log.segments):
            end = bases[index + 1] if index + 1 < len(bases) else self.log_end
            held = [batch.max_timestamp for batch in self.batches if batch.next_offset <= end]
            layout.append((bases[index], segment.size, held[-1] if held else -1))
        return layout

    @rule(clean=st.booleans())
    def reopen(self, clean: bool) -> None:
        if clean:
            self.log.flush()
        recovery_point = self.log.recovery_point
        self.log.close()
        self.log = Log.open(
            self.directory,
            CONFIG,
            log_start_offset=self.log_start,
            recovery_point=recovery_point,
            high_watermark=self.high_watermark,
            clean_shutdown=clean,
        )
        # As Kafka's truncateFromEnd at load: an epoch with no batch at or after its start goes.
        self.epochs = [entry for entry in self.epochs if entry[1] < self.log_end]

    @invariant()
    def offsets_match(self) -> None:
        assert self.log.log_start_offset == self.log_start
        assert self.log.log_end_offset == self.log_end
        assert self.log.high_watermark == self.high_watermark

    @invariant()
    def epochs_match(self) -> None:
        # An entry starting at the log end offset describes no batch, and Kafka's rules keep
        # or drop it depending on history (truncation drops it, recovery may re-derive it).
        end = self.log_end
        entries = [
            (entry.epoch, entry.start_offset)
            for entry in self.log.leader_epoch_cache.entries
            if entry.start_offset < end
        ]
        assert entries == [entry for entry in self.epochs if entry[1] < end]
        if self.epochs and self.epochs[-1][1] < end:
            assert self.log.end_offset_for_epoch(self.epochs[-1][0]) == (self.epochs[-1][0], end)

    @invariant()
    def reads_match(self) -> None:
        expected = [
            value
            for batch in self.batches
            for index, value in enumerate(batch.values)
            if batch.base_offset + index >= self.log_start
        ]
        assert read_values(self.log) == expected
        if self.batches:
            middle = self.batches[len(self.batches) // 2]
            from_middle = read_values(self.log, max(middle.base_offset, self.log_start))
            assert from_middle == expected[len(expected) - len(from_middle) :]
            # From inside a batch, and from each of the last batches' last offsets (what a
            # consumer at the end of the log asks for).
            for batch in [middle, *self.batches[-3:]]:
                for offset in (batch.base_offset + len(batch.values) // 2, batch.next_offset - 1):
                    if offset >= self.log_start:
                        assert (
                            read_values(self.log, offset)
                            == expected[len(expected) - (self.log_end - offset) :]
                        )


LogMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLogModel = LogMachine.TestCase
