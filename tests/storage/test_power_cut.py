"""Lossy crashes, simulated honestly: a real writer process is SIGKILLed, then every file it
wrote is cut back to the length its journal says was fsynced (`durability.power_cut`), as a
power failure that drops the page cache would leave it.

The writer (`power_cut_writer.py`) reports the recovery point after each fsync. After the cut
and an unclean reopen, every offset it reported durable must be there with its exact content,
and the log must be a valid prefix of what it appended. The journal replay itself
(`durable_lengths`) and the cut (`power_cut`) are tested on their own too.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from storage import durability
from storage.atomic_file import remove_durably, write_atomically
from storage.durability import durable_lengths, power_cut
from storage.log import Log, LogConfig
from storage.log_manager import LogManager
from tests.storage.log_checks import (
    assert_valid_prefix,
    expected_history,
    log_files,
    plan_appends,
    stored_batches,
)
from tests.storage.power_cut_writer import MODES, PARTITION, PLAN, config_for

REPO = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("power_cut_writer.py")
HISTORY = expected_history(PLAN)
READ_TIMEOUT_S = 30.0


class Writer:
    """The writer process and the protocol lines it printed so far."""

    def __init__(self, process: subprocess.Popen[bytes], stderr: Path) -> None:
        self.process = process
        self.stderr = stderr
        self.appended: list[tuple[int, int, int]] = []
        self.durable = 0
        self.phase_two = False
        self._pending = b""

    def read_until(self, done: str, deadline: float) -> None:
        """Read lines until `done` holds: "durable:<n>" (n D lines seen) or "phase2:<n>" (n
        appends seen after P2)."""
        kind, count = done.split(":")
        durable_lines = 0
        appended_after = 0
        while True:
            if kind == "durable" and durable_lines >= int(count):
                return
            if kind == "phase2" and appended_after >= int(count):
                return
            line = self._next_line(deadline)
            word, *fields = line.split()
            if word == "A":
                tag, first, last = (int(field) for field in fields)
                self.appended.append((tag, first, last))
                appended_after += self.phase_two
            elif word == "D":
                assert int(fields[0]) >= self.durable
                self.durable = int(fields[0])
                durable_lines += 1
            elif word == "P2":
                self.phase_two = True

    def _next_line(self, deadline: float) -> str:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"writer said nothing in time; stderr:\n{self._stderr_tail()}")
            # poll, not select: the test process may hold descriptors above FD_SETSIZE.
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if poller.poll(remaining * 1000):
                chunk = os.read(fd, 65536)
                if not chunk:
                    pytest.fail(f"writer exited early; stderr:\n{self._stderr_tail()}")
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode()

    def _stderr_tail(self) -> str:
        return self.stderr.read_text(errors="replace")[-3000:]

    def kill(self) -> None:
        """SIGKILL by pid: no handler, no flush, no clean shutdown."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


@contextmanager
def writer_process(data_dir: Path, journal: Path, mode: str, scratch: Path) -> Iterator[Writer]:
    stderr_path = scratch / f"writer-{mode}.stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(WRITER), str(data_dir), str(journal), mode],
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    writer = Writer(process, stderr_path)
    try:
        yield writer
    finally:
        writer.kill()
        if writer.process.stdout is not None:
            writer.process.stdout.close()


