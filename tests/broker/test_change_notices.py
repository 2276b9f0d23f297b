"""Every change a fetch could see is noticed (`ReplicaManager.change_listeners`): the fetch
sessions read only the partitions they are told changed, with no periodic full read behind
them. Brokers run in this process (`tests.broker.replicas`)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.log_maintenance import LogMaintenance, MaintenanceConfig
from broker.partition import Partition
from broker.replica_manager import CONSUMER_REPLICA_ID, FetchPartition
from controller.partition_state import PartitionState
from tests.broker.replicas import TOPIC, Broker, batch, image, settle


def noticed(broker: Broker) -> list[int]:
    """The partition ids of the changes `broker`'s replicas report, as they come."""
    changed: list[int] = []

    def listener(partition: Partition, high_watermark_only: bool) -> None:
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


# -- a sessionless long poll re-reads only what the journal says changed ------------------------

_ACTIONS = st.lists(
    st.tuples(st.sampled_from(["append", "delete", "idle"]), st.integers(0, 3)), max_size=8
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _ACTIONS,
    st.sampled_from([1, 150, 100_000]),
    st.sampled_from([120, 100_000]),
    st.lists(st.integers(0, 2), min_size=4, max_size=4),
)
def test_a_sessionless_long_poll_answers_what_a_full_read_would(
    actions: list[tuple[str, int]], min_bytes: int, max_bytes: int, written: list[int]
) -> None:
    asyncio.run(_long_poll_against_full_reads(actions, min_bytes, max_bytes, written))


async def _long_poll_against_full_reads(
    actions: list[tuple[str, int]], min_bytes: int, max_bytes: int, written: list[int]
) -> None:
    """A consumer's fetch of four partitions (each with `written` records already, read
    from its end) waits while `actions` change them; once it answers, its answer is what a
    full read of every partition gives at that moment."""
    with tempfile.TemporaryDirectory() as root:
        broker = Broker(1, Path(root))
        state = PartitionState(replicas=(1,), isr=(1,), leader=1)
        broker.apply(image(dict.fromkeys(range(4), state)))
        for partition_id, count in enumerate(written):
            for value in range(count):
                await broker.replicas.produce(
                    1, 1_000, [(TOPIC, partition_id, batch(b"%d" % value))]
                )
        requests = [
            FetchPartition(TOPIC, p, count, 100_000, current_leader_epoch=0)
            for p, count in enumerate(written)
        ]
        fetch = asyncio.ensure_future(
            broker.replicas.fetch(CONSUMER_REPLICA_ID, 150, min_bytes, max_bytes, requests)
        )
        try:
            for action, partition_id in [("idle", 0), *actions]:
                await settle()
                if fetch.done():
                    break
                partition = broker.partition(partition_id)
                if action == "append":
                    await broker.replicas.produce(1, 1_000, [(TOPIC, partition_id, batch(b"a"))])
                elif action == "delete" and partition.high_watermark > partition.log_start_offset:
                    partition.delete_records(partition.log_start_offset + 1)
            else:
                await asyncio.wait_for(asyncio.shield(fetch), 10)
            assert fetch.result() == broker.replicas.read_now(
                CONSUMER_REPLICA_ID, max_bytes, requests
            )
        finally:
            fetch.cancel()
            broker.close()
