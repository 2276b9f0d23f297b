"""node.entry in a process that already imported hypothesis (the tests): it leaves it there."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import hypothesis

from node import entry


def test_the_entry_point_leaves_an_imported_hypothesis_alone(tmp_path: Path) -> None:
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"")
    assert entry.main(["dump-log", str(segment)]) == 0
    assert sys.modules["hypothesis"] is hypothesis


def test_collection_is_paused_inside_and_restored_after() -> None:
    assert gc.isenabled()
    with entry.paused_collection():
        assert not gc.isenabled()
        with entry.paused_collection():
            assert not gc.isenabled()
        # The inner pause leaves the outer one in place.
        assert not gc.isenabled()
    assert gc.isenabled()
