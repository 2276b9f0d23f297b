"""An idempotent producer's retries against real `kraft serve` processes, answered as Kafka
answers them: a retried batch gets its first write's offset once that write is committed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from bench.cluster import Cluster
from net.client import NodeConnection
from net.records import Record, encode_batch
from tests.integration.test_produce_consume import (
    create_topic,
    init_producer_id,
    produce_request,
)


async def produce(connection: NodeConnection, records: bytes, timeout_ms: int) -> tuple[Any, int]:
    response: Any = await connection.send(
        produce_request("retried", records, timeout_ms=timeout_ms)
    )
    answer = response.responses[0].partition_responses[0]
    return ErrorCode(answer.error_code), answer.base_offset


@pytest.mark.timeout(120)
async def test_a_committed_batch_retried_behind_an_uncommitted_one_is_acknowledged(
    tmp_path: Path,
) -> None:
    """A follower stalls (it stays in the ISR for replica.lag.time.max.ms), so batch "b" cannot
    commit; the producer's retry of "a", committed before the stall, is answered NONE with a's
    offset at once, as Kafka answers it, not REQUEST_TIMED_OUT for want of b."""
    cluster = Cluster.combined(tmp_path, 3, **{"replica.lag.time.max.ms": "30000"})
    cluster.start_all()
    connection: NodeConnection | None = None
    try:
        await asyncio.to_thread(
            cluster.wait_for, "brokers unfenced", cluster.brokers_unfenced, 60.0
        )
        await asyncio.to_thread(
            create_topic,
            cluster,
            "retried",
            1,
            replication_factor=3,
            configs={"min.insync.replicas": "2"},
        )
        state = cluster.nodes[1].get("/v1/topics/retried/partitions/0")
        leader = state["leader"]
        connection = NodeConnection("127.0.0.1", cluster.nodes[leader].broker_port or 0)
        producer_id, epoch = await init_producer_id(connection)

        def batch(value: bytes, sequence: int) -> bytes:
            return encode_batch(
                [Record(value)],
                producer_id=producer_id,
                producer_epoch=epoch,
                base_sequence=sequence,
            )

        assert await produce(connection, batch(b"a", 0), 10_000) == (ErrorCode.none, 0)
        stalled = next(node for node in state["isr"] if node != leader)
        cluster.pause(stalled)
        try:
            pending = asyncio.create_task(produce(connection, batch(b"b", 1), 20_000))
            await asyncio.sleep(0.5)
            # The producer gave up on its first connection and retries on a new one (a
            # connection answers in request order, so not on the one b waits on).
            retry = NodeConnection("127.0.0.1", cluster.nodes[leader].broker_port or 0)
            try:
                retried = await asyncio.wait_for(produce(retry, batch(b"a", 0), 3_000), 10)
            finally:
                await retry.close()
            assert retried == (ErrorCode.none, 0)
            assert not pending.done()
        finally:
            cluster.resume(stalled)
        assert await asyncio.wait_for(pending, 20) == (ErrorCode.none, 1)
    finally:
        if connection is not None:
            await connection.close()
        cluster.stop_all()
