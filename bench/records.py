"""Encode and decode time of one 1000-record batch with net.records, one JSON line per case.

Run from the repository root: `.venv/bin/python -m bench.records`. kafka-python's pure-Python
batch builder and reader run on the same records in the same process as a baseline (codec none),
since the project's VMs vary by about 20 % from run to run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from net.records import Compression, Header, Record, decode_batch, encode_batch

RECORDS = 1000
KEY_BYTES = 16
VALUE_BYTES = 100
NOW_MS = 1_700_000_000_000


def best_seconds(run: Callable[[], object], repeat: int = 7, number: int = 20) -> float:
    """The fastest mean time of one call over `repeat` rounds of `number` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            run()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def sample(header_count: int) -> list[Record]:
    headers = tuple(Header(f"header-{i}", b"h" * 16) for i in range(header_count))
    return [
        Record(
            value=(b"%d" % i).rjust(VALUE_BYTES, b"v"),
            key=(b"%d" % i).rjust(KEY_BYTES, b"k"),
            headers=headers,
            timestamp=NOW_MS + i,
        )
        for i in range(RECORDS)
    ]


def kafka_python_encode(records: list[Record]) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 24)
    for offset, record in enumerate(records):
        headers = [(header.key, header.value) for header in record.headers]
        builder.append(offset, record.timestamp, record.key, record.value, headers)
    return bytes(builder.build())


def kafka_python_decode(batch: bytes) -> list[tuple[bytes | None, bytes | None]]:
    return [(record.key, record.value) for record in DefaultRecordBatch(batch)]


def measure(records: list[Record], compression: Compression) -> dict[str, object]:
    batch = encode_batch(records, compression=compression)
    figures: dict[str, object] = {
        "bench": "records",
        "records": len(records),
        "key_bytes": KEY_BYTES,
        "value_bytes": VALUE_BYTES,
        "headers_per_record": len(records[0].headers),
        "codec": compression.name.lower(),
        "batch_bytes": len(batch),
        "encode_ms": best_seconds(lambda: encode_batch(records, compression=compression)) * 1e3,
        "decode_ms": best_seconds(lambda: decode_batch(batch)) * 1e3,
    }
    if compression == Compression.NONE:
        theirs = kafka_python_encode(records)
        figures["kafka_python_encode_ms"] = best_seconds(lambda: kafka_python_encode(records)) * 1e3
        figures["kafka_python_decode_ms"] = best_seconds(lambda: kafka_python_decode(theirs)) * 1e3
    return {name: round(v, 3) if isinstance(v, float) else v for name, v in figures.items()}


def main() -> None:
    for header_count in (0, 2):
        records = sample(header_count)
        for compression in Compression:
            print(json.dumps(measure(records, compression)))


if __name__ == "__main__":
    main()
