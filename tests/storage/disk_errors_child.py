"""Child process of the disk-error tests: makes the disk refuse writes, for real, and reports.

    python tests/storage/disk_errors_child.py SCENARIO DIR [ARG]

- `enospc DIR`: mounts a 256 KiB tmpfs on DIR (run it under `unshare -m`, as root), fills it
  through a log until an append fails, checks the failure, frees space, goes on, reopens.
- `efbig DIR`: caps the file size with RLIMIT_FSIZE (SIGXFSZ ignored), so an append is written
  in part and then refused with EFBIG; checks it was rolled back.
- `roll DIR FREE`: mounts a tmpfs with few inodes on DIR (under `unshare -m`), leaves FREE of
  them free, then makes the log roll: creating the new segment (or sealing the old one) fails.

Prints one JSON object on stdout: what was observed, for the test to assert on. Checks that
need the whole history are done here with `assert_valid_prefix` and reported as "ok" or the
assertion message.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from storage.errors import StorageError, StorageIOError
from storage.leader_epoch_cache import LeaderEpochCache
from storage.log import Log, LogConfig
from tests.storage.log_checks import (
    Appended,
    Planned,
    assert_valid_prefix,
    encode_planned,
    expected_epochs,
    stored_batches,
)

Report = dict[str, Any]


def check(action: Callable[[], object]) -> str:
    """Run a check; "ok", or what failed."""
    try:
        action()
    except AssertionError as error:
        return f"assertion failed: {error}"
    except Exception as error:  # reported, for the test to show
        return f"{type(error).__name__}: {error}"
    return "ok"


def planned(tag: int, records: int, value_size: int, epoch: int) -> Planned:
    return Planned(
        records=records, value_size=value_size, timestamp=2_000_000 + tag, epoch=epoch, tag=tag
    )


def mount_tmpfs(directory: Path, options: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)], check=True)


def file_sizes(directory: Path) -> dict[str, int]:
    return {path.name: path.stat().st_size for path in sorted(directory.iterdir())}


def cache_entries(cache: LeaderEpochCache | None) -> list[list[int]] | None:
    if cache is None:
        return None
    return [[entry.epoch, entry.start_offset] for entry in cache.entries]


def attempt(log: Log, batch: Planned, acked: list[Appended]) -> Report:
    """Append `batch`. If the disk refuses it, report the error and what the attempt left
    behind (the full checks); if it is taken, add it to `acked` and report no error."""
    directory = log.directory
    before_files = file_sizes(directory)
    before_end = log.log_end_offset
    before_segments = log.segment_base_offsets
    report: Report = {"raised": None, "errno": None}
    try:
        log.append(encode_planned(batch), leader_epoch=batch.epoch)
    except StorageIOError as error:
        report.update(raised="StorageIOError", errno=error.errno)
    except StorageError as error:
        report.update(raised=type(error).__name__)
    else:
        acked.append(stored_batches(log)[-1])
        return report
    after_files = file_sizes(directory)
    report.update(
        log_end_before=before_end,
        log_end_after=log.log_end_offset,
        segments_before=before_segments,
        segments_after=log.segment_base_offsets,
        offline=log.offline,
        # Files that existed keep their size; files the attempt created hold nothing.
        files_changed={
            name: [before_files.get(name), size]
            for name, size in after_files.items()
            if before_files.get(name, 0) != size
        },
        log_valid=check(lambda: assert_valid_prefix(log, acked, at_least=before_end)),
        epochs_in_memory=cache_entries(log.leader_epoch_cache),
        epochs_on_disk=cache_entries(LeaderEpochCache.load(directory)),
        epochs_expected=[list(entry) for entry in expected_epochs(acked)],
    )
    return report


def append_acked(log: Log, batch: Planned, acked: list[Appended]) -> int:
    info = log.append(encode_planned(batch), leader_epoch=batch.epoch)
    acked.append(stored_batches(log)[-1])
    return info.first_offset


def reopen_reports(log: Log, acked: list[Appended], scratch: Path) -> Report:
    """Flush and close `log`; reopen a copy of it unclean (recovering every segment), and the
    log itself clean (trusting its checkpoints as they were written)."""
    report: Report = {}
    directory, config = log.directory, log.config
    log.flush()
    log.close()
    copy = scratch / "unclean-copy"
    shutil.copytree(directory, copy)
    reopened = Log.open(copy, config, recovery_point=0, clean_shutdown=False)
    report["unclean_reopen"] = check(
        lambda: assert_valid_prefix(reopened, acked, at_least=len_of(acked))
    )
    reopened.close()
    reopened = Log.open(directory, config, recovery_point=log.recovery_point, clean_shutdown=True)
    report["clean_reopen"] = check(
        lambda: assert_valid_prefix(reopened, acked, at_least=len_of(acked))
    )
    reopened.close()
    return report


def len_of(acked: list[Appended]) -> int:
    return acked[-1].next_offset if acked else 0


# -- scenarios ------------------------------------------------------------------------------------


def enospc(directory: Path) -> Report:
    mount_tmpfs(directory, "size=256k")
    filler = directory / "filler"
    filler.write_bytes(b"\0" * 48 * 1024)
    config = LogConfig(segment_bytes=48 * 1024, index_interval_bytes=512, retention_ms=None)
    log_dir = directory / "events-0"
    log = Log.open(log_dir, config)
    acked: list[Appended] = []
    report: Report = {}
    tag = 0
    epoch = 0
    first_failure: Report | None = None
    while tag < 5000:
        if tag % 40 == 39:
            epoch += 1
        batch = planned(tag, records=1 + tag % 9, value_size=150 + 13 * (tag % 7), epoch=epoch)
        outcome = attempt(log, batch, acked)
        if outcome["raised"]:
            first_failure = outcome
            break
        tag += 1
    report["acked_before_full"] = len(acked)
    report["first_failure"] = first_failure
    # A new leader epoch while the disk is still full: its checkpoint cannot be written.
    new_epoch = planned(tag + 1, records=2, value_size=100, epoch=epoch + 5)
    report["new_epoch_failure"] = attempt(log, new_epoch, acked)
    report["stray_files_while_full"] = sorted(
        path.name for path in log_dir.iterdir() if path.suffix == ".tmp"
    )
    filler.unlink()
    end = log.log_end_offset
    report["after_free"] = {
        "first_offset": append_acked(log, new_epoch, acked),
        "expected_first_offset": end,
        "epochs_in_memory": cache_entries(log.leader_epoch_cache),
        "epochs_on_disk": cache_entries(LeaderEpochCache.load(log_dir)),
        "epochs_expected": [list(entry) for entry in expected_epochs(acked)],
    }
    for more in range(5):
        append_acked(log, planned(tag + 2 + more, 3, 120, epoch + 5), acked)
    report["after_free"]["log_valid"] = check(
        lambda: assert_valid_prefix(log, acked, at_least=len_of(acked))
    )
    report.update(reopen_reports(log, acked, directory.parent))
    return report


def efbig(directory: Path) -> Report:
    limit = 24_000
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=1000, retention_ms=None)
    log_dir = directory / "events-0"
    log = Log.open(log_dir, config)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    acked: list[Appended] = []
    report: Report = {"limit": limit}
    segment = log_dir / f"{0:020d}.log"
    tag = 0
    while True:
        batch = planned(tag, records=12, value_size=230, epoch=1)
        # A log that never took a batch has no segment file yet.
        size_before = segment.stat().st_size if segment.exists() else 0
        batch_size = len(encode_planned(batch))
        if size_before + batch_size > limit:
            report["failure"] = attempt(log, batch, acked)
            report["partial_write_expected"] = size_before < limit
            break
        append_acked(log, batch, acked)
        tag += 1
    small = planned(tag + 1, records=1, value_size=10, epoch=1)
    room = limit - segment.stat().st_size
    report["small_fits"] = len(encode_planned(small)) <= room
    report["small_first_offset"] = append_acked(log, small, acked)
    report["small_expected_offset"] = acked[-2].next_offset
    report["again"] = attempt(log, planned(tag + 2, 12, 230, 1), acked)
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    report.update(reopen_reports(log, acked, directory))
    return report


def roll(directory: Path, free_inodes: int) -> Report:
    mount_tmpfs(directory, "size=4m,nr_inodes=64")
    big = planned(0, records=5, value_size=100, epoch=2)
    small = planned(1, records=1, value_size=8, epoch=2)
    big_size, small_size = len(encode_planned(big)), len(encode_planned(small))
    config = LogConfig(
        segment_bytes=5 * big_size + small_size + 10, index_interval_bytes=100, retention_ms=None
    )
    log_dir = directory / "events-0"
    log = Log.open(log_dir, config)
    acked: list[Appended] = []
    for tag in range(5):
        append_acked(log, planned(10 + tag, 5, 100, 2), acked)
    # Use up the inodes, then give back `free_inodes` of them.
    fillers: list[Path] = []
    while True:
        path = directory / f"filler-{len(fillers)}"
        try:
            path.touch()
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
            break
        fillers.append(path)
    for _ in range(free_inodes):
        fillers.pop().unlink()
    report: Report = {"segments_before": log.segment_base_offsets}
    needs_roll = planned(20, 5, 100, 2)
    report["failure"] = attempt(log, needs_roll, acked)
    report["retry"] = attempt(log, needs_roll, acked)
    report["small_first_offset"] = append_acked(log, planned(21, 1, 8, 2), acked)
    report["small_expected_offset"] = acked[-2].next_offset
    for filler in fillers:
        filler.unlink()
    report["after_free_first_offset"] = append_acked(log, needs_roll, acked)
    report["after_free_expected_offset"] = acked[-2].next_offset
    report["segments_after_free"] = log.segment_base_offsets
    report["after_free_valid"] = check(
        lambda: assert_valid_prefix(log, acked, at_least=len_of(acked))
    )
    report.update(reopen_reports(log, acked, directory.parent))
    return report


def main() -> None:
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    scenario, directory = sys.argv[1], Path(sys.argv[2])
    if scenario == "enospc":
        report = enospc(directory)
    elif scenario == "efbig":
        report = efbig(directory)
    elif scenario == "roll":
        report = roll(directory, int(sys.argv[3]))
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
