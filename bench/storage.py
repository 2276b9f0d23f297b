"""Storage benchmark: append and read throughput of a partition log, against the raw speed of
buffered 1 MiB writes to the same directory measured in the same run.

    python -m bench.storage [--dir DIR] [--repeats 3] [--mib 256]

Prints one JSON line per measurement (medians over the repeats) and a summary line with the
ratios the storage targets are stated in. Each append run's `ratio_to_raw` is against raw writes
of a page-aligned 1 MiB block made just before and after it, as buffered write speed depends on
the page cache's state; `ratio_to_same_bytes` is against writing the very batches the log
appends, unvalidated and unindexed, which isolates what the log itself costs:
- 1 MiB appends, default flush policy, >= 70 % of the raw buffered write speed;
- >= 100,000 appends/s of 1 KiB batches, default flush policy;
- reads of 1 MiB from the page cache at >= 1 GB/s.
Reads are measured for each batch size as a consumer makes them: 1 MiB at a time (Kafka's
default max.partition.fetch.bytes) from the offset after the previous read, out of a 64 MiB log.
It also measures 1 KiB batches appended 16 per call, as a broker appending what is queued for
a partition at once would, and 1 MiB batches lying 16 bytes past a page, as one read off a socket
may.
"""

from __future__ import annotations

import argparse
import json
import logging
import mmap
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import structlog

from net.records import Record, encode_batch
from storage.log import Log, LogConfig

KIB = 1024
MIB = 1024 * KIB


def aligned(data: bytes) -> memoryview:
    """`data` in memory that starts on a page boundary.

    The kernel copies a write into the page cache ~25 % faster when the source address and the
    file position agree modulo 32 bytes (measured here: 165-185 µs per MiB against 205-240):
    the batches and the baseline's block both start on a page and are whole KiBs long, so that
    every write of either runs at the same, best, alignment and the ratio measures the log alone.
    """
    memory = mmap.mmap(-1, len(data))
    memory.write(data)
    return memoryview(memory)


def batch_of(size: int) -> memoryview:
    """One uncompressed batch (a single record) of exactly `size` bytes, page-aligned."""
    overhead = len(encode_batch([Record(value=b"")]))
    for padding in range(16):
        batch = encode_batch([Record(value=os.urandom(size - overhead - padding))])
        if len(batch) == size:
            return aligned(batch)
    raise ValueError(f"no batch of exactly {size} bytes")


def raw_buffered_write(directory: Path, block: memoryview, count: int) -> float:
    """Seconds to write `block` `count` times with buffered writes (no fsync), as a log would.

    Like `append_run`'s log, the file is fsynced when closed (untimed) before it is removed, so
    that both leave the disk and the page cache in the same state for what runs next.
    """
    path = directory / "raw.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    start = time.perf_counter()
    for _ in range(count):
        os.write(fd, block)
    elapsed = time.perf_counter() - start
    os.fsync(fd)
    os.close(fd)
    path.unlink()
    return elapsed


def append_run(directory: Path, batch: memoryview, count: int, config: LogConfig) -> float:
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


