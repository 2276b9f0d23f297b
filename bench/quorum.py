"""Quorum benchmark: commit latency and throughput of metadata appends, and failover time.

    python -m bench.quorum [--appends 500] [--seconds 5] [--trials 10]

1. Commit latency and throughput: three voter processes on 127.0.0.1, each a RaftDriver over
   a real storage log (fsynced) and real sockets. The one elected leader appends 1 KiB records:
   one at a time (latency p50/p99 at low load), then with 64 appends in flight (committed
   appends per second), and prints its figures.
2. Failover: three `kraft serve` processes with default timeouts; `--trials` times, the leader
   is SIGKILLed and the time until a new leader has committed (its high watermark passed the
   old one) is measured; the killed node is restarted before the next trial.

Prints one JSON line per measurement. Every process is killed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.cluster import Cluster, free_ports
from kraft.driver import LeadershipLostError, NotLeaderError, RaftDriver
from kraft.raft import RaftConfig
from storage.log import Log, LogConfig

RECORD = b"x" * 1024


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def run_voter(
    node_id: int, ports: list[int], data_dir: Path, appends: int, seconds: float
) -> None:
    """One voter; if it becomes leader, it runs the workload and prints the result."""
    voters = {index + 1: ("127.0.0.1", port) for index, port in enumerate(ports)}
    log = Log.open(data_dir / "__cluster_metadata-0", LogConfig(retention_ms=None))
    driver = RaftDriver(
        node_id=node_id,
        cluster_id="bench",
        voters=voters,
        config=RaftConfig(),
        metadata_log=log,
        listen=voters[node_id],
    )
    await driver.start()
    deadline = time.monotonic() + 30
    # Only the winner of the first election runs the workload; the others stay followers.
    while driver.leader_id is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    if not driver.is_leader:
        await asyncio.sleep(seconds + appends * 0.05 + 10)
        await driver.stop(resign=False)
        return
    await asyncio.sleep(0.5)  # let the followers settle on the new epoch
    latencies = []
    try:
        for _ in range(appends):
            start = time.perf_counter()
            await driver.append([RECORD])
            latencies.append((time.perf_counter() - start) * 1000)
        committed = 0
        stop_at = time.monotonic() + seconds

        async def worker() -> None:
            nonlocal committed
            while time.monotonic() < stop_at:
                await driver.append([RECORD])
                committed += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(64)))
        elapsed = time.perf_counter() - started
    except (NotLeaderError, LeadershipLostError) as error:
        print(json.dumps({"measure": "commit", "error": str(error)}), flush=True)
        await driver.stop()
        return
    print(
        json.dumps(
            {
                "measure": "commit_latency_1KiB",
                "appends": appends,
                "p50_ms": round(statistics.median(latencies), 3),
                "p99_ms": round(percentile(latencies, 0.99), 3),
            }
        ),
        flush=True,
    )
    print(
        json.dumps(
            {
                "measure": "commit_throughput_1KiB",
                "in_flight": 64,
                "committed_per_s": round(committed / elapsed),
            }
        ),
        flush=True,
    )
    await driver.stop()


def commit_benchmark(root: Path, appends: int, seconds: float) -> None:
    ports = free_ports(3)
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.quorum",
                "--voter",
                str(node_id),
                "--ports",
                ",".join(map(str, ports)),
                "--data",
                str(root / f"voter{node_id}"),
                "--appends",
                str(appends),
                "--seconds",
                str(seconds),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for node_id in (1, 2, 3)
    ]
    try:
        for process in processes:
            output, _ = process.communicate(timeout=seconds + appends * 0.05 + 60)
            for line in output.splitlines():
                if line.startswith("{"):
                    print(line, flush=True)
    finally:
        for process in processes:
            process.kill()


def failover_benchmark(root: Path, trials: int) -> None:
    cluster = Cluster.controllers(root / "failover", 3)
    times = []
    try:
        cluster.start_all()
        for _ in range(trials):
            leader, _, high_watermark = cluster.wait_for("a leader", cluster.agreed_leader, 60)
            cluster.kill(leader)
            killed_at = time.monotonic()
            survivors = cluster.running()

            def committed(old: int = high_watermark, among: list[int] = survivors) -> bool:
                agreed = cluster.agreed_leader(among)
                return agreed is not None and agreed[2] > old

            cluster.wait_for("a new leader to commit", committed, 60)
            times.append(time.monotonic() - killed_at)
            cluster.start(leader)
            cluster.wait_for("all three to agree", cluster.agreed_leader, 60)
    finally:
        cluster.stop_all()
    print(
        json.dumps(
            {
                "measure": "failover",
                "trials": trials,
                "p50_s": round(statistics.median(times), 3),
                "p99_s": round(percentile(times, 0.99), 3),
                "max_s": round(max(times), 3),
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--voter", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--ports", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.voter is not None:
        ports = [int(port) for port in args.ports.split(",")]
        asyncio.run(run_voter(args.voter, ports, args.data, args.appends, args.seconds))
        return
    root = Path(tempfile.mkdtemp(prefix="bench-quorum-"))
    try:
        commit_benchmark(root, args.appends, args.seconds)
        failover_benchmark(root, args.trials)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
