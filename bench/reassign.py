"""Reassignment benchmark: how fast a partition's data moves to another broker, unthrottled and
throttled, and what the move does to produce latency on another partition.

    python -m bench.reassign [--size-mib 1024] [--throttle 20971520] [--rate 200]

Four `kraft serve` processes on 127.0.0.1 (node 1 combined, the quorum's only voter; brokers 2,
3 and 4). A one-partition topic of replication factor 1 on broker 2 is filled with `--size-mib`
MiB, then moved to broker 4 (AlterPartitionReassignments) with no throttle, and back to broker
2 with both replication throttle rates set cluster-wide to `--throttle` bytes/s (dynamic broker
configs). Each move is timed from the request to the partition's replicas and ISR being the
target alone. Meanwhile a producer (confluent-kafka, acks=all, one message of 100 bytes every
1/`--rate` s) writes to another partition, led by broker 2 and replicated to broker 3; its
delivery latency is reported before the moves and during each. Prints one JSON line; every
process is killed at the end.

The throttle measures its rate as Kafka does, over 11 samples of 1 s with a first burst counted
over 10 s: the first 10 s worth of `--throttle` moves at full speed, so a throttled move shows
the rate only with `--size-mib` well above 10 x `--throttle`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaAdminClient, TopicPartition
from kio.schema.errors import ErrorCode

from bench.cluster import Cluster
from controller.client import incremental_alter_configs_request
from controller.records import ConfigResourceType
from net.client import NodeConnection

MOVED = "moved"
LATENCY = "latency"
RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
_VALUE_BYTES = 64 * 1024


def percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 3)


class PacedProducer:
    """Produces one small acks=all message every 1/`rate` s to `topic` in a thread, recording
    (send time, delivery latency in ms) for every delivered message."""

    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
        self._topic = topic
        self._interval = 1 / rate
        self.deliveries: list[tuple[float, float]] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._producer.list_topics(self._topic, timeout=10)
        self._thread.start()

    def stop(self) -> None:
        """Stops sending and waits for what was sent (again: nothing)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(30)
        self._producer.flush(30)

    def latencies(self, start: float, end: float) -> dict[str, Any]:
        """The delivery latencies of the messages sent between `start` and `end`."""
        window = [latency for sent, latency in self.deliveries if start <= sent < end]
        return {
            "messages": len(window),
            "p50_ms": percentile(window, 0.5),
            "p99_ms": percentile(window, 0.99),
            "max_ms": round(max(window), 3) if window else None,
        }

    def _run(self) -> None:
        next_send = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_send:
                self._producer.produce(self._topic, b"x" * 100, on_delivery=self._delivered(now))
                next_send += self._interval
            self._producer.poll(min(0.001, max(0.0, next_send - time.monotonic())))

    def _delivered(self, sent: float) -> Any:
        def record(error: Any, message: Any) -> None:
            if error is not None:
                self.failures += 1
            else:
                self.deliveries.append((sent, message.latency() * 1000))

        return record