def read_run(directory: Path, batch: memoryview, count: int, reads: int) -> tuple[float, int]:
    """Seconds to make `reads` reads of up to 1 MiB, each from where the last one ended (back
    to the start at the end), of a log of `count` copies of `batch`: the offset lookup, then
    the copy out of the page cache. Returns the seconds and the bytes read."""
    log_dir = directory / "read-log"
    log = Log.open(log_dir, LogConfig())
    for _ in range(count):
        log.append(batch, leader_epoch=1)
    end = log.log_end_offset
    batch_records = end // count

    def consume(reads: int) -> int:
        total = offset = 0
        for _ in range(reads):
            records = log.read(offset, MIB).records
            assert records is not None
            size = len(records.read())
            total += size
            offset = (offset + size // len(batch) * batch_records) % end
        return total

    consume(count)  # warm the page cache
    start = time.perf_counter()
    total = consume(reads)
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
    # Stdout carries the JSON lines only; the log's own events would interleave with them.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    directory = Path(tempfile.mkdtemp(prefix="bench-storage-", dir=args.dir))
    try:
        total = args.mib * MIB
        block = aligned(os.urandom(MIB))
        raw_seconds = []
        results: dict[str, float] = {}
        cases = [(KIB, 200_000), (16 * KIB, total // (16 * KIB)), (MIB, total // MIB)]
        policies = {"default": LogConfig(), "every_write": LogConfig(flush_messages=1)}
        for repeat in range(args.repeats):
            for size, count in cases:
                batch = batch_of(size)
                for policy, config in policies.items():
                    # fsync per append is slow: measure fewer appends, same bytes at least 16 MiB.
                    appends = count if policy == "default" else max(16 * MIB // size, 2_000)
                    appends = min(appends, count)
                    # Buffered writes run at ~340 MiB/s into memory the VM has handed back to
                    # its host and at ~5 GB/s into warm pages (machine-baselines.md): an untimed
                    # write first warms the memory that the baseline and then the appends reuse,
                    # and the baseline is the mean of raw writes just before and just after.
                    key = f"{size}:{policy}"
                    raw_buffered_write(directory, block, total // MIB)
                    raw_before = raw_buffered_write(directory, block, total // MIB)
                    if policy == "default":
                        # The same batches written as they are: what the log adds to the copy.
                        results[f"{key}:same:{repeat}"] = raw_buffered_write(
                            directory, batch, appends
                        )
                    results[f"{key}:{repeat}"] = append_run(directory, batch, appends, config)
                    raw_after = raw_buffered_write(directory, block, total // MIB)
                    raw_seconds += [raw_before, raw_after]
                    results[f"{key}:raw:{repeat}"] = (raw_before + raw_after) / 2
                    results[f"{key}:appends"] = appends

        def median_of(key: str) -> float:
            return statistics.median(results[f"{key}:{r}"] for r in range(args.repeats))

        raw_mb_s = total / statistics.median(raw_seconds) / 1e6
        emit(measure="raw_buffered_write", block_bytes=MIB, mb_per_s=round(raw_mb_s, 1))
        summary: dict[str, object] = {"raw_buffered_write_mb_per_s": round(raw_mb_s, 1)}
        for size, _ in cases:
            for policy in policies:
                key = f"{size}:{policy}"
                appends = int(results[f"{key}:appends"])
                seconds = median_of(key)
                mb_s = appends * size / seconds / 1e6
                ratios = {"ratio_to_raw": round(mb_s / (total / median_of(f"{key}:raw") / 1e6), 3)}
                if policy == "default":
                    ratios["ratio_to_same_bytes"] = round(median_of(f"{key}:same") / seconds, 3)
                emit(
                    measure="append",
                    batch_bytes=size,
                    flush_policy=policy,
                    appends=appends,
                    batches_per_s=round(appends / seconds),
                    mb_per_s=round(mb_s, 1),
                    **ratios,
                )
                name = f"append_{size // KIB}KiB_{policy}"
                summary[f"{name}_batches_per_s"] = round(appends / seconds)
                summary.update({f"{name}_{ratio}": value for ratio, value in ratios.items()})
        # A broker can append every batch queued for a partition in one call: 16 x 1 KiB.
        grouped = aligned(bytes(batch_of(KIB)) * 16)
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
        # A batch read off a socket lies wherever the request put it: 16 bytes past a page, the
        # copy into the page cache runs at its slower alignment.
        batch = batch_of(MIB)
        misaligned = aligned(bytes(16) + bytes(batch))[16:]
        misaligned_seconds, misaligned_raw_seconds = [], []
        for _ in range(args.repeats):
            raw_buffered_write(directory, block, total // MIB)
            misaligned_raw_seconds.append(raw_buffered_write(directory, block, total // MIB))
            misaligned_seconds.append(append_run(directory, misaligned, total // MIB, LogConfig()))
        misaligned_ratio = round(
            statistics.median(misaligned_raw_seconds) / statistics.median(misaligned_seconds), 3
        )
        emit(
            measure="append_misaligned",
            batch_bytes=MIB,
            flush_policy="default",
            ratio_to_raw=misaligned_ratio,
        )
        summary["append_1024KiB_misaligned_ratio_to_raw"] = misaligned_ratio
        for size, _ in cases:
            # 512 reads of 1 MiB from a 64 MiB log.
            read_results = [
                read_run(directory, batch_of(size), 64 * MIB // size, 512)
                for _ in range(args.repeats)
            ]
            seconds = statistics.median(seconds for seconds, _ in read_results)
            read_bytes = read_results[0][1]
            emit(
                measure="read",
                batch_bytes=size,
                read_bytes=MIB,
                batches_per_s=round(read_bytes / size / seconds),
                gb_per_s=round(read_bytes / seconds / 1e9, 2),
            )
            summary[f"read_{size // KIB}KiB_batches_per_s"] = round(read_bytes / size / seconds)
            summary[f"read_{size // KIB}KiB_gb_per_s"] = round(read_bytes / seconds / 1e9, 2)
        emit(measure="summary", **summary)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
