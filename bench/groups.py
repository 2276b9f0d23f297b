"""Group coordinator benchmark: rebalance time, and offset commits per second.

    python -m bench.groups [--rounds 5] [--seconds 5] [--in-flight 1,32]

Two setups, each on fresh `kraft serve` processes on 127.0.0.1 with a one-partition
`__consumer_offsets` (so one coordinator serves every group): one node, and three nodes with
the offsets topic replicated three times (commits are acks=all writes, so they wait for the
followers).

1. Stabilize: two librdkafka members of a group own a 6-partition topic; a third subscribes,
   and the time until the three together own every partition exactly once, each some, is
   measured; it then leaves (LeaveGroup) and the two take its partitions back. Members learn of
   a rebalance from a heartbeat answer, so their `heartbeat.interval.ms` (100 here; librdkafka's
   default is 3000) bounds this time from below. Median, min and max of `--rounds`.
2. Commits: OffsetCommit requests (simple-consumer commits of one partition each, from 64
   groups) pipelined on one connection to the coordinator, at each of `--in-flight` requests
   outstanding, for `--seconds`: commits per second and latency p50/p99.

Prints one JSON line per setup. Every process is killed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from bench.cluster import Cluster
from bench.group_requests import raw_commit
from bench.produce_consume import percentile
from net.client import NodeConnection

TOPIC = "rebalanced"
PARTITIONS = 6
GROUPS = 64


def each_owned_once(members: Sequence[Any], partitions: int) -> bool:
    """Whether the members (of any client whose `assignment()` lists topic partitions) each
    own some of `partitions` and together own each exactly once."""
    owned = [[tp.partition for tp in member.assignment()] for member in members]
    every = sorted(p for mine in owned for p in mine)
    return all(owned) and every == list(range(partitions))


def member(bootstrap: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "stabilizers",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 100,
            "enable.auto.commit": False,
        }
    )


def wait_shared(members: list[Consumer], timeout: float = 60.0) -> float:
    """Poll every member until together they own each partition once, each some; seconds."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        for consumer in members:
            consumer.poll(0.001)
        if each_owned_once(members, PARTITIONS):
            return time.monotonic() - started
    raise RuntimeError(f"{len(members)} members never shared the partitions")


def stabilize(bootstrap: str, rounds: int) -> dict[str, Any]:
    members = [member(bootstrap) for _ in range(2)]
    for consumer in members:
        consumer.subscribe([TOPIC])
    try:
        wait_shared(members)
        joins: list[float] = []
        for _ in range(rounds):
            third = member(bootstrap)
            third.subscribe([TOPIC])
            joins.append(wait_shared([*members, third]) * 1000)
            third.close()
            wait_shared(members)
    finally:
        for consumer in members:
            consumer.close()
    return {
        "members": 3,
        "partitions": PARTITIONS,
        "heartbeat_interval_ms": 100,
        "median_ms": round(statistics.median(joins)),
        "min_ms": round(min(joins)),
        "max_ms": round(max(joins)),
    }


async def commits(port: int, in_flight: int, seconds: float) -> dict[str, Any]:
    connection = NodeConnection("127.0.0.1", port)
    latencies: list[float] = []
    offsets = itertools.count(1)
    deadline = time.monotonic() + seconds

    async def committer(group: str) -> None:
        while time.monotonic() < deadline:
            sent = time.perf_counter()
            errors = await raw_commit(connection, group, -1, "", {(TOPIC, 0): next(offsets)})
            if errors != [ErrorCode.none]:
                raise RuntimeError(f"commit failed: {errors}")
            latencies.append((time.perf_counter() - sent) * 1000)

    try:
        started = time.monotonic()
        await asyncio.gather(*(committer(f"committers-{i % GROUPS}") for i in range(in_flight)))
        elapsed = time.monotonic() - started
    finally:
        await connection.close()
    return {
        "in_flight": in_flight,
        "commits_per_s": round(len(latencies) / elapsed),
        "p50_ms": percentile(latencies, 0.5),
        "p99_ms": percentile(latencies, 0.99),
    }


def coordinator_port(cluster: Cluster, admin: AdminClient) -> int:
    """The client port of the broker leading `__consumer_offsets` partition 0."""

    def leader() -> int | None:
        topics = admin.list_topics("__consumer_offsets", timeout=5).topics
        partitions = topics["__consumer_offsets"].partitions
        return partitions[0].leader if 0 in partitions and partitions[0].leader >= 0 else None

    node_id = cluster.wait_for("offsets partition led", leader, 60.0)
    port = cluster.nodes[node_id].broker_port
    assert port is not None
    return port


def run(nodes: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    cluster = Cluster.combined(
        root,
        nodes,
        **{"offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"},
    )
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", cluster.brokers_unfenced, 60.0)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, nodes)])[TOPIC].result(30)
        # A first commit creates the offsets topic.
        creator = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "creator"})
        creator.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
        creator.close()
        port = coordinator_port(cluster, admin)
        return {
            "bench": "groups",
            "nodes": nodes,
            "offsets_replication_factor": nodes,
            "stabilize": stabilize(cluster.bootstrap, args.rounds),
            "commits": [
                asyncio.run(commits(port, in_flight, args.seconds)) for in_flight in args.in_flight
            ],
        }
    finally:
        cluster.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument(
        "--in-flight",
        type=lambda text: [int(count) for count in text.split(",")],
        default=[1, 32],
        help="commit requests outstanding at once, comma-separated",
    )
    args = parser.parse_args()
    for nodes in (1, 3):
        with tempfile.TemporaryDirectory(prefix="bench-groups-") as directory:
            result = run(nodes, args, Path(directory))
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
