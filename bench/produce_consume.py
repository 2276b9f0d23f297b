"""Data-plane benchmark: produce and consume through real brokers with confluent-kafka.

    python -m bench.produce_consume [--count 1000000] [--size 100] [--rates 1000,5000]

Two setups, each on fresh `kraft serve` processes on 127.0.0.1:
1. one node, a one-partition topic of replication factor 1, acks=1;
2. three nodes, a one-partition topic of replication factor 3, acks=all.

For each: produce throughput and delivery latency (librdkafka's per-message latency, p50/p99;
the producer is saturated, so this includes client queueing), consume throughput from offset
0, end-to-end latency (produce call to consumer receipt) of runs paced at each of `--rates`
(linger.ms=0, so about one message per produce request: past what the leader can answer one
request at a time, the latency is queueing), and the CPU seconds the broker processes used per
million messages produced and consumed. Prints one JSON line per setup. Every process is
killed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(cluster: Cluster) -> float:
    """User plus system CPU seconds of the running node processes."""
    total = 0
    for node in cluster.nodes.values():
        if node.process is None:
            continue
        fields = Path(f"/proc/{node.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / _CLOCK_TICKS


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 3)


def produce(bootstrap: str, topic: str, count: int, payload: bytes, acks: str) -> dict[str, Any]:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "batch.size": 1_000_000}
    )
    latencies: list[float] = []
    failures = 0

    def delivered(error: Any, message: Any) -> None:
        nonlocal failures
        if error is not None:
            failures += 1
        else:
            latencies.append(message.latency() * 1000)

    started = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, payload, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush(120)
    seconds = time.perf_counter() - started
    if failures or len(latencies) != count:
        raise RuntimeError(f"{failures} failed, {count - len(latencies)} undelivered")
    return {
        "msgs_per_s": round(count / seconds),
        "MB_per_s": round(count * len(payload) / seconds / 1e6, 2),
        "latency_ms": {"p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)},
    }


def consumer(bootstrap: str, topic: str) -> Consumer:
    client = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 10,
        }
    )
    client.assign([TopicPartition(topic, 0, 0)])
    return client


def consume(bootstrap: str, topic: str, count: int) -> dict[str, Any]:
    client = consumer(bootstrap, topic)
    received = 0
    started = time.perf_counter()
    deadline = started + 120
    while received < count and time.perf_counter() < deadline:
        for message in client.consume(10_000, 1.0):
            if message.error() is None:
                received += 1
    seconds = time.perf_counter() - started
    client.close()
    if received != count:
        raise RuntimeError(f"consumed {received} of {count}")
    return {"msgs_per_s": round(count / seconds)}


def end_to_end(bootstrap: str, topic: str, acks: str, rate: int, count: int) -> dict[str, Any]:
    """Produce call to consumer receipt, paced at `rate` messages per second."""
    client = consumer(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 0})
    # Both clients connected and the consumer fetching before the clock starts.
    producer.list_topics(topic, timeout=10)
    client.consume(1, 1.0)
    latencies: list[float] = []
    interval = 1 / rate
    next_send = time.perf_counter()
    sent = 0
    deadline = time.perf_counter() + count / rate + 30
    while len(latencies) < count and time.perf_counter() < deadline:
        now = time.perf_counter()
        if sent < count and now >= next_send:
            producer.produce(topic, str(time.perf_counter()).encode())
            producer.poll(0)
            sent += 1
            next_send += interval
        for message in client.consume(100, 0.0005):
            value = message.value()
            if message.error() is None and value:
                latencies.append((time.perf_counter() - float(value)) * 1000)
    producer.flush(30)
    client.close()
    return {
        "rate": rate,
        "p50_ms": percentile(latencies, 0.5),
        "p99_ms": percentile(latencies, 0.99),
    }


def run(nodes: int, acks: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    cluster = Cluster.combined(root, nodes)
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", cluster.brokers_unfenced, 60.0)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topics = ["throughput", *(f"latency-{rate}" for rate in args.rates)]
        for topic in topics:
            admin.create_topics([NewTopic(topic, 1, nodes)])[topic].result(30)

        def led(topic: str) -> bool:
            partitions = admin.list_topics(topic, timeout=5).topics[topic].partitions
            return 0 in partitions and partitions[0].leader >= 0

        cluster.wait_for("topics led", lambda: all(led(topic) for topic in topics))
        cpu_before = cpu_seconds(cluster)
        produced = produce(cluster.bootstrap, "throughput", args.count, b"x" * args.size, acks)
        consumed = consume(cluster.bootstrap, "throughput", args.count)
        cpu = cpu_seconds(cluster) - cpu_before
        latency = [
            end_to_end(cluster.bootstrap, f"latency-{rate}", acks, rate, rate * 5)
            for rate in args.rates
        ]
        return {
            "bench": "produce_consume",
            "nodes": nodes,
            "replication_factor": nodes,
            "acks": acks,
            "count": args.count,
            "size": args.size,
            "produce": produced,
            "consume": consumed,
            "end_to_end": latency,
            "broker_cpu_s_per_million": round(cpu / (args.count / 1e6), 2),
        }
    finally:
        cluster.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument(
        "--rates",
        type=lambda text: [int(rate) for rate in text.split(",")],
        default=[1_000, 5_000],
        help="messages per second of the end-to-end latency runs, comma-separated",
    )
    args = parser.parse_args()
    for nodes, acks in ((1, "1"), (3, "all")):
        with tempfile.TemporaryDirectory(prefix="bench-produce-consume-") as directory:
            result = run(nodes, acks, args, Path(directory))
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
