"""A single-voter quorum over a real metadata log and socket on 127.0.0.1, for tests of what
runs on top of the driver: it elects itself within a fraction of a second."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bench.cluster import free_ports
from kraft.driver import RaftDriver
from kraft.raft import RaftConfig
from storage.log import Log, LogConfig

# Short timeouts: the lone voter elects itself quickly.
FAST = RaftConfig(
    election_timeout_ms=100,
    fetch_timeout_ms=200,
    election_backoff_max_ms=50,
    request_timeout_ms=200,
)


def lone_voter(directory: Path, cluster_id: str, **driver_options: Any) -> tuple[RaftDriver, Log]:
    """Voter 1, alone in its quorum, over a metadata log in `directory` (not started yet);
    `driver_options`: more of RaftDriver's keyword arguments."""
    metadata_log = Log.open(directory / "__cluster_metadata-0", LogConfig(retention_ms=None))
    (port,) = free_ports(1)
    driver = RaftDriver(
        node_id=1,
        cluster_id=cluster_id,
        voters={1: ("127.0.0.1", port)},
        config=FAST,
        metadata_log=metadata_log,
        listen=("127.0.0.1", port),
        **driver_options,
    )
    return driver, metadata_log


@asynccontextmanager
async def leading_voter(
    directory: Path, cluster_id: str, first: list[bytes], **driver_options: Any
) -> AsyncIterator[tuple[RaftDriver, Log]]:
    """`lone_voter` started, leading, with the records `first` committed; stopped (without
    resigning) and its log closed on exit."""
    driver, metadata_log = lone_voter(directory, cluster_id, **driver_options)
    await driver.start()
    try:
        async with asyncio.timeout(30):
            while not driver.is_leader:
                await asyncio.sleep(0.02)
            await driver.append(first)
        yield driver, metadata_log
    finally:
        await driver.stop(resign=False)
        metadata_log.close()


@pytest.fixture
async def elected(tmp_path: Path) -> AsyncIterator[tuple[RaftDriver, Log]]:
    """A lone voter that elected itself and committed an append; stopped afterwards."""
    async with leading_voter(tmp_path, "elected", [b"first"]) as voter:
        yield voter
