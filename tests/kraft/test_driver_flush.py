"""The Raft driver fsyncs the metadata log in a thread, off the event loop, and keeps the
contract's order: nothing of a `Ready` after its fsync (messages, commits) happens before the
fsync completes, and the log operations gathered meanwhile wait for it, in order."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from kraft.driver import RaftDriver
from kraft.messages import Entry, SnapshotId
from kraft.metadata_log import MetadataLog
from storage.log import Log
from tests.fatal_faults import Faults, faults  # noqa: F401 (the fixture)
from tests.kraft.lone_voter import elected  # noqa: F401 (the fixture)


async def test_a_slow_fsync_leaves_the_loop_free_and_holds_back_what_follows_it(
    elected: tuple[RaftDriver, Log],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    driver, metadata_log = elected
    release = threading.Event()
    flushing = threading.Event()
    flush = metadata_log.flush

    def slow_flush(offset: int | None = None) -> None:
        flushing.set()
        # Bounded, so that a driver fsyncing on the loop fails this test instead of hanging.
        release.wait(10)
        flush(offset)

    monkeypatch.setattr(metadata_log, "flush", slow_flush)
    end_before = metadata_log.log_end_offset
    second = driver.submit([b"second"])
    assert metadata_log.log_end_offset == end_before + 1  # written, not yet durable
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(30):
        while not flushing.is_set():
            await asyncio.sleep(0.01)
    # The fsync blocks its thread; the loop goes on running callbacks meanwhile.
    started = loop.time()
    await asyncio.sleep(0.05)
    assert loop.time() - started < 5
    third = driver.submit([b"third"])
    await asyncio.sleep(0.05)
    assert not second.committed.done() and not third.committed.done()
    # The third entry waits for the fsync before it reaches the storage log.
    assert metadata_log.log_end_offset == end_before + 1
    assert metadata_log.recovery_point < end_before + 1
    release.set()
    async with asyncio.timeout(30):
        assert await second.committed == end_before + 1
        assert await third.committed == end_before + 2
    assert [entry.data for entry in MetadataLog(metadata_log).entries()][-2:] == [
        b"second",
        b"third",
    ]
    assert metadata_log.recovery_point == end_before + 2


async def test_a_failed_fsync_is_fatal_and_commits_nothing(
    elected: tuple[RaftDriver, Log],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    faults: Faults,  # noqa: F811
) -> None:
    driver, metadata_log = elected

    def failing_flush(offset: int | None = None) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(metadata_log, "flush", failing_flush)
    pending = driver.submit([b"lost"])
    async with asyncio.timeout(30):
        while not faults:
            await asyncio.sleep(0.01)
    assert [what for what, _ in faults] == ["raft_driver"]
    await asyncio.sleep(0.05)
    assert not pending.committed.done()
    # Nothing more is applied after the failure: the node and its disk no longer agree.
    end = metadata_log.log_end_offset
    driver.submit([b"after"])
    await asyncio.sleep(0.05)
    assert metadata_log.log_end_offset == end


class _Replier:
    """Appends `b"reply"`, then `b"more"`, when `b"second"` commits, as the controller
    appends on commits."""

    def __init__(self, driver: RaftDriver) -> None:
        self.driver = driver
        self.replies: list[asyncio.Future[int]] = []

    def on_commit(self, entries: Sequence[Entry]) -> None:
        if any(entry.data == b"second" for entry in entries):
            for data in (b"reply", b"more"):
                self.replies.append(self.driver.submit([data]).committed)

    def on_leader_change(self, leader_id: int | None, leader_epoch: int) -> None:
        del leader_id, leader_epoch

    def on_snapshot_loaded(self, snapshot_id: SnapshotId, records: Sequence[bytes]) -> None:
        del snapshot_id, records


async def test_an_append_made_on_a_commit_waits_for_its_fsync_before_later_ones(
    elected: tuple[RaftDriver, Log],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The commit that follows one fsync makes a listener append twice (nested in that step):
    # the first append's fsync holds back everything after it, the second append included.
    driver, metadata_log = elected
    replier = _Replier(driver)
    driver.add_listener(replier)
    release = threading.Event()
    flushed_ends: list[int] = []
    flush = metadata_log.flush

    def flush_blocking_after_the_first(offset: int | None = None) -> None:
        if flushed_ends:
            release.wait(10)
        flushed_ends.append(metadata_log.log_end_offset)
        flush(offset)

    monkeypatch.setattr(metadata_log, "flush", flush_blocking_after_the_first)
    end_before = metadata_log.log_end_offset
    second = driver.submit([b"second"])
    async with asyncio.timeout(30):
        assert await second.committed == end_before + 1
    reply, more = replier.replies
    third = driver.submit([b"third"])
    await asyncio.sleep(0.05)
    # The reply is written, its fsync blocked: the rest waits, not yet in the storage log.
    assert metadata_log.log_end_offset == end_before + 2
    assert not reply.done() and not more.done() and not third.committed.done()
    release.set()
    async with asyncio.timeout(30):
        assert await reply == end_before + 2
        assert await more == end_before + 3
        assert await third.committed == end_before + 4
    # Each fsync covered the log as it stood: nothing was appended while one ran.
    assert flushed_ends == [end_before + 1, end_before + 2, end_before + 4]
    assert [entry.data for entry in MetadataLog(metadata_log).entries()][-4:] == [
        b"second",
        b"reply",
        b"more",
        b"third",
    ]
