"""Storage benchmark: append and read throughput of a partition log, against the raw speed of
buffered 1 MiB writes to the same directory measured in the same run.

    python -m bench.storage [--dir DIR] [--repeats 3] [--mib 256]

Prints one JSON line per measurement (medians over the repeats) and a summary line with the
ratios the storage targets are stated in:
- 1 MiB appends, default flush policy, >= 70 % of the raw buffered write speed;
- >= 100,000 appends/s of 1 KiB batches, default flush policy;
- reads of 1 MiB from the page cache at >= 1 GB/s.
It also measures 1 KiB batches appended 16 per call, as a broker appending what is queued for
a partition at once would.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from net.records import Record, encode_batch
from storage.log import Log, LogConfig

KIB = 1024
MIB = 1024 * KIB


def batch_of(size: int) -> bytes:
    """One uncompressed batch of about `size` bytes (a single record)."""
    overhead = len(encode_batch([Record(value=b"")]))
    return encode_batch([Record(value=os.urandom(max(size - overhead - 8, 1)))])


def raw_buffered_write(directory: Path, total_bytes: int) -> float:
    """Seconds to write `total_bytes` in 1 MiB buffered writes (no fsync), as a log would."""
    block = os.urandom(MIB)
    path = directory / "raw.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    start = time.perf_counter()
    for _ in range(total_bytes // MIB):
        os.write(fd, block)
    elapsed = time.perf_counter() - start
    os.close(fd)
    path.unlink()
    return elapsed


def append_run(directory: Path, batch: bytes, count: int, config: LogConfig) -> float:
    """Seconds to append `batch` `count` times to a fresh log."""
    log_dir = directory / "log"
    log = Log.open(log_dir, config)
    start = time.perf_counter()
    for _ in range(count):
        log.append(batch, leader_epoch=1)
    elapsed = time.perf_counter() - start
    log.close()
    shutil.rmtree(log_dir)
    return elapsed


def read_run(directory: Path, batch: bytes, count: int, reads: int) -> tuple[float, int]:
    """Seconds to read `reads` times 1 MiB (read + copy out of the page cache), and bytes read."""
    log_dir = directory / "read-log"
    log = Log.open(log_dir, LogConfig())
    for _ in range(count):
        log.append(batch, leader_epoch=1)
    end = log.log_end_offset
    for offset in range(end):  # warm the page cache
        records = log.read(offset, MIB).records
        assert records is not None
        records.read()
    total = 0
    start = time.perf_counter()
    for index in range(reads):
        records = log.read(index % end, MIB).records
        assert records is not None
        total += len(records.read())
    elapsed = time.perf_counter() - start
    log.close()
    shutil.rmtree(log_dir)
    return elapsed, total


def emit(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write (default: a temp dir)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mib", type=int, default=256, help="MiB written per throughput run")
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="bench-storage-", dir=args.dir))
    try:
        total = args.mib * MIB
        raw_seconds = []
        results: dict[str, float] = {}
        cases = [(KIB, 200_000), (16 * KIB, total // (16 * KIB)), (MIB, total // MIB)]
        policies = {"default": LogConfig(), "every_write": LogConfig(flush_messages=1)}
        for repeat in range(args.repeats):
            raw_seconds.append(raw_buffered_write(directory, total))
            for size, count in cases:
                batch = batch_of(size)
                for policy, config in policies.items():
                    # fsync per append is slow: measure fewer appends, same bytes at least 16 MiB.
                    appends = count if policy == "default" else max(16 * MIB // size, 2_000)
                    appends = min(appends, count)
                    seconds = append_run(directory, batch, appends, config)
                    key = f"{size}:{policy}"
                    results[f"{key}:{repeat}"] = seconds
                    results[f"{key}:appends"] = appends
        raw_mb_s = total / statistics.median(raw_seconds) / 1e6
        emit(measure="raw_buffered_write", block_bytes=MIB, mb_per_s=round(raw_mb_s, 1))
        summary: dict[str, object] = {"raw_buffered_write_mb_per_s": round(raw_mb_s, 1)}
        for size, _ in cases:
            batch_bytes = len(batch_of(size))
            for policy in policies:
                key = f"{size}:{policy}"
                appends = int(results[f"{key}:appends"])
                seconds = statistics.median(results[f"{key}:{r}"] for r in range(args.repeats))
                mb_s = appends * batch_bytes / seconds / 1e6
                emit(
                    measure="append",
                    batch_bytes=batch_bytes,
                    flush_policy=policy,
                    appends=appends,
                    batches_per_s=round(appends / seconds),
                    mb_per_s=round(mb_s, 1),
                    ratio_to_raw=round(mb_s / raw_mb_s, 3),
                )
                summary[f"append_{size // KIB}KiB_{policy}_batches_per_s"] = round(
                    appends / seconds
                )
                summary[f"append_{size // KIB}KiB_{policy}_ratio_to_raw"] = round(
                    mb_s / raw_mb_s, 3
                )
        # A broker can append every batch queued for a partition in one call: 16 x 1 KiB.
        grouped = batch_of(KIB) * 16
        grouped_seconds = statistics.median(
            append_run(directory, grouped, 200_000 // 16, LogConfig()) for _ in range(args.repeats)
        )
        grouped_rate = round(200_000 / grouped_seconds)
        emit(
            measure="append_grouped",
            batch_bytes=len(grouped) // 16,
            batches_per_call=16,
            flush_policy="default",
            batches_per_s=grouped_rate,
        )
        summary["append_1KiB_grouped_16_batches_per_s"] = grouped_rate
        batch = batch_of(MIB)
        read_results = [read_run(directory, batch, 64, 512) for _ in range(args.repeats)]
        read_gb_s = statistics.median(size / seconds / 1e9 for seconds, size in read_results)
        emit(measure="read", read_bytes=MIB, gb_per_s=round(read_gb_s, 2))
        summary["read_1MiB_gb_per_s"] = round(read_gb_s, 2)
        emit(measure="summary", **summary)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
