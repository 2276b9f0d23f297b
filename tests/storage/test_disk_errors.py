"""The disk refuses writes, for real: errors surface as StorageIOError with the errno, and the
log stays consistent, usable once the disk recovers, and reopenable (clean and unclean) to
exactly the acknowledged batches.

Each scenario runs in a child process (`disk_errors_child.py`): a full tmpfs mounted in a private
mount namespace (`unshare -m`, as root) for ENOSPC, on data or on inodes when a segment rolls,
and RLIMIT_FSIZE for writes cut short and then refused with EFBIG. The child reports what it saw
as JSON; the assertions are here.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("disk_errors_child.py")


@functools.cache
def private_mounts_unavailable() -> str | None:
    """Why a tmpfs cannot be mounted in a private namespace here (None when it can)."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "needs unshare and mount (util-linux)"
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "true"],
        capture_output=True,
        check=False,
        timeout=10,
    )
    if probe.returncode:
        return f"unshare -m refused: {probe.stderr.decode(errors='replace').strip()}"
    return None


def run_child(tmp_path: Path, *args: str, private_mount: bool) -> dict[str, Any]:
    command = [sys.executable, str(CHILD), *args]
    if private_mount:
        reason = private_mounts_unavailable()
        # This machine kind (and CI, which runs on it as root) can mount a private tmpfs: not
        # being able to is an environment fault to see, never a silent skip.
        assert reason is None, f"cannot provoke a real ENOSPC here: {reason}"
        command = ["unshare", "-m", "--propagation", "private", *command]
    # On timeout, subprocess.run kills the child (by its pid) before raising.
    result = subprocess.run(
        command,
        capture_output=True,
        check=False,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    stderr = result.stderr.decode(errors="replace")[-4000:]
    assert result.returncode == 0, f"child failed:\n{stderr}"
    lines = result.stdout.decode().splitlines()
    assert lines, f"child reported nothing:\n{stderr}"
    report: dict[str, Any] = json.loads(lines[-1])
    return report


def assert_refused_cleanly(failure: dict[str, Any], expected_errno: int) -> None:
    """An append the disk refused raised StorageIOError(errno) and changed nothing."""
    assert failure["raised"] == "StorageIOError"
    assert failure["errno"] == expected_errno
    assert not failure["offline"]
    assert failure["log_end_after"] == failure["log_end_before"]
    assert failure["segments_after"] == failure["segments_before"]
    # No log file grew, and no file of a new segment was left behind (indexes of existing
    # segments may have been written while trying to seal the active one).
    existing = {f"{base:020d}" for base in failure["segments_before"]}
    for name in failure["files_changed"]:
        assert not name.endswith(".log"), f"{name} changed: {failure['files_changed']}"
        assert name.split(".")[0] in existing, f"{name} left behind"
    assert failure["log_valid"] == "ok"
    assert failure["epochs_in_memory"] == failure["epochs_expected"]
    assert failure["epochs_on_disk"] == failure["epochs_expected"]


@pytest.mark.slow
def test_enospc_leaves_the_log_consistent_and_usable_once_space_is_back(tmp_path: Path) -> None:
    report = run_child(tmp_path, "enospc", str(tmp_path / "mnt"), private_mount=True)
    assert report["acked_before_full"] > 50
    assert_refused_cleanly(report["first_failure"], errno.ENOSPC)
    # A new leader epoch on a full disk: its checkpoint cannot be written, and the cache must
    # not keep the epoch in memory (else it is never written once the disk has room again).
    assert_refused_cleanly(report["new_epoch_failure"], errno.ENOSPC)
    assert report["stray_files_while_full"] == []
    after = report["after_free"]
    assert after["first_offset"] == after["expected_first_offset"]
    assert after["epochs_in_memory"] == after["epochs_expected"]
    assert after["epochs_on_disk"] == after["epochs_expected"]
    assert after["log_valid"] == "ok"
    assert report["unclean_reopen"] == "ok"
    assert report["clean_reopen"] == "ok"


@pytest.mark.slow
def test_a_write_cut_short_by_the_file_size_limit_is_rolled_back(tmp_path: Path) -> None:
    report = run_child(tmp_path, "efbig", str(tmp_path), private_mount=False)
    # The refused batch straddled the limit: the kernel wrote part of it before EFBIG.
    assert report["partial_write_expected"]
    assert_refused_cleanly(report["failure"], errno.EFBIG)
    assert report["small_fits"]
    assert report["small_first_offset"] == report["small_expected_offset"]
    assert_refused_cleanly(report["again"], errno.EFBIG)
    assert report["unclean_reopen"] == "ok"
    assert report["clean_reopen"] == "ok"


@pytest.mark.slow
@pytest.mark.parametrize(
    "free_inodes",
    [
        pytest.param(0, id="sealing-fails-at-the-offset-index"),
        pytest.param(1, id="sealing-fails-at-the-time-index"),
        pytest.param(2, id="creating-the-segment-fails"),
    ],
)
def test_a_failed_roll_leaves_the_log_usable(tmp_path: Path, free_inodes: int) -> None:
    report = run_child(
        tmp_path, "roll", str(tmp_path / "mnt"), str(free_inodes), private_mount=True
    )
    assert_refused_cleanly(report["failure"], errno.ENOSPC)
    assert_refused_cleanly(report["retry"], errno.ENOSPC)
    # A batch that fits the active segment needs no roll and is taken.
    assert report["small_first_offset"] == report["small_expected_offset"]
    # With inodes back, the roll happens at the log end offset.
    assert report["after_free_first_offset"] == report["after_free_expected_offset"]
    assert report["segments_after_free"] == [
        *report["segments_before"],
        report["after_free_expected_offset"],
    ]
    assert report["after_free_valid"] == "ok"
    assert report["unclean_reopen"] == "ok"
    assert report["clean_reopen"] == "ok"
