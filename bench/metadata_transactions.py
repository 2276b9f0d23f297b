"""What one large metadata transaction costs a node's event loop, commit by commit.

    python -m bench.metadata_transactions [--changes 10000] [--repeat 5]

A user request of many partition changes (an ElectLeaders or a reassignment over 10,000
partitions) is one metadata transaction of `--changes` PartitionChangeRecords, which the
metadata log hands out in commits of `RaftConfig.max_committed_per_ready` entries. Each commit
goes through what every node runs on its event loop for it: the `MetadataReplayer` (with the
node's logging, written to /dev/null) and the `EventLog`. For comparison, the same records
with no transaction around them. Reports, per case, the milliseconds of the longest commit and
of the last one (the transaction's end), medians of `--repeat` rounds. In-process: no sockets,
no files but the log's output.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any
from uuid import UUID

from controller.events import EventLog
from controller.image import MetadataReplayer
from controller.records import (
    BeginTransactionRecord,
    EndTransactionRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    encode_record,
)
from kraft.messages import Entry
from kraft.raft import RaftConfig
from node.logging_setup import configure_logging

TOPIC = UUID(int=1)


def _entries(records: list[MetadataRecord], start: int) -> list[Entry]:
    return [Entry(offset, 1, encode_record(r)) for offset, r in enumerate(records, start)]


def one_round(changes: int, transaction: bool) -> dict[str, float]:
    """The commits of `changes` leader changes on a fresh replayer and event log: the
    longest commit's and the last one's milliseconds."""
    setup: list[MetadataRecord] = [
        *(
            RegisterBrokerRecord(broker_id=b, incarnation_id=UUID(int=b), broker_epoch=b)
            for b in (1, 2, 3)
        ),
        TopicRecord("wide", TOPIC),
        *(
            PartitionRecord(TOPIC, p, replicas=(1, 2, 3), isr=(1, 2, 3), leader=1)
            for p in range(changes)
        ),
    ]
    body: list[MetadataRecord] = [
        PartitionChangeRecord(TOPIC, p, leader=2, isr=(2, 3)) for p in range(changes)
    ]
    if transaction:
        body = [BeginTransactionRecord("elect_leaders"), *body, EndTransactionRecord()]
    replayer = MetadataReplayer()
    events = EventLog(lambda: replayer.image, records_of=replayer.records_of)
    listeners = (replayer, events)
    for listener in listeners:
        listener.on_commit(_entries(setup, 0))
    entries = _entries(body, len(setup))
    size = RaftConfig().max_committed_per_ready
    commits_ms = []
    for start in range(0, len(entries), size):
        commit = entries[start : start + size]
        began = time.perf_counter()
        for listener in listeners:
            listener.on_commit(commit)
        commits_ms.append((time.perf_counter() - began) * 1000)
    return {"longest_commit_ms": max(commits_ms), "last_commit_ms": commits_ms[-1]}


def measure(changes: int, repeat: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "bench": "metadata_transactions",
        "changes": changes,
        "commit_entries": RaftConfig().max_committed_per_ready,
        "repeat": repeat,
    }
    for case, transaction in (("transaction", True), ("no_transaction", False)):
        rounds = [one_round(changes, transaction) for _ in range(repeat)]
        result[case] = {
            name: round(statistics.median(r[name] for r in rounds), 2) for name in rounds[0]
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with open(os.devnull, "w") as sink:
        configure_logging(0, stream=sink)
        print(json.dumps(measure(args.changes, args.repeat)))


if __name__ == "__main__":
    main()
