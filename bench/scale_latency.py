"""Replicated produce latency and many clients, on real `kraft serve` processes (issue 23, d).

    python -m bench.scale_latency [--seconds 10] [--repeat 5] [--rows paced,many_clients,memory]
                                  [--connections 1000] [--producers 100]

Three combined nodes, a one-partition topic of replication factor 3 with min.insync.replicas
2, 100-byte values, acks=all, measured with confluent-kafka (librdkafka's own per-message
latency, produce call to delivery report, the reports served by a thread as they arrive):

1. `paced_1000_linger_0`: 1,000 msg/s paced, linger.ms 0 (about one message per request);
2. `paced_10000_linger_5`: 10,000 msg/s paced, linger.ms 5; and, as a control,
   `paced_10000_linger_5_acks_0`, the same with acks=0: a message's wait in the client for its
   batch to fill or linger out (about half of linger.ms) and its sending, which no broker can
   take off the second row's figures;
3. `many_clients`: the first row again, alone, then while a helper process holds
   `--connections` idle connections (each exchanged ApiVersions once) to the partition's
   leader, then with `--producers` producers added (ours, acks=all, linger 0,
   `--producer-rate` msg/s each, to another one-partition topic, so that the row measures
   clients, not partitions); the ratios of the p50 and p99 to those alone, and the leader's
   RSS per idle connection (of the first helper's). The helper runs on the same machine, so
   its own CPU counts: as a control, the same messages are then sent by one producer alone (no
   idle connections), so that what the number of clients costs shows apart from what their
   load costs. Each repetition runs the four phases in turn, with fresh helpers;
4. `memory_per_partition`: on another fresh cluster, each node's RSS before and after a topic
   of `--partitions` partitions of replication factor 3 is created and led, per replica.

A percentile of a few seconds on a machine others share swings with their load, so each
latency figure is taken `--repeat` times (the paced rows alternate, as do the many-clients
phases, so that a burst of load spreads over all of them) and reported as the median of the
repetitions' p50s and p99s, beside every repetition, the machine's one-minute load average
before and after it, and how busy its CPUs were during it (`machine_busy`: the fraction of
all cores' time, every process counted; `machine_stolen`: the fraction the hypervisor gave to
other machines).

Prints one JSON object; `measure(...)` returns it (for `bench.scale`). Every process is
killed by pid at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import structlog
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster, compile_node_packages
from bench.produce_consume import cpu_seconds, percentile
from net.client import ClusterClient, NodeConnection
from net.producer import Producer as OurProducer
from net.producer import ProducerConfig
from net.records import Record

_VALUE = b"v" * 100
# The many-clients helper prints these lines once its idle connections are open, then once
# its producers are running too.
_IDLE_READY = "idle-ready"
_LOAD_READY = "load-ready"
ROWS = frozenset({"paced", "many_clients", "memory"})


def rss_kib(pid: int) -> int:
    """The resident set size of process `pid`, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def paced_latency(
    bootstrap: str, topic: str, rate: int, seconds: float, linger_ms: float, acks: str = "all"
) -> dict[str, Any]:
    """Produce `rate` msg/s for `seconds` (after a one-second warm-up not counted) with
    `acks`; the latency per message, p50/p99/max in ms, from the produce call until the
    application holds its delivery report (with acks=0, once the message was sent)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": linger_ms})
    latencies: list[float] = []
    errors = [0]
    counting = [False]

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            errors[0] += 1
        elif counting[0]:
            # librdkafka's latency is measured when the report is served (now), not when the
            # acknowledgement came: the report thread below serves each one as it arrives.
            latencies.append(message.latency() * 1000)

    producing = threading.Event()
    producing.set()

    def serve_reports() -> None:
        # As an application that waits on its delivery reports: poll returns as soon as one
        # is queued. Served by the pacing loop instead, a report would wait for its next
        # produce call, and every latency would be rounded up to the pacing interval.
        while producing.is_set():
            producer.poll(0.1)

    producer.list_topics(topic, timeout=10)
    reports = threading.Thread(target=serve_reports, name="delivery-reports", daemon=True)
    reports.start()
    try:
        interval = 1 / rate
        start = time.perf_counter()
        warm_until = start + 1.0
        end = warm_until + seconds
        next_at = start
        while next_at < end:
            next_at += interval
            while (wait := next_at - time.perf_counter()) > 0:
                if interval < 0.001 and wait < 0.001:
                    # Less than a millisecond apart, the messages due within the next one go
                    # together, as an application's would: a wake-up per message would cost
                    # more than the message (and a spinning loop takes a core the nodes need).
                    break
                time.sleep(wait)
            if not counting[0] and next_at >= warm_until:
                producer.flush(10)
                counting[0] = True
            producer.produce(topic, _VALUE, on_delivery=delivered)
        producer.flush(30)
    finally:
        producing.clear()
        reports.join(timeout=5)
    return {
        "rate": rate,
        "linger_ms": linger_ms,
        "acks": acks,
        "messages": len(latencies),
        "errors": errors[0],
        "p50_ms": percentile(latencies, 0.5),
        "p99_ms": percentile(latencies, 0.99),
        "max_ms": round(max(latencies), 3),
    }


def load_average() -> float:
    """The machine's one-minute load average (other engineers' work included)."""
    return round(os.getloadavg()[0], 2)


def machine_cpu_ticks() -> tuple[int, int, int]:
    """The machine's CPU time so far, all cores, in clock ticks: (busy, stolen, total).

    Stolen: what the hypervisor ran elsewhere while this machine had work (other machines'
    load), not counted as busy."""
    # The first line of /proc/stat: "cpu user nice system idle iowait irq softirq steal ...".
    ticks = [int(field) for field in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = ticks[:8]
    busy = user + nice + system + irq + softirq
    return busy, steal, busy + idle + iowait + steal


def paced_run(
    cluster: Cluster, topic: str, rate: int, seconds: float, linger_ms: float, acks: str = "all"
) -> dict[str, Any]:
    """One `paced_latency` repetition with the CPU milliseconds the three nodes spent per
    1,000 messages (a figure the other load on a shared machine disturbs less), the load
    average before and after it, and the fractions of the machine's CPU time busy and stolen
    during it."""
    load_before = load_average()
    busy_before, stolen_before, total_before = machine_cpu_ticks()
    before = cpu_seconds(cluster)
    run = paced_latency(cluster.bootstrap, topic, rate, seconds, linger_ms, acks)
    spent = cpu_seconds(cluster) - before
    busy, stolen, total = machine_cpu_ticks()
    elapsed = max(total - total_before, 1)
    # The warm-up second is produced (and spent on) too.
    run["broker_cpu_ms_per_1000"] = round(spent * 1000 / (rate * (seconds + 1)) * 1000, 2)
    run["load_average"] = [load_before, load_average()]
    run["machine_busy"] = round((busy - busy_before) / elapsed, 3)
    run["machine_stolen"] = round((stolen - stolen_before) / elapsed, 3)
    return run


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The repetitions of one row: the medians of their p50s, p99s, CPU cost and machine
    busy and stolen fractions, and each."""
    return {
        "p50_ms": round(statistics.median(run["p50_ms"] for run in runs), 3),
        "p99_ms": round(statistics.median(run["p99_ms"] for run in runs), 3),
        "broker_cpu_ms_per_1000": round(
            statistics.median(run["broker_cpu_ms_per_1000"] for run in runs), 2
        ),
        "machine_busy": round(statistics.median(run["machine_busy"] for run in runs), 3),
        "machine_stolen": round(statistics.median(run["machine_stolen"] for run in runs), 3),
        "repetitions": runs,
    }


