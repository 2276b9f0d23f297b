"""An active controller on a lone voter (a real metadata log and socket), as a node runs it,
for tests of what the controller appends and what its node's image shows."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from controller.broker_lifecycle import LifecycleConfig
from controller.image import MetadataReplayer
from controller.quorum_controller import ControllerConfig, QuorumController
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


@dataclass(frozen=True)
class LoneController:
    driver: RaftDriver
    replayer: MetadataReplayer
    # What was committed since this start (what an earlier run left in the log too).
    committed: Committed
    controller: QuorumController


@asynccontextmanager
async def active_controller(
    directory: Path, cluster_id: str, max_idle_interval_ms: int = 0
) -> AsyncIterator[LoneController]:
    """A lone voter over the metadata log in `directory` that elected itself, with its
    controller activated; stopped on exit."""
    driver, metadata_log = lone_voter(directory, cluster_id)
    replayer = MetadataReplayer()
    committed = Committed()
    controller = QuorumController(
        driver,
        replayer,
        ControllerConfig(
            node_id=1,
            cluster_id=cluster_id,
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
            while not (driver.is_leader and controller.active):
                await asyncio.sleep(0.02)
        yield LoneController(driver, replayer, committed, controller)
    finally:
        await controller.stop()
        await driver.stop(resign=False)
        metadata_log.close()
