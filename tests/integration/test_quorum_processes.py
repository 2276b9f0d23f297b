"""Three `kraft serve` controller processes: election, SIGKILL failover, restart and catch-up."""

from __future__ import annotations

import shutil
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.cluster import Cluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    started = Cluster.controllers(tmp_path, 3)
    try:
        yield started
    finally:
        started.stop_all()


def test_leader_failover_and_catch_up(cluster: Cluster) -> None:
    cluster.start_all()
    leader, epoch, high_watermark = cluster.wait_for("a first leader", cluster.agreed_leader)

    cluster.kill(leader)
    survivors = cluster.running()
    # A follower that still names the dead leader answers /v1/quorum at once with its own
    # view, replica progress unknown (-1), rather than hanging on DescribeQuorum.
    started = time.monotonic()
    view = cluster.nodes[survivors[0]].get("/v1/quorum", timeout=3.0)
    assert time.monotonic() - started < 2.0
    if view["leader_id"] == leader:
        assert {voter["log_end_offset"] for voter in view["voters"]} == {-1}

    def new_leader_committed() -> tuple[int, int, int] | None:
        agreed = cluster.agreed_leader(survivors)
        # The new leader commits its own LeaderChange entry: the high watermark moves on.
        return agreed if agreed is not None and agreed[2] > high_watermark else None

    new_leader, new_epoch, new_high_watermark = cluster.wait_for(
        "a new leader among the survivors to commit", new_leader_committed
    )
    assert new_leader != leader
    assert new_epoch > epoch

    cluster.start(leader)

    def caught_up() -> bool:
        view = cluster.nodes[new_leader].quorum()
        restarted = cluster.nodes[leader].quorum()
        if view is None or restarted is None or restarted["leader_id"] != new_leader:
            return False
        progress: dict[int, int] = {
            voter["id"]: voter["log_end_offset"] for voter in view["voters"]
        }
        high_watermark: int = view["high_watermark"]
        return progress[leader] >= high_watermark >= new_high_watermark

    cluster.wait_for("the old leader to catch up", caught_up)

    # Every node's /v1/quorum reports the leader's view of progress (a non-leader asks the
    # leader with DescribeQuorum): once caught up, all three agree on the voters' log ends.
    def same_progress_everywhere() -> dict[int, int] | None:
        views = [node.quorum() for node in cluster.nodes.values()]
        if any(view is None for view in views):
            return None
        progress = [
            {voter["id"]: voter["log_end_offset"] for voter in view["voters"]}
            for view in views
            if view is not None
        ]
        if any(offsets != progress[0] for offsets in progress):
            return None
        return progress[0] if all(offset >= 0 for offset in progress[0].values()) else None

    offsets = cluster.wait_for("every node to report the same progress", same_progress_everywhere)
    assert set(offsets) == set(cluster.nodes)
    view = cluster.nodes[leader].quorum()
    assert view is not None
    now_ms = time.time() * 1000
    for voter in view["voters"]:
        # Wall-clock epoch milliseconds, not the driver's monotonic loop time.
        assert abs(voter["last_caught_up_ms"] - now_ms) < 60_000


def test_sigterm_stops_cleanly_and_restarts_from_the_marker(cluster: Cluster) -> None:
    cluster.start_all()
    cluster.wait_for("a leader", cluster.agreed_leader)
    for node_id in list(cluster.nodes):
        assert cluster.terminate(node_id) == 0
        assert (cluster.nodes[node_id].data_dir / ".kraft_cleanshutdown").exists()
    cluster.start_all()
    cluster.wait_for("a leader after a full restart", cluster.agreed_leader)
    log = cluster.nodes[1].log_path.read_text()
    assert '"clean_shutdown": true' in log


def test_bad_configuration_exits_before_touching_data(tmp_path: Path) -> None:
    cluster = Cluster.controllers(tmp_path, 1, **{"min.insync.replicas": "zero"})
    cluster.start(1)
    process = cluster.nodes[1].process
    assert process is not None
    assert process.wait(timeout=30) == 2
    assert "min.insync.replicas" in cluster.nodes[1].log_path.read_text()
    assert not cluster.nodes[1].data_dir.exists()