def paced_rows(cluster: Cluster, seconds: float, repeat: int) -> dict[str, dict[str, Any]]:
    """The paced rows to topic `latency`, `repeat` times each, alternating."""
    settings = {
        "paced_1000_linger_0": (1000, 0.0, "all"),
        "paced_10000_linger_5": (10_000, 5.0, "all"),
        "paced_10000_linger_5_acks_0": (10_000, 5.0, "0"),
    }
    runs: dict[str, list[dict[str, Any]]] = {row: [] for row in settings}
    for _ in range(repeat):
        for row, (rate, linger_ms, acks) in settings.items():
            runs[row].append(paced_run(cluster, "latency", rate, seconds, linger_ms, acks))
    return {row: medians(rows) for row, rows in runs.items()}


def _create(admin: AdminClient, topic: str, partitions: int) -> None:
    admin.create_topics([NewTopic(topic, partitions, 3, config={"min.insync.replicas": "2"})])[
        topic
    ].result(60)


def _leaders(admin: AdminClient, topic: str, partitions: int) -> dict[int, int] | None:
    found = admin.list_topics(topic, timeout=10).topics[topic].partitions
    leaders = {p: found[p].leader for p in found if found[p].leader >= 0}
    return leaders if len(leaders) == partitions else None


def _wait_led(cluster: Cluster, admin: AdminClient, topic: str, partitions: int) -> dict[int, int]:
    return cluster.wait_for(
        f"{topic} led", lambda: _leaders(admin, topic, partitions), timeout=120.0
    )


