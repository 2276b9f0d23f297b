"""A single-voter quorum over a real metadata log and socket on 127.0.0.1, for tests of what
runs on top of the driver: it elects itself within a fraction of a second."""

from __future__ import annotations

from pathlib import Path

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


def lone_voter(directory: Path, cluster_id: str) -> tuple[RaftDriver, Log]:
    """Voter 1, alone in its quorum, over a metadata log in `directory` (not started yet)."""
    metadata_log = Log.open(directory / "__cluster_metadata-0", LogConfig(retention_ms=None))
    (port,) = free_ports(1)
    driver = RaftDriver(
        node_id=1,
        cluster_id=cluster_id,
        voters={1: ("127.0.0.1", port)},
        config=FAST,
        metadata_log=metadata_log,
        listen=("127.0.0.1", port),
    )
    return driver, metadata_log
