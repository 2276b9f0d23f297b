"""A produce over thousands of partitions appends in slices with the event loop free between
them (the first batch of a new partition makes its segment file and epoch checkpoint), and the
produces of one connection still append in the order they came, as Kafka handles a
connection's requests in order and an idempotent producer's pipelined batches count on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker import replica_manager
from controller.partition_state import PartitionState
from tests.broker.replicas import TOPIC, Broker, batch, image, values

PARTITIONS = 1_000
LED = PartitionState(replicas=(1,), isr=(1,), leader=1)


def _leader(tmp_path: Path) -> Broker:
    broker = Broker(1, tmp_path)
    broker.apply(image(dict.fromkeys(range(PARTITIONS), LED)))
    return broker


def _everywhere(value: bytes) -> list[tuple[str, int, bytes | None]]:
    return [(TOPIC, p, batch(value)) for p in range(PARTITIONS)]


async def test_a_produce_to_thousands_of_new_partitions_lets_the_loop_run_between_slices(
    tmp_path: Path,
) -> None:
    broker = _leader(tmp_path)
    try:
        produce = asyncio.create_task(broker.replicas.produce(1, 1_000, _everywhere(b"a")))
        seen: list[int] = []
        while not produce.done():
            seen.append(sum(broker.partition(p).log.log_end_offset for p in range(PARTITIONS)))
            await asyncio.sleep(0)
        assert all(result.base_offset == 0 for result in await produce)
        assert len([count for count in seen if 0 < count < PARTITIONS]) > 1
    finally:
        broker.close()


async def test_the_produces_of_one_connection_append_in_the_order_they_came(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = _leader(tmp_path)
    # Every partition's append a slice of its own: each produce lets others run between them.
    monkeypatch.setattr(replica_manager, "APPLY_SLICE_S", 0.0)
    last = PARTITIONS - 1
    try:
        # The second, pipelined behind the first on the same connection, writes the partition
        # the first writes last.
        first = asyncio.create_task(
            broker.replicas.produce(1, 1_000, _everywhere(b"first"), connection_id=7)
        )
        second = asyncio.create_task(
            broker.replicas.produce(1, 1_000, [(TOPIC, last, batch(b"second"))], connection_id=7)
        )
        await asyncio.gather(first, second)
        assert values(broker.partition(last).log) == [b"first", b"second"]
        # Another connection's produce is not held behind them.
        third = asyncio.create_task(
            broker.replicas.produce(1, 1_000, _everywhere(b"third"), connection_id=7)
        )
        other = asyncio.create_task(
            broker.replicas.produce(1, 1_000, [(TOPIC, last, batch(b"other"))], connection_id=8)
        )
        await asyncio.gather(third, other)
        assert values(broker.partition(last).log) == [b"first", b"second", b"other", b"third"]
    finally:
        broker.close()
