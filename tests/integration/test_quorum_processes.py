"""Three `kraft serve` controller processes: election, SIGKILL failover, restart and catch-up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster


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
        progress = {voter["id"]: voter["log_end_offset"] for voter in view["voters"]}
        return progress[leader] >= view["high_watermark"] >= new_high_watermark

    cluster.wait_for("the old leader to catch up", caught_up)


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
