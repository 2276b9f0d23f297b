"""The active controller keeps an idle metadata log moving (KIP-835).

A single-voter quorum over a real metadata log and socket, with the controller on top as a
node runs it: while nothing is asked of it, the controller appends a NoOpRecord every
`metadata.max.idle.interval.ms`, so the committed offset advances; with the interval 0 it never
does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from controller.broker_lifecycle import LifecycleConfig
from controller.image import MetadataReplayer
from controller.quorum_controller import ControllerConfig, QuorumController
from controller.records import NoOpRecord, decode_record
from controller.topics import TopicDefaults
from kraft.driver import RaftDriver
from kraft.messages import Entry, EntryKind, SnapshotId
from tests.kraft.lone_voter import lone_voter


class Committed:
    """The metadata records committed, in order (LeaderChange entries left out)."""

    def __init__(self) -> None:
        self.records: list[bytes] = []

    def on_commit(self, entries: Sequence[Entry]) -> None:
        self.records += [entry.data for entry in entries if entry.kind is EntryKind.DATA]

    def on_leader_change(self, leader_id: int | None, leader_epoch: int) -> None:
        """Nothing: only commits matter here."""

    def on_snapshot_loaded(self, snapshot_id: SnapshotId, records: Sequence[bytes]) -> None:
        """Nothing: a lone voter never loads a snapshot."""


@asynccontextmanager
async def active_controller(
    tmp_path: Path, max_idle_interval_ms: int
) -> AsyncIterator[tuple[RaftDriver, Committed]]:
    """A lone voter that elected itself, with its controller activated."""
    driver, metadata_log = lone_voter(tmp_path, "noops")
    replayer = MetadataReplayer()
    committed = Committed()
    controller = QuorumController(
        driver,
        replayer,
        ControllerConfig(
            node_id=1,
            cluster_id="noops",
            lifecycle=LifecycleConfig(),
            topic_defaults=TopicDefaults(),
            max_idle_interval_ms=max_idle_interval_ms,
        ),
    )
    for listener in (replayer, committed, controller):
        driver.add_listener(listener)
    await driver.start()
    try:
        async with asyncio.timeout(10):
            while not (driver.is_leader and replayer.image.end_offset >= 1):
                await asyncio.sleep(0.02)
        yield driver, committed
    finally:
        await controller.stop()
        await driver.stop(resign=False)
        metadata_log.close()


async def test_an_idle_active_controller_appends_noops(tmp_path: Path) -> None:
    async with active_controller(tmp_path, max_idle_interval_ms=50) as (driver, committed):
        start = driver.quorum_view().high_watermark
        await asyncio.sleep(1.0)
        # About one NoOp per interval; a loaded machine may fire the timer late.
        assert len(committed.records) >= 3
        assert {decode_record(record) for record in committed.records} == {NoOpRecord()}
        assert driver.quorum_view().high_watermark >= start + 3


async def test_no_noops_with_the_idle_interval_zero(tmp_path: Path) -> None:
    async with active_controller(tmp_path, max_idle_interval_ms=0) as (driver, committed):
        start = driver.quorum_view().high_watermark
        await asyncio.sleep(0.5)
        assert committed.records == []
        assert driver.quorum_view().high_watermark == start
