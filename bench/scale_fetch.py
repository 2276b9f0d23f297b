"""Fetch path at scale: one busy partition beside thousands of idle ones (issue 23, rows 3-4).

    python -m bench.scale_fetch [--partitions 3000] [--count 500000]

On three fresh combined `kraft serve` nodes (min.insync.replicas 2), with kcat (acks=all,
linger.ms 5, 100-byte lines):
1. the baseline: `--count` messages into a one-partition topic of replication factor 3 on the
   fresh cluster;
2. a topic of `--partitions` partitions (RF 3) is created and waited for until every partition
   has a leader (`create_s`) and every node hosts its replicas; then `--count` messages into a
   second one-partition topic (created with the first) beside it;
3. `--count` messages spread over the `--partitions` partitions (librdkafka's partitioner).

Prints one JSON object: msg/s of each run and the ratios to the baseline, and the fetch
session counters of each node's metrics. kcat runs with the librdkafka of the installed
confluent-kafka wheel (`bench.kcat`). Every process is killed at the end.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster, compile_node_packages
from bench.kcat import kcat_produce, librdkafka_environment

_MESSAGE_SIZE = 100


def _all_led(admin: AdminClient, topic: str, partitions: int) -> bool:
    described = admin.list_topics(topic, timeout=10).topics.get(topic)
    if described is None or described.error is not None:
        return False
    led = [p for p in described.partitions.values() if p.leader >= 0]
    return len(led) == partitions


def create_topic(cluster: Cluster, admin: AdminClient, topic: str, partitions: int) -> float:
    """Seconds until every partition of the new topic (RF 3) has a leader."""
    started = time.perf_counter()
    admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(60)
    cluster.wait_for(f"{topic} led", lambda: _all_led(admin, topic, partitions), 300.0)
    return time.perf_counter() - started


def _metric_lines(cluster: Cluster, node_id: int) -> list[str]:
    node = cluster.nodes[node_id]
    url = f"http://{node.host}:{node.admin_port}/metrics"
    with urllib.request.urlopen(url, timeout=30) as response:
        return [line for line in response.read().decode().splitlines() if line[:1] != "#"]


def hosted_everywhere(cluster: Cluster, topic: str, partitions: int) -> bool:
    """Every node hosts a replica of each partition of `topic` (their logs are created)."""
    needle = f'topic="{topic}"'
    return all(
        sum(
            1
            for line in _metric_lines(cluster, node_id)
            if line.startswith("kraft_partition_log_end_offset{") and needle in line
        )
        == partitions
        for node_id in cluster.nodes
    )


def fetch_session_metrics(cluster: Cluster) -> dict[int, dict[str, float]]:
    """Each node's `kraft_fetch_session*` metrics (none on a broker without sessions)."""
    metrics: dict[int, dict[str, float]] = {}
    for node_id in cluster.nodes:
        metrics[node_id] = {
            name: float(value)
            for name, _, value in (line.partition(" ") for line in _metric_lines(cluster, node_id))
            if name.startswith("kraft_fetch_session")
        }
    return metrics


def measure(root: Path, partitions: int = 3000, count: int = 500_000) -> dict[str, Any]:
    """Run the three measurements on a fresh 3-node cluster under `root`; the result dict."""
    environment = librdkafka_environment(root)
    lines = root / "lines.txt"
    lines.write_bytes((b"x" * (_MESSAGE_SIZE - 1) + b"\n") * count)
    cluster = Cluster.combined(
        root, 3, **{"min.insync.replicas": "2", "default.replication.factor": "3"}
    )
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", cluster.brokers_unfenced, 60.0)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        create_topic(cluster, admin, "baseline", 1)
        # Created now: a creation under the load of thousands of partitions is not measured here.
        create_topic(cluster, admin, "busy", 1)
        baseline = kcat_produce(cluster.bootstrap, "baseline", lines, count, environment)
        create_s = create_topic(cluster, admin, "idle", partitions)
        # The steady state: every replica's log exists before the busy partition is measured.
        cluster.wait_for(
            "idle replicas hosted", lambda: hosted_everywhere(cluster, "idle", partitions), 300.0
        )
        beside_idle = kcat_produce(cluster.bootstrap, "busy", lines, count, environment)
        spread = kcat_produce(cluster.bootstrap, "idle", lines, count, environment, partition=None)
        return {
            "bench": "scale_fetch",
            "partitions": partitions,
            "count": count,
            "size": _MESSAGE_SIZE,
            "baseline_msg_s": round(baseline),
            "create_s": round(create_s, 2),
            "beside_idle_msg_s": round(beside_idle),
            "beside_idle_ratio": round(beside_idle / baseline, 3),
            "spread_msg_s": round(spread),
            "spread_ratio": round(spread / baseline, 3),
            "fetch_sessions": fetch_session_metrics(cluster),
        }
    finally:
        cluster.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=3000)
    parser.add_argument("--count", type=int, default=500_000)
    args = parser.parse_args()
    compile_node_packages()
    with tempfile.TemporaryDirectory(prefix="bench-scale-fetch-") as directory:
        print(json.dumps(measure(Path(directory), args.partitions, args.count)))


if __name__ == "__main__":
    main()
