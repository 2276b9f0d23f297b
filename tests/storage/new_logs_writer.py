"""A process that creates new logs and is killed with SIGKILL (tests/storage/test_unwritten_logs).

    python tests/storage/new_logs_writer.py DATA_DIR JOURNAL

It records every fsync in JOURNAL, creates the logs of `PARTITIONS` partitions of topic
`TOPIC` at once (as a broker creates a new topic's replicas), then, by partition number p:
p % 3 == 0 never takes a batch, p % 3 == 1 takes one batch that is flushed, p % 3 == 2 takes
one batch never flushed. It prints `ready` once all of that is done and waits to be killed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from uuid import UUID

import structlog

from storage import durability
from storage.log_manager import LogManager, TopicPartition
from tests.storage.helpers import make_batch

TOPIC = "fresh"
TOPIC_ID = UUID(int=0xF2E5)
PARTITIONS = 30


def main() -> None:
    data_dir, journal = Path(sys.argv[1]), Path(sys.argv[2])
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    durability.enable_journal(journal)
    manager = LogManager.open([data_dir])
    wanted = [(TopicPartition(TOPIC, p), None) for p in range(PARTITIONS)]
    logs = manager.get_or_create_logs(wanted, topic_ids={TOPIC: TOPIC_ID})
    for partition, log in enumerate(logs):
        log.start_leader_epoch(3)
        if partition % 3:
            log.append(make_batch(2, tag=partition), leader_epoch=3)
        if partition % 3 == 1:
            log.flush()
    print("ready", flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
