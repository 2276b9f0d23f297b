"""The node's garbage collector during start-up: off until the start-up heap is frozen, then
on again (or left off where the caller had it off)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from node.process import freeze_start_up_heap


@pytest.fixture
def restored_collector() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("restored_collector")
def test_the_frozen_heap_is_out_of_sight_and_the_collector_runs_again() -> None:
    gc.disable()
    made_during_start_up = [object() for _ in range(10)]
    freeze_start_up_heap(collect_after=True)
    assert gc.isenabled()
    # What start-up made (and everything before it) is out of the collector's sight: in the
    # permanent generation, which get_objects does not list.
    assert gc.get_freeze_count() > len(made_during_start_up)
    assert not any(made_during_start_up is o for o in gc.get_objects())


@pytest.mark.usefixtures("restored_collector")
def test_a_collector_the_caller_had_off_stays_off() -> None:
    gc.disable()
    freeze_start_up_heap(collect_after=False)
    assert not gc.isenabled()