def fill(bootstrap: str, size_mib: int) -> None:
    """`size_mib` MiB of 64 KiB values into the moved partition."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20, "batch.size": 1_000_000}
    )
    value = b"r" * _VALUE_BYTES
    for _ in range(size_mib * (1 << 20) // _VALUE_BYTES):
        while True:
            try:
                producer.produce(MOVED, value)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    if producer.flush(300):
        raise RuntimeError("the moved partition could not be filled")


def set_cluster_rates(cluster: Cluster, rate: int | None) -> None:
    """Both throttle rates for every broker (None: deleted), sent by our own client (the Kafka
    clients refuse the cluster-wide resource's empty name); waits until every broker has them."""
    rates = {} if rate is None else dict.fromkeys(RATE_KEYS, str(rate))
    request = incremental_alter_configs_request(
        "", rates, () if rate is not None else RATE_KEYS, resource_type=ConfigResourceType.BROKER
    )

    async def send() -> Any:
        async with NodeConnection("127.0.0.1", cluster.nodes[2].broker_port or 0) as connection:
            return await connection.send(request)

    (result,) = asyncio.run(send()).responses
    if result.error_code != ErrorCode.none:
        raise RuntimeError(f"setting the throttle failed: {result.error_message}")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    expected = str(2**63 - 1 if rate is None else rate)

    def applied(broker_id: int) -> bool:
        resource = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
        (described,) = admin.describe_configs([resource]).values()
        configs = described.result(30)
        return all(configs[key].value == expected for key in RATE_KEYS)

    cluster.wait_for(
        "throttle applied", lambda: all(applied(b) for b in cluster.broker_ids) or None, 30
    )


def partition_state(cluster: Cluster, topic: str) -> dict[str, Any]:
    described = cluster.nodes[1].get(f"/v1/topics/{topic}", timeout=5)
    found: dict[str, Any] = next(p for p in described["partitions"] if p["partition"] == 0)
    return found


def move(
    cluster: Cluster, reassigner: KafkaAdminClient, target: list[int], timeout: float
) -> tuple[float, float]:
    """Moves the partition to `target`: (start, end) monotonic times of the move."""
    partition = TopicPartition(MOVED, 0)
    started = time.monotonic()
    answer = reassigner.alter_partition_reassignments({partition: target})
    if answer != {partition: None}:
        raise RuntimeError(f"the move was refused: {answer}")

    def done() -> bool | None:
        state = partition_state(cluster, MOVED)
        return True if state["replicas"] == target and state["isr"] == target else None

    cluster.wait_for(f"moved to {target}", done, timeout)
    return started, time.monotonic()


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    cluster = Cluster.combined(root, 1, **{"auto.leader.rebalance.enable": "false"})
    cluster.add_brokers([2, 3, 4])
    cluster.start_all()
    paced: PacedProducer | None = None
    reassigner: KafkaAdminClient | None = None
    try:
        cluster.wait_for("brokers unfenced", lambda: cluster.brokers_unfenced(1), 60.0)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for topic, replicas in ((MOVED, [2]), (LATENCY, [2, 3])):
            admin.create_topics([NewTopic(topic, 1, replica_assignment=[replicas])])[topic].result(
                30
            )
        cluster.wait_for(
            "topics led",
            lambda: (
                all(partition_state(cluster, t)["leader"] >= 0 for t in (MOVED, LATENCY)) or None
            ),
        )
        filled = time.monotonic()
        fill(cluster.bootstrap, args.size_mib)
        fill_seconds = time.monotonic() - filled
        reassigner = KafkaAdminClient(
            bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000
        )
        paced = PacedProducer(cluster.bootstrap, LATENCY, args.rate)
        paced.start()
        time.sleep(args.baseline_s)
        baseline_end = time.monotonic()

        size_mb = args.size_mib * (1 << 20) / 1e6
        free_start, free_end = move(cluster, reassigner, [4], args.timeout)
        set_cluster_rates(cluster, args.throttle)
        held_start, held_end = move(cluster, reassigner, [2], args.timeout)
        paced.stop()
        if paced.failures:
            raise RuntimeError(f"{paced.failures} paced messages failed")

        def phase(start: float, end: float) -> dict[str, Any]:
            return {
                "seconds": round(end - start, 2),
                "MB_per_s": round(size_mb / (end - start), 2),
                "produce_latency": paced.latencies(start, end) if paced else None,
            }

        return {
            "bench": "reassign",
            "size_mib": args.size_mib,
            "fill_MB_per_s": round(size_mb / fill_seconds, 2),
            "paced_rate": args.rate,
            "baseline_produce_latency": paced.latencies(
                baseline_end - args.baseline_s, baseline_end
            ),
            "unthrottled": phase(free_start, free_end),
            "throttled": {"throttle_bytes_per_s": args.throttle, **phase(held_start, held_end)},
        }
    finally:
        if paced is not None:
            paced.stop()
        if reassigner is not None:
            reassigner.close()
        cluster.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="data in the moved partition")
    parser.add_argument(
        "--throttle", type=int, default=20 << 20, help="bytes/s of the throttled move"
    )
    parser.add_argument("--rate", type=int, default=200, help="paced produce messages per second")
    parser.add_argument("--baseline-s", type=float, default=3.0)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per move at most")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-reassign-") as directory:
        result = run(args, Path(directory))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