def test_a_wiped_voter_catches_up_through_a_snapshot(tmp_path: Path) -> None:
    # A tiny snapshot threshold and a fast idle NoOp interval make the leader snapshot (and
    # delete its log prefix) about every second.
    cluster = Cluster.controllers(
        tmp_path,
        3,
        **{
            "metadata.log.max.record.bytes.between.snapshots": "2048",
            "metadata.max.idle.interval.ms": "20",
        },
    )
    try:
        cluster.start_all()
        leader, _, _ = cluster.wait_for("a leader", cluster.agreed_leader)
        leader_dir = metadata_dir(cluster, leader)

        def leader_replaced_a_snapshot() -> bool:
            # The older snapshot is deleted once the Ready that superseded it is sent.
            log = cluster.nodes[leader].log_path.read_text()
            return (
                log.count('"raft_snapshot_created"') >= 2
                and '"raft_snapshot_deleted"' in log
                and bool(snapshots(leader_dir))
            )

        cluster.wait_for("the leader to take and replace snapshots", leader_replaced_a_snapshot)
        # Older snapshots go once a newer one exists.
        assert len(snapshots(leader_dir)) <= 2

        victim = next(node_id for node_id in cluster.nodes if node_id != leader)
        cluster.kill(victim)
        shutil.rmtree(cluster.nodes[victim].data_dir)
        victim_log = cluster.nodes[victim].log_path
        victim_log.write_text("")
        cluster.start(victim)

        def loaded_snapshot() -> bool:
            return '"raft_snapshot_loaded"' in victim_log.read_text()

        cluster.wait_for("the wiped voter to load the leader's snapshot", loaded_snapshot)
        victim_dir = metadata_dir(cluster, victim)
        loaded = snapshots(victim_dir)
        assert loaded and all(path.name.endswith(".checkpoint") for path in loaded)
        # The loaded snapshot restarted the log at its end offset: the log starts above 0.
        segment_bases = [int(path.stem) for path in victim_dir.glob("*.log")]
        assert segment_bases and min(segment_bases) > 0

        def victim_caught_up() -> bool:
            view = cluster.nodes[leader].quorum()
            if view is None or view["leader_id"] != leader:
                return False
            progress: dict[int, int] = {
                voter["id"]: voter["log_end_offset"] for voter in view["voters"]
            }
            high_watermark: int = view["high_watermark"]
            return progress[victim] >= high_watermark > min(segment_bases)

        cluster.wait_for("the wiped voter to reach the leader's high watermark", victim_caught_up)

        # A crash and restart with the data kept: the node starts from its latest snapshot and
        # the log above it, and catches up again.
        cluster.kill(victim)
        victim_log.write_text("")
        cluster.start(victim)
        cluster.wait_for(
            "the restarted voter to open its snapshot",
            lambda: '"raft_snapshot_opened"' in victim_log.read_text(),
        )
        cluster.wait_for("the restarted voter to catch up again", victim_caught_up)
    finally:
        cluster.stop_all()


def metadata_dir(cluster: Cluster, node_id: int) -> Path:
    return cluster.nodes[node_id].data_dir / "__cluster_metadata-0"


def snapshots(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.checkpoint")) if directory.exists() else []


def test_the_controller_listener_enforces_socket_request_max_bytes(tmp_path: Path) -> None:
    cluster = Cluster.controllers(tmp_path, 1, **{"socket.request.max.bytes": "1024"})
    try:
        cluster.start_all()
        cluster.wait_for("a leader", cluster.agreed_leader)
        config = cluster.nodes[1].config_path.read_text()
        port = int(config.split("controller.listener=127.0.0.1:")[1].split()[0])
        # ApiVersions v0 with correlation id 7: well under the limit, answered.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as small:
            small.sendall(struct.pack(">ihhih", 10, 18, 0, 7, 0))
            size = struct.unpack(">i", small.recv(4))[0]
            assert size > 0
        # Announcing a 2048-byte frame is over the limit: the connection is closed at once,
        # where a node without the limit would wait for the body (and this read time out).
        with socket.create_connection(("127.0.0.1", port), timeout=5) as large:
            large.sendall(struct.pack(">i", 2048))
            assert large.recv(4) == b""
    finally:
        cluster.stop_all()