def measure(
    root: Path,
    *,
    seconds: float = 10.0,
    repeat: int = 3,
    rows: frozenset[str] = ROWS,
    connections: int = 1000,
    producers: int = 100,
    producer_rate: float = 1.0,
    partitions: int = 1000,
) -> dict[str, Any]:
    """The rows of this bench (see the module docstring): the latency rows on a fresh
    three-node cluster under `root / "latency"`, the memory row on another under
    `root / "memory"` (its idle partitions would slow the latency rows, and traffic before it
    would leave freed memory its replicas reuse). Both clusters are killed before it
    returns. `rows` picks among `ROWS`; each latency figure is the median of `repeat`
    repetitions."""
    result: dict[str, Any] = {
        "bench": "scale_latency",
        "nodes": 3,
        "seconds": seconds,
        "repeat": repeat,
        "cpus": os.cpu_count(),
        "load_average_start": load_average(),
    }
    if rows & {"paced", "many_clients"}:
        with _cluster(root / "latency") as (cluster, admin):
            _create(admin, "latency", 1)
            leader = _wait_led(cluster, admin, "latency", 1)[0]
            if "paced" in rows:
                result.update(paced_rows(cluster, seconds, repeat))
            if "many_clients" in rows:
                result["many_clients"] = _many_clients(
                    cluster, admin, leader, seconds, repeat, connections, producers, producer_rate
                )
    if "memory" in rows:
        with _cluster(root / "memory") as (cluster, admin):
            result["memory_per_partition"] = _memory_per_partition(cluster, admin, partitions)
    result["load_average_end"] = load_average()
    return result


@contextlib.contextmanager
def _cluster(root: Path) -> Iterator[tuple[Cluster, AdminClient]]:
    """Three combined nodes with min.insync.replicas 2, unfenced; killed on exit."""
    cluster = Cluster.combined(root, 3, **{"min.insync.replicas": "2"})
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", cluster.brokers_unfenced, 60.0)
        yield cluster, AdminClient({"bootstrap.servers": cluster.bootstrap})
    finally:
        cluster.stop_all()


def _many_clients(
    cluster: Cluster,
    admin: AdminClient,
    leader: int,
    seconds: float,
    repeat: int,
    connections: int,
    producers: int,
    producer_rate: float,
) -> dict[str, Any]:
    """The 1,000 msg/s row alone, beside idle connections, then beside producers too, then
    beside one producer sending as much as they did: each phase once per repetition, in turn
    (so that a burst of the neighbours' load spreads over the phases rather than landing on
    one), with fresh helpers each time; the medians and their ratios to those alone."""
    node = cluster.nodes[leader]
    assert node.process is not None and node.broker_port is not None
    leader_address = f"127.0.0.1:{node.broker_port}"
    _create(admin, "load", 1)
    _wait_led(cluster, admin, "load", 1)
    bootstrap = cluster.bootstrap
    phases: dict[str, list[dict[str, Any]]] = {
        "alone": [],
        "idle_connections": [],
        "loaded": [],
        "same_load_one_producer": [],
    }
    # The first helper's connections: later ones reuse the memory the first freed.
    rss_per_connection = 0.0

    def run() -> dict[str, Any]:
        return paced_run(cluster, "latency", 1000, seconds, 0)

    for repetition in range(repeat):
        phases["alone"].append(run())
        rss_before = rss_kib(node.process.pid) if repetition == 0 else 0
        with _load_helper(
            bootstrap, leader_address, connections, producers, producer_rate
        ) as start:
            if repetition == 0:
                rss_per_connection = (rss_kib(node.process.pid) - rss_before) / connections
            phases["idle_connections"].append(run())
            start()
            phases["loaded"].append(run())
        with _load_helper(bootstrap, leader_address, 0, 1, producers * producer_rate) as start:
            start()
            phases["same_load_one_producer"].append(run())
    measured = {phase: medians(runs) for phase, runs in phases.items()}
    alone = measured["alone"]

    def ratios(name: str, phase: str) -> dict[str, float]:
        return {
            f"{name}_p50_ratio": round(measured[phase]["p50_ms"] / alone["p50_ms"], 3),
            f"{name}_p99_ratio": round(measured[phase]["p99_ms"] / alone["p99_ms"], 3),
        }

    return {
        "connections": connections,
        "producers": producers,
        "producer_rate_each": producer_rate,
        **measured,
        **ratios("idle", "idle_connections"),
        **ratios("loaded", "loaded"),
        **ratios("one_producer", "same_load_one_producer"),
        "leader_rss_kib_per_connection": round(rss_per_connection, 2),
    }


