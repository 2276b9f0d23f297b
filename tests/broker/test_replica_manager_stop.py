"""A replica manager stopped by the node's shutdown stays stopped while the quorum runs on."""

from __future__ import annotations

from pathlib import Path

from broker.replica_manager import ReplicaManager
from controller.image import MetadataReplayer
from controller.partition_state import PartitionState
from controller.topic_config import KAFKA_DEFAULTS
from storage.log import LogConfig
from storage.log_manager import LogManager
from tests.broker.replicas import TOPIC, image

BROKER = 1
CONFIG = LogConfig()


async def test_a_stopped_replica_manager_applies_no_later_metadata(tmp_path: Path) -> None:
    # The quorum commits on after the replicas stop (the node stops it last): a commit then
    # must not create the replica, nor a fetcher that would outlive the node's shutdown.
    later = image({0: PartitionState(replicas=(2, BROKER), isr=(2, BROKER), leader=2)})
    replayer = MetadataReplayer(later)
    logs = LogManager.open([tmp_path / "data"], CONFIG)
    manager = ReplicaManager(BROKER, logs, replayer, CONFIG, KAFKA_DEFAULTS)

    await manager.stop()
    manager.on_commit([])

    assert manager.partitions == {}
    assert logs.logs == {}
    # Not stopped, the same commit creates it.
    running = ReplicaManager(BROKER, logs, replayer, CONFIG, KAFKA_DEFAULTS)
    running.on_commit([])
    assert list(running.partitions) == [(TOPIC, 0)]
    await running.stop()
