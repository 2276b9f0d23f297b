"""A large metadata change reaches the hosted replicas in slices, with the event loop free
between them: creating thousands of replicas (a log and an fsynced epoch checkpoint each) must
not hold up heartbeats, fetches and requests for seconds; and whenever the loop runs, the new
leaderships' epochs are in their caches, to be checkpointed by their logs' first appends; while
the storage threads make the files of the next new replicas, the loop runs."""

from __future__ import annotations

import asyncio
import itertools
import threading
from pathlib import Path

from broker.replica_fetcher import APPLY_SLICE_S
from broker.replica_manager import ReplicaManager
from controller.image import MetadataReplayer
from controller.partition_state import PartitionState
from controller.topic_config import KAFKA_DEFAULTS
from storage.file_threads import FILE_THREADS, file_threads
from storage.leader_epoch_cache import EpochEntry, LeaderEpochCache
from storage.log import LogConfig
from storage.log_manager import LogManager
from tests.broker.replicas import TOPIC, batch, image

PARTITIONS = 2_000
LED = PartitionState(replicas=(1,), isr=(1,), leader=1)


def _leading_all(tmp_path: Path) -> tuple[LogManager, ReplicaManager]:
    """Broker 1's logs and replicas, its metadata naming it leader of PARTITIONS new ones."""
    logs = LogManager.open([tmp_path], LogConfig())
    replayer = MetadataReplayer(image(dict.fromkeys(range(PARTITIONS), LED)))
    return logs, ReplicaManager(1, logs, replayer, LogConfig(), KAFKA_DEFAULTS)


async def test_thousands_of_new_replicas_are_created_in_slices_with_the_loop_free_between(
    tmp_path: Path,
) -> None:
    logs, replicas = _leading_all(tmp_path)
    ticks = 0
    checked: set[tuple[str, int]] = set()

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0)
            ticks += 1
            # Whenever the loop runs, each new leadership's epoch is in its cache already; its
            # checkpoint waits for the first append (the log holds no batch yet). The replicas
            # are only added: those after the ones checked are the new ones.
            for key, partition in list(
                itertools.islice(replicas.partitions.items(), len(checked), None)
            ):
                cache = partition.log.leader_epoch_cache
                assert cache.entries == [EpochEntry(0, 0)]
                assert cache.unpersisted
                assert LeaderEpochCache.load(partition.log.directory) is None
                checked.add(key)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)
    try:
        replicas.on_commit([])
        # The commit returns after one slice: the rest is left for later loop iterations.
        assert 0 < len(replicas.partitions) < PARTITIONS
        ticks_before = ticks
        async with asyncio.timeout(120):
            while len(replicas.partitions) < PARTITIONS:
                await asyncio.sleep(APPLY_SLICE_S)
        assert ticks - ticks_before > 5
        await asyncio.sleep(0)
        assert not ticker.done()
        assert len(checked) == PARTITIONS
        assert all(replicas.partitions[(TOPIC, p)].is_leader for p in range(PARTITIONS))
        # The first append writes the epoch's checkpoint before its batch.
        first = replicas.partitions[(TOPIC, 0)].log
        first.append(batch(b"a"), leader_epoch=0)
        on_disk = LeaderEpochCache.load(first.directory)
        assert on_disk is not None and on_disk.entries == [EpochEntry(0, 0)]
    finally:
        ticker.cancel()
        await replicas.stop()
        logs.close()


async def test_the_loop_runs_while_the_storage_threads_make_the_next_replicas_files(
    tmp_path: Path,
) -> None:
    logs, replicas = _leading_all(tmp_path)
    release = threading.Event()
    try:
        replicas.on_commit([])
        assert 0 < len(replicas.partitions) < PARTITIONS
        # Every storage thread busy from now on: the logs the apply asks for next wait.
        busy = [file_threads().submit(release.wait, 60) for _ in range(FILE_THREADS)]
        ticks = 0
        async with asyncio.timeout(60):
            while ticks < 50:
                await asyncio.sleep(0.005)
                ticks += 1
        stalled = len(replicas.partitions)
        assert stalled < PARTITIONS
        await asyncio.sleep(0.1)
        # Nothing blocked the loop meanwhile, and the apply waits on the files.
        assert len(replicas.partitions) == stalled
        release.set()
        async with asyncio.timeout(120):
            while len(replicas.partitions) < PARTITIONS:
                await asyncio.sleep(APPLY_SLICE_S)
        assert all(future.result() for future in busy)
        assert all(replicas.partitions[(TOPIC, p)].is_leader for p in range(PARTITIONS))
    finally:
        release.set()
        await replicas.stop()
        logs.close()


async def test_the_replicas_started_and_stopped_are_told_as_the_apply_goes(
    tmp_path: Path,
) -> None:
    logs, replicas = _leading_all(tmp_path)
    told: list[tuple[int, int, bool]] = []
    replicas.hosting_listeners.append(
        lambda started, stopped, image_done: told.append((started, stopped, image_done))
    )
    try:
        replicas.on_commit([])
        # The first slice told of the replicas it started; the image is not done.
        assert told and sum(started for started, _, _ in told) == len(replicas.partitions)
        assert not any(image_done for *_, image_done in told)
        async with asyncio.timeout(120):
            while not told[-1][2]:
                await asyncio.sleep(APPLY_SLICE_S)
        assert len(replicas.partitions) == PARTITIONS
        assert sum(started for started, _, _ in told) == PARTITIONS
        assert sum(stopped for _, stopped, _ in told) == 0
        # Told as it went (a chunk of new replicas at a time), and done once.
        assert len(told) > 10
        assert [image_done for *_, image_done in told].count(True) == 1

        told.clear()
        moved = PartitionState(replicas=(2,), isr=(2,), leader=2)
        replicas.apply(image(dict.fromkeys(range(PARTITIONS), moved)))
        assert replicas.partitions == {}
        assert sum(stopped for _, stopped, _ in told) == PARTITIONS
        assert sum(started for started, _, _ in told) == 0
        assert told[-1] == (0, 0, True)
    finally:
        await replicas.stop()
        logs.close()
