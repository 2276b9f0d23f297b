"""The start-up fence (async-storage-and-recovery.txt 5.2): a restarted broker leads nothing,
and serves no client, before the controller has its new incarnation registered.

The metadata a broker replays from its own log at start-up may still name it the leader of
partitions it led before a crash. Found by the fault suite (issue 19): a leader that lost its
unflushed tail in a power cut restarted, acted on that image within its old broker session,
took writes at offsets its followers already held, and the high watermark acknowledged them;
the controller then moved the leadership away and those acknowledged writes were gone.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from kio.schema.errors import ErrorCode

from bench.cluster import Cluster
from net.client import KafkaConnectionError, NodeConnection
from net.records import Record, encode_batch
from tests.integration.test_produce_consume import create_topic, produce_answer
from tests.integration.test_replication import partition_state, wait_for_partition_state

TOPIC = "fenced"


async def test_a_restarted_leader_takes_no_write_until_its_registration_is_replayed(
    tmp_path: Path,
) -> None:
    # A long session, so the old incarnation's session outlives the restart by seconds.
    cluster = Cluster.combined(
        tmp_path,
        3,
        **{"broker.session.timeout.ms": "8000", "broker.heartbeat.interval.ms": "500"},
    )
    cluster.start_all()
    try:
        await asyncio.to_thread(cluster.wait_for, "brokers unfenced", cluster.brokers_unfenced)
        await asyncio.to_thread(create_topic, cluster, TOPIC, 1, replication_factor=3)
        state = await asyncio.to_thread(
            wait_for_partition_state, cluster, 1, TOPIC, "a leader", lambda s: s["leader"] >= 0
        )
        leader = state["leader"]
        cluster.kill(leader)
        cluster.start(leader)
        port = cluster.nodes[leader].broker_port or 0
        other = next(node_id for node_id in cluster.nodes if node_id != leader)
        answers: list[ErrorCode] = []
        deadline = time.monotonic() + 30
        # Until the controller has handled the new incarnation's registration (which moves
        # its leaderships: the partition's leader epoch grows), every write to it is refused.
        while partition_state(cluster, other, TOPIC)["leader_epoch"] == state["leader_epoch"]:
            assert time.monotonic() < deadline, f"no new leader epoch; answers {answers}"
            connection = NodeConnection("127.0.0.1", port, request_timeout=5)
            try:
                error, _ = await produce_answer(
                    connection, TOPIC, encode_batch([Record(b"after-restart")])
                )
                answers.append(error)
            except KafkaConnectionError:
                await asyncio.sleep(0.1)
            finally:
                await connection.close()
        # It answers nothing before its registration is replayed (its listener accepts no
        # connection yet), and certainly acknowledges nothing.
        assert ErrorCode.none not in answers, answers
        # Then it serves again: a client gets a real answer from it.
        await asyncio.to_thread(
            cluster.wait_for, "the restarted broker ready", lambda: cluster.ready(leader)
        )
        connection = NodeConnection("127.0.0.1", port, request_timeout=5)
        try:
            error, _ = await produce_answer(connection, TOPIC, encode_batch([Record(b"later")]))
        finally:
            await connection.close()
        assert error in (ErrorCode.none, ErrorCode.not_leader_or_follower)
    finally:
        cluster.stop_all()