@contextlib.contextmanager
def _load_helper(
    bootstrap: str, leader: str, connections: int, producers: int, rate: float
) -> Iterator[Callable[[], None]]:
    """The many-clients helper process (`_load`), its idle connections open; gives the call
    that starts its producers. Killed on exit."""
    helper = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.scale_latency",
            "--load",
            bootstrap,
            leader,
            str(connections),
            str(producers),
            str(rate),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    stdin, stdout = helper.stdin, helper.stdout
    assert stdin is not None and stdout is not None

    def start_producers() -> None:
        stdin.write("start\n")
        stdin.flush()
        _expect(stdout.readline(), _LOAD_READY)

    try:
        _expect(stdout.readline(), _IDLE_READY)
        yield start_producers
    finally:
        helper.kill()
        helper.wait(10)


def _expect(line: str, expected: str) -> None:
    if line.strip() != expected:
        raise RuntimeError(f"load helper failed: {line!r}")


def _memory_per_partition(cluster: Cluster, admin: AdminClient, partitions: int) -> dict[str, Any]:
    before = {i: rss_kib(n.process.pid) for i, n in cluster.nodes.items() if n.process}
    _create(admin, "many", partitions)
    _wait_led(cluster, admin, "many", partitions)
    after = {i: rss_kib(n.process.pid) for i, n in cluster.nodes.items() if n.process}
    # Replication factor 3 on 3 nodes: each node hosts a replica of every partition.
    return {
        "partitions": partitions,
        "rss_kib_per_replica": {
            str(i): round((after[i] - before[i]) / partitions, 2) for i in before
        },
    }


async def _load(bootstrap: str, leader: str, connections: int, producers: int, rate: float) -> None:
    """The many-clients helper: idle connections to `leader`; once a line comes on stdin,
    producers at `rate` msg/s each."""
    # Its stdout carries the ready lines alone.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    host, _, port = leader.rpartition(":")
    idle = [NodeConnection(host, int(port), client_id=f"idle-{i}") for i in range(connections)]
    for start in range(0, connections, 100):
        await asyncio.gather(*(c.connect() for c in idle[start : start + 100]))
    await asyncio.sleep(1)
    print(_IDLE_READY, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    clients = [ClusterClient(bootstrap, client_id=f"load-{i}") for i in range(producers)]
    ours = [OurProducer(client, ProducerConfig(acks=-1, linger_ms=0)) for client in clients]
    for client, producer in zip(clients, ours, strict=True):
        await client.bootstrap()
        await producer.start()

    async def run(producer: OurProducer, phase: float) -> None:
        # Paced to a schedule, so that `rate` holds whatever each acknowledgement takes; each
        # producer at its own phase of the interval, as independent clients would be (started
        # together, they would all send in the same millisecond of every interval).
        loop = asyncio.get_running_loop()
        next_at = loop.time() + phase
        await asyncio.sleep(phase)
        while True:
            producer.append("load", 0, Record(_VALUE))
            await producer.flush()
            next_at += 1 / rate
            await asyncio.sleep(max(0.0, next_at - loop.time()))

    runners = [
        asyncio.create_task(run(producer, index / (len(ours) * rate)))
        for index, producer in enumerate(ours)
    ]
    await asyncio.sleep(2)  # every producer has written (metadata, connections) by now
    print(_LOAD_READY, flush=True)
    await asyncio.gather(*runners)


def _rows(parser: argparse.ArgumentParser, given: str) -> frozenset[str]:
    rows = frozenset(row.strip() for row in given.split(",") if row.strip())
    if not rows or rows - ROWS:
        parser.error(f"--rows: unknown {sorted(rows - ROWS)}; choose among {sorted(ROWS)}")
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--load":
        bootstrap, leader, connections, producers, rate = sys.argv[2:7]
        asyncio.run(_load(bootstrap, leader, int(connections), int(producers), float(rate)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of each figure")
    parser.add_argument(
        "--rows",
        default=",".join(sorted(ROWS)),
        help=f"comma-separated, among {', '.join(sorted(ROWS))}",
    )
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--producers", type=int, default=100)
    parser.add_argument("--producer-rate", type=float, default=1.0, help="msg/s of each")
    parser.add_argument("--partitions", type=int, default=1000)
    args = parser.parse_args()
    compile_node_packages()
    with tempfile.TemporaryDirectory(prefix="bench-scale-latency-") as directory:
        result = measure(
            Path(directory),
            seconds=args.seconds,
            repeat=args.repeat,
            rows=_rows(parser, args.rows),
            connections=args.connections,
            producers=args.producers,
            producer_rate=args.producer_rate,
            partitions=args.partitions,
        )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
