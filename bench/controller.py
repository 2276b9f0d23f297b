"""Controller benchmark: topic creation throughput, metadata log size, replay time.

    python -m bench.controller [--topics 1000] [--partitions 10] [--per-request 10]
                               [--in-flight 4] [--trials 3]

Three `kraft serve` controller processes on 127.0.0.1 (fsynced metadata log, real sockets) and
three brokers played by the benchmark (registered and heartbeating over the Kafka protocol).
Per trial, on a fresh cluster:

1. `create`: time to create `--topics` topics of `--partitions` partitions each, replication
   factor 3, through CreateTopics sent to the active controller (`--per-request` topics per
   request, `--in-flight` requests at a time); answered only once committed by the quorum.
2. `log`: the size of the metadata log the creation produced (the leader's segment files).
3. `replay`: what a broker does when it starts: replay the whole metadata log from scratch
   (read the segments, decode every entry, build the image), and load a snapshot of the same
   image instead (read the file, decode it, build the image). In this process, on a copy of
   the leader's log directory.

Prints one JSON line per trial and one with the medians. Every process is killed at the end.
Targets (issue 5): 10,000 partitions created in < 10 s; replay from a snapshot < 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from bench.broker_stand_in import BrokerStandIn, unfenced
from bench.cluster import Cluster
from controller.client import ControllerClient, create_topics_request
from controller.image import MetadataReplayer
from kraft.messages import SnapshotId
from kraft.snapshot_file import decode_snapshot, encode_snapshot
from kraft.wire import decode_entries
from node.logging_setup import configure_logging
from storage.log import Log, LogConfig

METADATA_DIR = "__cluster_metadata-0"


async def create_topics(
    client: ControllerClient, names: list[str], partitions: int, per_request: int, in_flight: int
) -> float:
    """Seconds to create every topic of `names`; fails on any error."""
    chunks = [names[i : i + per_request] for i in range(0, len(names), per_request)]
    queue: asyncio.Queue[list[str]] = asyncio.Queue()
    for chunk in chunks:
        queue.put_nowait(chunk)

    async def sender() -> None:
        while not queue.empty():
            chunk = queue.get_nowait()
            response = await client.send(
                create_topics_request([(name, partitions, 3) for name in chunk])
            )
            errors = {t.name: t.error_code for t in response.topics if t.error_code}
            if errors:
                raise RuntimeError(f"CreateTopics failed: {errors}")

    started = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(in_flight)))
    return time.perf_counter() - started


def replay_from_log(log_dir: Path) -> tuple[float, MetadataReplayer]:
    """Seconds to replay the whole metadata log in `log_dir` into an image.

    The entries are delivered in one `on_commit`, as a restarting node gets them once it
    learns the high watermark.
    """
    started = time.perf_counter()
    log = Log.open(log_dir, LogConfig(retention_ms=None))
    replayer = MetadataReplayer()
    entries = []
    for batch, _ in log.batches():
        entries.extend(decode_entries(batch.read()))
    replayer.on_commit(entries)
    elapsed = time.perf_counter() - started
    log.close()
    return elapsed, replayer


def replay_from_snapshot(replayer: MetadataReplayer, directory: Path) -> tuple[float, int, int]:
    """Writes a snapshot of `replayer`'s image; seconds to load it back, its size, and the
    number of partitions the loaded image holds."""
    image = replayer.image
    snapshot_id = SnapshotId(image.end_offset, image.epoch)
    path = directory / "bench.checkpoint"
    records = replayer.snapshot_records(image.end_offset)
    assert records is not None, "the bench's records hold no metadata transaction"
    path.write_bytes(encode_snapshot(snapshot_id, records, int(time.time())))
    started = time.perf_counter()
    loaded = MetadataReplayer()
    loaded.on_snapshot_loaded(snapshot_id, decode_snapshot(path.read_bytes()))
    elapsed = time.perf_counter() - started
    partitions = sum(len(topic.partitions) for topic in loaded.image.topics.values())
    return elapsed, path.stat().st_size, partitions


async def trial(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    cluster = Cluster.controllers(root, 3, **{"broker.session.timeout.ms": "30000"})
    cluster.start_all()
    client = ControllerClient(cluster.voters(), client_id="bench", request_timeout=30.0)
    brokers: list[BrokerStandIn] = []
    try:
        await asyncio.to_thread(cluster.wait_for, "a quorum leader", cluster.agreed_leader)
        brokers = [BrokerStandIn(cluster, client, broker_id) for broker_id in (11, 12, 13)]
        for broker in brokers:
            response = await broker.register()
            assert response.error_code == ErrorCode.none, response
        await unfenced(brokers)
        for broker in brokers:
            broker.start_heartbeats(interval_s=2.0)
        names = [f"bench-{index:05d}" for index in range(args.topics)]
        create_s = await create_topics(
            client, names, args.partitions, args.per_request, args.in_flight
        )
        leader = client.active_controller
        assert leader is not None
        for broker in brokers:
            await broker.stop_heartbeats()
        brokers = []
        cluster.terminate(leader)
        log_dir = cluster.nodes[leader].data_dir / METADATA_DIR
        log_bytes = sum(segment.stat().st_size for segment in log_dir.glob("*.log"))
        copy = root / "replay"
        shutil.copytree(log_dir, copy)
        log_replay_s, replayer = replay_from_log(copy)
        snapshot_s, snapshot_bytes, partitions = replay_from_snapshot(replayer, root)
        expected = args.topics * args.partitions
        if partitions != expected:
            raise RuntimeError(f"replayed {partitions} partitions, created {expected}")
        return {
            "partitions": expected,
            "create_s": round(create_s, 3),
            "partitions_per_s": round(expected / create_s),
            "log_bytes": log_bytes,
            "replay_log_s": round(log_replay_s, 3),
            "snapshot_bytes": snapshot_bytes,
            "replay_snapshot_s": round(snapshot_s, 3),
        }
    finally:
        for broker in brokers:
            await broker.stop_heartbeats()
        await client.close()
        cluster.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--per-request", type=int, default=10)
    parser.add_argument("--in-flight", type=int, default=4)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    # The replay logs what a node logs (one event per topic), at a node's cost, but not here.
    configure_logging(0, stream=open(os.devnull, "w"))  # noqa: SIM115
    results = []
    for index in range(args.trials):
        with tempfile.TemporaryDirectory(prefix="bench-controller-") as directory:
            result = asyncio.run(trial(args, Path(directory)))
        results.append(result)
        print(json.dumps({"bench": "controller", "trial": index + 1, **result}), flush=True)
    summary = {
        key: statistics.median(result[key] for result in results)
        for key in ("create_s", "partitions_per_s", "replay_log_s", "replay_snapshot_s")
    }
    print(
        json.dumps(
            {
                "bench": "controller",
                "summary": "median",
                "trials": args.trials,
                "topics": args.topics,
                "partitions_per_topic": args.partitions,
                "per_request": args.per_request,
                "in_flight": args.in_flight,
                **summary,
                "targets": {"create_s": 10.0, "replay_snapshot_s": 1.0},
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
