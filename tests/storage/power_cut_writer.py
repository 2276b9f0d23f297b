"""A writer for the power-cut tests, run as its own process and killed with SIGKILL.

    python tests/storage/power_cut_writer.py DATA_DIR JOURNAL MODE

It records every fsync in JOURNAL (`storage.durability.enable_journal`), opens a LogManager on
DATA_DIR and appends the batches of `PLAN` to partition `PARTITION`. Flushing follows MODE:
`every_write` (flush.messages=1), `every_n` (flush.messages=FLUSH_EVERY), `every_ms`
(flush.ms=FLUSH_MS, appends paced a millisecond apart and the manager's `flush_due` called after
each, as a broker's flush scheduler would) or `explicit` (no policy: `Log.flush()` every
FLUSH_EVERY appends, plus the manager's roll-triggered flushes).
Recovery points are checkpointed after each flush, as a broker does periodically.

It prints, line-buffered, after each append `A <tag> <first offset> <last offset>`, and after
each fsync that moved the recovery point `D <recovery point>`: every offset below it is durable
(the journal already holds the fsyncs that made it so). After PHASE_ONE appends it prints `P2`
and stops flushing altogether: what it appends from then on is never fsynced. At the end of the
plan it waits to be killed; it never shuts the log down cleanly.
"""

from __future__ import annotations

import dataclasses
import io
import os
import sys
import time
from pathlib import Path

import structlog

from storage import durability
from storage.log import LogConfig
from storage.log_manager import LogManager, TopicPartition
from tests.storage.log_checks import encode_planned, plan_appends

PARTITION = TopicPartition("events", 0)
PHASE_ONE = 60
PLAN = plan_appends(seed=3, count=PHASE_ONE + 240, epochs=(0, 1, 2, 4, 5, 8, 9, 12, 13, 15))
FLUSH_EVERY = 7
FLUSH_MS = 3
MODES = ("every_write", "every_n", "every_ms", "explicit")
# Never outlive the test that forgot to kill us.
_MAX_LIFETIME_S = 60.0


def config_for(mode: str) -> LogConfig:
    flush_messages = {"every_write": 1, "every_n": FLUSH_EVERY}.get(mode)
    return LogConfig(
        segment_bytes=1500,
        index_interval_bytes=200,
        flush_messages=flush_messages,
        flush_ms=FLUSH_MS if mode == "every_ms" else None,
        retention_ms=None,
    )


def main(data_dir: Path, journal: Path, mode: str) -> None:
    started = time.monotonic()
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    out = sys.stdout
    assert isinstance(out, io.TextIOWrapper)
    out.reconfigure(line_buffering=True)
    durability.enable_journal(journal)
    config = config_for(mode)
    manager = LogManager.open([data_dir], config)
    log = manager.get_or_create_log(PARTITION, config)
    reported = log.recovery_point
    for tag, planned in enumerate(PLAN):
        if tag == PHASE_ONE:
            log.config = dataclasses.replace(log.config, flush_messages=None, flush_ms=None)
            out.write("P2\n")
        info = log.append(encode_planned(planned), leader_epoch=planned.epoch)
        out.write(f"A {tag} {info.first_offset} {info.last_offset}\n")
        if tag < PHASE_ONE and mode == "every_ms":
            time.sleep(0.001)
            manager.flush_due()
        if tag < PHASE_ONE and mode == "explicit":
            manager.flush_due()
            if tag % FLUSH_EVERY == FLUSH_EVERY - 1:
                log.flush()
        if log.recovery_point > reported:
            reported = log.recovery_point
            out.write(f"D {reported}\n")
            manager.checkpoint()
    out.write("END\n")
    while time.monotonic() - started < _MAX_LIFETIME_S:
        time.sleep(0.05)
    os._exit(3)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])
