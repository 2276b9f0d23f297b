"""The Raft driver hands a large commit to its listeners in pieces, and lets the event loop run
between them once it has applied commits for `COMMIT_SLICE_S`: one node runs the Raft replica,
the controller and the broker on one loop, and a whole 10,000-record commit applied in one go
held it long enough for Raft fetches and heartbeats to go unanswered."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

import kraft.driver
from kraft.driver import RaftDriver
from kraft.messages import Entry, SnapshotId
from storage.log import Log
from tests.kraft.lone_voter import elected  # noqa: F401 (the fixture)


class _Recorder:
    """Records each commit it is told of, and schedules a loop callback on the first one:
    that callback runs before the next piece only if the loop was free in between."""

    def __init__(self) -> None:
        self.seen: list[int | str] = []
        self.offsets: list[int] = []

    def on_commit(self, entries: Sequence[Entry]) -> None:
        if not self.seen:
            asyncio.get_running_loop().call_soon(self.seen.append, "loop ran")
        self.seen.append(len(entries))
        self.offsets += [entry.offset for entry in entries]

    def on_leader_change(self, leader_id: int | None, leader_epoch: int) -> None:
        del leader_id, leader_epoch

    def on_snapshot_loaded(self, snapshot_id: SnapshotId, records: Sequence[bytes]) -> None:
        del snapshot_id, records


async def commit_two_and_a_half_pieces(driver: RaftDriver) -> list[int | str]:
    """Commits 2.5 pieces' worth of entries in one append; what the listener saw, in order,
    once the append resolved (with the last piece: every entry was handed out by then)."""
    bound = driver.config.max_committed_per_ready
    recorder = _Recorder()
    driver.add_listener(recorder)
    pending = driver.submit([b"r%d" % i for i in range(2 * bound + bound // 2)])
    async with asyncio.timeout(30):
        assert await pending.committed == pending.end_offset
    assert recorder.offsets == list(range(pending.base_offset, pending.end_offset))
    return recorder.seen


@pytest.mark.parametrize(
    ("slice_s", "loop_runs_after"),
    [
        # No time to apply commits before the loop runs again: it runs after every piece.
        (0.0, 1),
        # Every yield costs the loop a GIL hand-back: within the slice the pieces follow at once.
        (60.0, 3),
    ],
    ids=["after-each-piece", "within-the-slice"],
)
async def test_a_large_commit_reaches_the_listeners_in_pieces_with_the_loop_free_between(
    elected: tuple[RaftDriver, Log],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    slice_s: float,
    loop_runs_after: int,
) -> None:
    monkeypatch.setattr(kraft.driver, "COMMIT_SLICE_S", slice_s)
    driver, _ = elected
    bound = driver.config.max_committed_per_ready
    pieces: list[int | str] = [bound, bound, bound // 2]
    pieces.insert(loop_runs_after, "loop ran")
    assert await commit_two_and_a_half_pieces(driver) == pieces