def total_size(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("when", ["after_a_report", "while_flushing", "after_flushing_stopped"])
@pytest.mark.parametrize("mode", MODES)
def test_sigkill_then_power_cut_keeps_every_offset_reported_durable(
    tmp_path: Path, mode: str, when: str
) -> None:
    data_dir = tmp_path / "data"
    journal = tmp_path / "durability.journal"
    deadline = time.monotonic() + READ_TIMEOUT_S
    with writer_process(data_dir, journal, mode, tmp_path) as writer:
        if when == "after_a_report":
            writer.read_until("durable:4", deadline)
        elif when == "while_flushing":
            # Let it run on for a moment (it is mid-way through its flushing phase then), so
            # the kill lands wherever it is: maybe inside an append or an fsync.
            writer.read_until("durable:2", deadline)
            time.sleep(0.015)
        else:
            writer.read_until("phase2:25", deadline)
        writer.kill()
    assert writer.durable > 0
    # What the writer said it appended is what the plan says, offset for offset.
    for tag, first, last in writer.appended:
        assert (first, last + 1) == (HISTORY[tag].base_offset, HISTORY[tag].next_offset)

    before = total_size(data_dir)
    power_cut(journal, data_dir)
    assert total_size(data_dir) <= before

    manager = LogManager.open([data_dir], config_for(mode))
    try:
        assert not manager.clean_shutdown
        assert manager.broker_epoch_at_start is None
        log = manager.get_log(PARTITION)
        assert log is not None
        kept = assert_valid_prefix(log, HISTORY, at_least=writer.durable)
        if when == "after_flushing_stopped":
            # Nothing was fsynced after the last report, and all of it was lost: the log ends
            # exactly at the last durable offset, and the cut removed real data.
            assert log.log_end_offset == writer.durable
            assert writer.appended[-1][2] + 1 > writer.durable
            assert total_size(data_dir) < before
        # The survivor takes the next planned append at its log end, and keeps it.
        assert kept < len(HISTORY)
        info = log.append(HISTORY[kept].raw, leader_epoch=PLAN[kept].epoch)
        assert info.first_offset == HISTORY[kept].base_offset
    finally:
        manager.close()
    manager = LogManager.open([data_dir], config_for(mode))
    try:
        log = manager.get_log(PARTITION)
        assert log is not None
        assert assert_valid_prefix(log, HISTORY) == kept + 1
    finally:
        manager.close()


# -- power_cut on files written in this process -----------------------------------------------


@contextmanager
def journal_enabled(journal: Path) -> Iterator[None]:
    durability.enable_journal(journal)
    try:
        yield
    finally:
        durability.disable_journal()


def test_power_cut_removes_files_never_fsynced_and_unsynced_segments(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    directory = data_dir / "events-0"
    journal = data_dir / "journal"  # inside a data directory: power_cut must spare it
    config = LogConfig(segment_bytes=1200, index_interval_bytes=150, retention_ms=None)
    plan = plan_appends(seed=5, count=30, epochs=(1, 2, 6))
    data_dir.mkdir()
    with journal_enabled(journal):
        log = Log.open(directory, config)
        for planned in plan[:12]:
            log.append(expected_history([planned])[0].raw, leader_epoch=planned.epoch)
        log.flush()
        durable = log.log_end_offset
        synced_segments = log.segment_base_offsets
        synced_sizes = {path.name: path.stat().st_size for path in log_files(directory, ".log")}
        for planned in plan[12:]:
            log.append(expected_history([planned])[0].raw, leader_epoch=planned.epoch)
        appended = stored_batches(log)
        unsynced_segments = [
            base for base in log.segment_base_offsets if base not in synced_segments
        ]
        stray = directory / "never-synced.bin"
        stray.write_bytes(b"x" * 100)
        log.close()
    assert unsynced_segments, "the test must roll segments that are never fsynced"
    assert durable < appended[-1].next_offset

    power_cut(journal, data_dir)

    assert journal.exists()
    assert not stray.exists()
    remaining = {path.name: path.stat().st_size for path in log_files(directory, ".log")}
    assert remaining == synced_sizes
    for base in unsynced_segments:
        assert not list(directory.glob(f"{base:020d}.*"))
    reopened = Log.open(directory, config, recovery_point=durable, clean_shutdown=False)
    assert (
        assert_valid_prefix(reopened, appended, at_least=durable)
        == next(index for index, batch in enumerate(appended) if batch.next_offset == durable) + 1
    )
    assert reopened.log_end_offset == durable
    reopened.close()


def test_power_cut_keeps_the_last_durable_version_of_replaced_files(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    journal = tmp_path / "journal"
    target = data_dir / "checkpoint"
    gone = data_dir / "removed"
    with journal_enabled(journal):
        write_atomically(target, b"first version\n")
        write_atomically(target, b"second\n")
        write_atomically(gone, b"soon removed\n")
        remove_durably(gone)
        # Written in place after the last durable replace, never synced: lost in the cut.
        with target.open("ab") as file:
            file.write(b"unsynced tail\n")
    power_cut(journal, data_dir)
    assert target.read_bytes() == b"second\n"
    assert not gone.exists()
    assert not (data_dir / "checkpoint.tmp").exists()


# -- durable_lengths: the journal replay ----------------------------------------------------


def test_durable_lengths_replays_syncs_renames_and_unlinks(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    journal.write_text(
        "F\t10\t/d/a\n"
        "F\t25\t/d/a\n"  # a later sync of the same file wins
        "F\t5\t/d/b.tmp\n"
        "R\t/d/b.tmp\t/d/b\n"  # the synced temp file became b
        "F\t7\t/d/c\n"
        "U\t/d/c\n"  # gone
        "F\t4\t/d/y\n"
        "R\t/d/never-synced.tmp\t/d/y\n"  # y replaced by a file never synced: nothing durable
        "F\t6\t/d/with space/e\n"  # tabs separate fields, so paths may hold spaces
        "F\t2\t/d/a b.tmp\n"
        "R\t/d/a b.tmp\t/d/a b\n"
        "F\t3\t/d/f\n"
        "F\t99\t/d/f"  # cut short by the kill: never acted upon
    )
    assert durable_lengths(journal) == {
        "/d/a": 25,
        "/d/b": 5,
        "/d/with space/e": 6,
        "/d/a b": 2,
        "/d/f": 3,
    }


def test_durable_lengths_stops_at_a_line_cut_in_the_middle(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    journal.write_text("F\t10\t/d/a\nU\t/d/a\nR\t/d/a.t")
    assert durable_lengths(journal) == {}
    journal.write_text("F\t10\t/d/a\nU\t/d/")
    assert durable_lengths(journal) == {"/d/a": 10}
    journal.write_text("")
    assert durable_lengths(journal) == {}


def test_the_journal_records_what_the_storage_layer_syncs(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    directory = tmp_path / "log"
    with journal_enabled(journal):
        log = Log.open(directory, LogConfig(flush_messages=1))
        log.append(expected_history(plan_appends(seed=1, count=1, epochs=(3,)))[0].raw, 3)
        size = log.size_in_bytes
        log.close()
    lengths = durable_lengths(journal)
    segment = str(directory / f"{0:020d}.log")
    assert lengths[segment] == size
    assert str(directory / "leader-epoch-checkpoint") in lengths
    assert not any(path.endswith(".tmp") for path in lengths)
