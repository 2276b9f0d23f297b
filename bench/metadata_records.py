"""Encode and decode time of the metadata records a node replays, one JSON line per case.

Run from the repository root: `.venv/bin/python -m bench.metadata_records [--records 100000]`.
A realistic mix, as a topic-creating, ISR-changing cluster writes it: per 10 records, 4
PartitionChangeRecords (ISR or leader changes, some with an ELR), 4 PartitionRecords (three
replicas), 1 RegisterBrokerRecord (two listeners, one feature) and 1 TopicRecord. Prints the
best of `--repeat` rounds of encoding every record, and of decoding every one.
"""

from __future__ import annotations

import argparse
import json
import time
from uuid import UUID

from controller.records import (
    BrokerEndpoint,
    BrokerFeature,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    decode_record,
    encode_record,
)


def sample(count: int) -> list[MetadataRecord]:
    """`count` records of the mix, with varied ids."""
    records: list[MetadataRecord] = []
    for i in range(count):
        topic_id = UUID(int=i // 10 + 1)
        replicas = (i % 5, (i + 1) % 5, (i + 2) % 5)
        kind = i % 10
        if kind < 4:
            if kind % 2:
                change = PartitionChangeRecord(topic_id, i % 50, isr=replicas[:2])
            else:
                change = PartitionChangeRecord(
                    topic_id, i % 50, isr=replicas[:1], leader=replicas[0], elr=replicas[1:]
                )
            records.append(change)
        elif kind < 8:
            records.append(PartitionRecord(topic_id, i % 50, replicas, replicas, replicas[0], 3, 7))
        elif kind == 8:
            records.append(
                RegisterBrokerRecord(
                    broker_id=i % 5,
                    incarnation_id=topic_id,
                    broker_epoch=i,
                    listeners=(
                        BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9092),
                        BrokerEndpoint("ADMIN", "127.0.0.1", 9292),
                    ),
                    features=(BrokerFeature("metadata.version", 1, 20),),
                    rack="rack-a",
                )
            )
        else:
            records.append(TopicRecord(f"topic-{i}", topic_id))
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    records = sample(args.records)
    encoded = [encode_record(record) for record in records]
    assert [decode_record(data) for data in encoded] == records
    best_encode = best_decode = float("inf")
    for _ in range(args.repeat):
        started = time.perf_counter()
        for record in records:
            encode_record(record)
        best_encode = min(best_encode, time.perf_counter() - started)
        started = time.perf_counter()
        for data in encoded:
            decode_record(data)
        best_decode = min(best_decode, time.perf_counter() - started)
    for case, seconds in (("encode", best_encode), ("decode", best_decode)):
        print(
            json.dumps(
                {
                    "case": case,
                    "records": args.records,
                    "seconds": round(seconds, 4),
                    "us_per_record": round(seconds / args.records * 1e6, 3),
                }
            )
        )


if __name__ == "__main__":
    main()
