"""The replicas' objects are frozen out of the garbage collector's walks as replicas are
hosted, and what stopped replicas left in reference cycles is reclaimed once enough stopped."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from node.frozen_heap import FREEZE_AFTER_STARTED, RECLAIM_AFTER_STOPPED, ReplicaHeap


class _Replica:
    """Stands for a replica's objects: in a reference cycle, as many are."""

    def __init__(self) -> None:
        self.itself = self


@pytest.fixture(autouse=True)
def unfrozen_after() -> Iterator[None]:
    yield
    gc.unfreeze()


def _tracked(thing: object) -> bool:
    """Whether the collector walks `thing` (get_objects lists no frozen object)."""
    return any(thing is tracked for tracked in gc.get_objects())


def test_the_heap_is_frozen_once_enough_replicas_were_started() -> None:
    heap = ReplicaHeap()
    replica = _Replica()
    heap.hosting_changed(FREEZE_AFTER_STARTED - 1, 0, image_done=True)
    assert _tracked(replica)
    heap.hosting_changed(1, 0, image_done=False)
    assert not _tracked(replica)
    assert gc.get_freeze_count() > 0
    # The count starts again from there.
    later = _Replica()
    heap.hosting_changed(FREEZE_AFTER_STARTED - 1, 0, image_done=True)
    assert _tracked(later)


def test_young_garbage_is_collected_not_frozen() -> None:
    garbage = _Replica()
    gone = weakref.ref(garbage)
    del garbage
    ReplicaHeap().hosting_changed(FREEZE_AFTER_STARTED, 0, image_done=False)
    assert gone() is None


def test_what_stopped_replicas_left_frozen_is_reclaimed_when_an_image_is_done() -> None:
    heap = ReplicaHeap()
    replica = _Replica()
    stopped = weakref.ref(replica)
    heap.hosting_changed(FREEZE_AFTER_STARTED, 0, image_done=False)
    del replica
    gc.collect()
    # Frozen: a collection does not see the cycle.
    assert stopped() is not None
    heap.hosting_changed(0, RECLAIM_AFTER_STOPPED - 1, image_done=True)
    assert stopped() is not None
    # Enough stopped, but the image is still being applied: not in the middle of it.
    heap.hosting_changed(0, 1, image_done=False)
    assert stopped() is not None
    heap.hosting_changed(0, 0, image_done=True)
    assert stopped() is None
    # And the heap is frozen again.
    assert gc.get_freeze_count() > 0
