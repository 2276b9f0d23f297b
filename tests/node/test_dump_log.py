"""`kraft dump-log` through the installed console script, on a real log directory."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.storage.helpers import make_batch, open_log


def kraft(*args: str) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("kraft", path=str(Path(sys.executable).parent))
    assert executable is not None, "the kraft console script is installed with the project"
    return subprocess.run(
        [executable, *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_dump_log_prints_every_batch_and_flags_damage(tmp_path: Path) -> None:
    log = open_log(tmp_path / "orders-0", segment_bytes=300)
    for epoch in range(4):
        log.append(make_batch(2, tag=epoch), leader_epoch=epoch)
    log.close()
    result = kraft("dump-log", str(tmp_path / "orders-0"), "--records")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["base_offset"] for line in lines] == [0, 2, 4, 6]
    assert [line["partition_leader_epoch"] for line in lines] == [0, 1, 2, 3]
    assert [record["offset"] for record in lines[1]["records"]] == [2, 3]

    segment = sorted((tmp_path / "orders-0").glob("*.log"))[-1]
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF
    segment.write_bytes(data)
    damaged = kraft("dump-log", str(segment))
    assert damaged.returncode == 1
    assert "CRC32C mismatch" in damaged.stdout.splitlines()[-1]
    missing = kraft("dump-log", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
