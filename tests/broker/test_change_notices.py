"""Every change a fetch could see is noticed (`ReplicaManager.change_listeners`): the fetch
sessions read only the partitions they are told changed, with no periodic full read behind
them. Brokers run in this process (`tests.broker.replicas`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.log_maintenance import LogMaintenance, MaintenanceConfig
from broker.partition import Partition
from controller.partition_state import PartitionState
from tests.broker.replicas import TOPIC, Broker, batch, image


def noticed(broker: Broker) -> list[int]:
    """The partition ids of the changes `broker`'s replicas report, as they come."""
    changed: list[int] = []

    def listener(partition: Partition) -> None:
        changed.append(partition.partition_id)

    broker.replicas.change_listeners.append(listener)
    return changed


async def test_retention_moving_the_log_start_is_noticed(tmp_path: Path) -> None:
    broker = Broker(1, tmp_path)
    state = PartitionState(replicas=(1,), isr=(1,), leader=1)
    broker.apply(image({0: state, 1: state}, configs={"retention.bytes": "1"}))
    kept, trimmed = broker.partition(0).log, broker.partition(1).log
    await broker.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"a")), (TOPIC, 1, batch(b"a"))])
    trimmed.roll()
    await broker.replicas.produce(1, 1_000, [(TOPIC, 1, batch(b"b"))])
    assert (kept.high_watermark, trimmed.high_watermark) == (1, 2)
    changed = noticed(broker)
    maintenance = LogMaintenance(
        broker.logs,
        broker.replicas,
        MaintenanceConfig(retention_check_interval_ms=10, cleaner_enabled=False),
    )
    maintenance.start()
    try:
        for _ in range(500):
            if trimmed.log_start_offset == 1:
                break
            await asyncio.sleep(0.01)
        assert trimmed.log_start_offset == 1
        # Only the partition whose log start moved is reported (the one-segment log keeps its
        # active segment).
        assert changed == [1]
        assert kept.log_start_offset == 0
    finally:
        await maintenance.stop()
        broker.close()


async def test_a_followers_truncation_and_restart_are_noticed(tmp_path: Path) -> None:
    broker = Broker(2, tmp_path)
    broker.apply(image({0: PartitionState(replicas=(1, 2), isr=(1, 2), leader=1)}))
    partition = broker.partition()
    partition.append_from_leader(_leader_batches(tmp_path), 0)
    assert partition.log_end_offset == 2
    changed = noticed(broker)
    partition.truncate_to(1)
    assert (partition.log_end_offset, changed) == (1, [0])
    partition.restart_at(5)
    assert (partition.log_end_offset, changed) == (5, [0, 0])


def _leader_batches(root: Path) -> bytes:
    """Two batches as a leader's log holds them (offsets 0 and 1, leader epoch 0)."""
    leader = Broker(1, root)
    leader.apply(image({0: PartitionState(replicas=(1, 2), isr=(1, 2), leader=1)}))
    for value in (b"a", b"b"):
        leader.partition().append_as_leader(batch(value))
    pieces = b"".join(piece.read() for piece, _ in leader.partition().log.batches(0))
    leader.close()
    return pieces
