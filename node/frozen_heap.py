"""The objects that live as long as the replicas, kept out of the garbage collector's walks.

A full collection walks every object the collector tracks, and it runs each time the old
generation grew by a quarter. A node creating 10,000 replicas (a million objects: logs,
segments, indexes, partition state) ran seven to ten of them meanwhile, 0.1 to 0.4 s each, every
one a pause of the event loop (and of every produce waiting on it) that freed nothing.

`ReplicaHeap` freezes the heap (`gc.freeze`: out of every later walk) each time
`FREEZE_AFTER_STARTED` more replicas were hosted, the young generations collected first so that
little garbage is frozen. A frozen object that becomes garbage in a reference cycle is never
freed while frozen, so once `RECLAIM_AFTER_STOPPED` replicas were stopped since the last full
walk, once the apply of a metadata image ends, the heap is unfrozen, collected whole (one pause,
logged) and frozen again.
"""

from __future__ import annotations

import gc
import time

import structlog

log = structlog.get_logger(__name__)

# About a tenth of a second of replica creation; a freeze costs a young collection (~1 ms).
FREEZE_AFTER_STARTED = 256
# What a full walk costs is paid once per this many replicas gone (their garbage in cycles is
# kept frozen until then).
RECLAIM_AFTER_STOPPED = 1000


class ReplicaHeap:
    """Freezes the heap as replicas are hosted, and reclaims what stopped replicas left in it;
    told of each change by the replica manager (`hosting_changed`)."""

    def __init__(self) -> None:
        self._started_since_freeze = 0
        self._stopped_since_reclaim = 0

    def hosting_changed(self, started: int, stopped: int, image_done: bool) -> None:
        """`started` replicas more are hosted and `stopped` fewer; `image_done`: the apply of
        a metadata image ended (a large change is over)."""
        self._started_since_freeze += started
        self._stopped_since_reclaim += stopped
        if image_done and self._stopped_since_reclaim >= RECLAIM_AFTER_STOPPED:
            self._reclaim()
        elif self._started_since_freeze >= FREEZE_AFTER_STARTED:
            gc.collect(1)
            gc.freeze()
            # Not the frozen object count: counting walks them all.
            log.debug("gc_frozen", replicas_started=self._started_since_freeze)
            self._started_since_freeze = 0

    def _reclaim(self) -> None:
        started = time.monotonic()
        gc.unfreeze()
        collected = gc.collect()
        gc.freeze()
        log.info(
            "gc_reclaimed",
            replicas_stopped=self._stopped_since_reclaim,
            collected=collected,
            objects=gc.get_freeze_count(),
            seconds=round(time.monotonic() - started, 3),
        )
        self._started_since_freeze = 0
        self._stopped_since_reclaim = 0
