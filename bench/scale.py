"""Scale benchmark: the cluster with thousands of partitions, on real processes.

    python -m bench.scale [--cases baseline,create,...] [--runs 3]
                          [--partitions 3000] [--topics 5] [--topic-partitions 2000]
                          [--count 1000000] [--spread-count 500000]

Every case starts its own fresh cluster of three combined `kraft serve` processes on 127.0.0.1
(min.insync.replicas 2), runs, and kills them by pid. The cases (issue 23's table):

- `baseline`: one partition of replication factor 3, 1,000,000 lines of 100 bytes produced
  with kcat (acks=all, linger.ms=5) and consumed from the beginning: msg/s each way;
- `create`: one CreateTopics of `--partitions` partitions (RF 3), timed until the metadata
  names a leader for every partition (`metadata_leaders_s`) and until the nodes' replica
  managers lead them all (`leading_s`, the sum of every node's `kraft_leader_partitions`);
  with the RSS of each node after, and its growth per 1,000 replicas the node hosts;
- `create_many`: the same for `--topics` topics of `--topic-partitions` partitions each, one
  CreateTopics per topic, sent at once;
- `create_many_beside_load`: the same while a producer sends 1,000 msg/s (acks=all, linger 0)
  to a partition of its own: its latency p50/p99/max over the 20 s around the creation;
- `idle_partitions` (`bench.scale_fetch`): on one cluster, a one-partition baseline, the same
  beside `--partitions` idle partitions, and `--spread-count` lines spread over them;
- `restart`, `restart_many`, `restart_many_kill` (`bench.scale_restart`): a node hosting
  `--partitions` (or `--topics` x `--topic-partitions`) replicas restarted after SIGTERM (or
  SIGKILL): until ready, then until every ISR is full;
- `latency` (`bench.scale_latency`): paced acks=all produce latency at 1,000 and 10,000 msg/s,
  1,000 idle connections and 100 producers on one node, memory per connection and replica.

A case is a function `(CaseSettings, Path) -> dict`; `CASES` maps its name to it. `--runs N`
runs every case N times, alternating, and reports the median of each number
beside all the runs. Prints one JSON object.

kcat is driven by the librdkafka bundled in the confluent-kafka wheel (LD_LIBRARY_PATH at a link
to it named `librdkafka.so.1`), as the issue's figures were; Debian's kcat links librdkafka
2.0.2. The baseline reports the version kcat ran with.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from bench import scale_fetch, scale_latency, scale_restart
from bench.cluster import Cluster, compile_node_packages
from bench.kcat import kcat_consume, kcat_produce, kcat_version, librdkafka_environment

MIN_INSYNC_REPLICAS = 2
REPLICATION_FACTOR = 3
# Every step of a case is bounded: a cluster that does not get there fails the run.
STEP_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class CaseSettings:
    """The sizes every case reads (from the command line)."""

    count: int = 1_000_000
    size: int = 100
    partitions: int = 3_000
    topics: int = 5
    topic_partitions: int = 2_000
    spread_count: int = 500_000


Case = Callable[[CaseSettings, Path], dict[str, Any]]


def start_cluster(root: Path, **extra: str) -> Cluster:
    """Three combined nodes, started, every broker unfenced."""
    settings = {"min.insync.replicas": str(MIN_INSYNC_REPLICAS), **extra}
    cluster = Cluster.combined(root, 3, **settings)
    cluster.start_all()
    cluster.wait_for("brokers unfenced", cluster.brokers_unfenced, 120.0)
    return cluster


def rss_mb(cluster: Cluster) -> dict[int, float]:
    """Resident memory of each running node, in MB."""
    sizes = {}
    for node_id, node in cluster.nodes.items():
        if node.process is None:
            continue
        for line in Path(f"/proc/{node.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                sizes[node_id] = round(int(line.split()[1]) / 1024, 1)
    return sizes


def led_partitions(cluster: Cluster) -> int:
    """How many partitions the nodes' replica managers lead, summed over the nodes."""
    total = 0
    for node in cluster.nodes.values():
        url = f"http://{node.host}:{node.admin_port}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                text = response.read().decode()
        except OSError:
            return -1
        for line in text.splitlines():
            if line.startswith("kraft_leader_partitions "):
                total += int(float(line.split()[1]))
    return total


def partitions_without_leader(admin: AdminClient, topics: list[str]) -> int:
    """Partitions of `topics` the cluster's Metadata answer names no leader for (a topic not
    known yet counts as all of its partitions missing, reported as -1)."""
    metadata = admin.list_topics(timeout=30)
    missing = 0
    for topic in topics:
        described = metadata.topics.get(topic)
        if described is None or described.error is not None:
            return -1
        missing += sum(1 for p in described.partitions.values() if p.leader < 0)
    return missing


def _wait(what: str, check: Callable[[], bool], interval: float = 0.05) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(interval)


def timed_creation(cluster: Cluster, topics: dict[str, int]) -> dict[str, Any]:
    """Creates `topics` (name -> partition count, RF 3) in one CreateTopics request each, all
    sent at once, and times them until every partition has a leader."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.list_topics(timeout=30)
    total = sum(topics.values())
    leading_before = led_partitions(cluster)
    rss_before = rss_mb(cluster)
    started = time.perf_counter()
    futures = [
        admin.create_topics([NewTopic(name, count, REPLICATION_FACTOR)], request_timeout=120)[name]
        for name, count in topics.items()
    ]
    for future in futures:
        try:
            future.result(STEP_TIMEOUT_S)
        except KafkaException as error:
            # The client sent it again (a controller failover mid-creation) and the first
            # copy had created it: the topic exists, which is what is timed.
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    created_s = time.perf_counter() - started
    _wait("leaders in metadata", lambda: partitions_without_leader(admin, list(topics)) == 0)
    metadata_leaders_s = time.perf_counter() - started
    # Every node renders all its replicas' metrics: polled less often, not to load them.
    _wait(
        "replica managers leading",
        lambda: led_partitions(cluster) - leading_before >= total,
        interval=0.25,
    )
    leading_s = time.perf_counter() - started
    rss = rss_mb(cluster)
    replicas_per_node = total * REPLICATION_FACTOR / len(cluster.nodes)
    return {
        "partitions": total,
        "created_s": round(created_s, 3),
        "metadata_leaders_s": round(metadata_leaders_s, 3),
        "leading_s": round(leading_s, 3),
        "rss_mb": rss,
        # The growth over the node's RSS before the creation, per 1,000 replicas it hosts.
        "rss_mb_per_1000_partitions": {
            node_id: round((size - rss_before[node_id]) / replicas_per_node * 1000, 1)
            for node_id, size in rss.items()
        },
    }


def case_create(settings: CaseSettings, root: Path) -> dict[str, Any]:
    cluster = start_cluster(root)
    try:
        return timed_creation(cluster, {"wide": settings.partitions})
    finally:
        cluster.stop_all()


def case_create_many(settings: CaseSettings, root: Path) -> dict[str, Any]:
    cluster = start_cluster(root)
    try:
        topics = {f"wide-{index}": settings.topic_partitions for index in range(settings.topics)}
        return timed_creation(cluster, topics)
    finally:
        cluster.stop_all()


def case_create_many_beside_load(settings: CaseSettings, root: Path) -> dict[str, Any]:
    """`create_many` while a producer sends 1,000 msg/s (acks=all, linger 0) to a partition of
    its own: the creation's times, and that producer's latency over the 20 s from 2 s before
    the creation (the latency of everyone else while thousands of replicas are set up)."""
    cluster = start_cluster(root)
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("paced", 1, REPLICATION_FACTOR)])["paced"].result(60)
        _wait("a leader for paced", lambda: partitions_without_leader(admin, ["paced"]) == 0)
        beside: dict[str, Any] = {}
        # paced_latency counts after a warm-up second: 2 s of it before the creation starts.
        producing = threading.Thread(
            target=lambda: beside.update(
                scale_latency.paced_latency(cluster.bootstrap, "paced", 1000, 20.0, 0.0)
            )
        )
        producing.start()
        time.sleep(3.0)
        topics = {f"wide-{index}": settings.topic_partitions for index in range(settings.topics)}
        creation = timed_creation(cluster, topics)
        producing.join(STEP_TIMEOUT_S)
        if not beside:
            raise RuntimeError("the paced producer did not finish")
        return {
            **creation,
            "paced_p50_ms": beside["p50_ms"],
            "paced_p99_ms": beside["p99_ms"],
            "paced_max_ms": beside["max_ms"],
            "paced_errors": beside["errors"],
        }
    finally:
        cluster.stop_all()


def case_baseline(settings: CaseSettings, root: Path) -> dict[str, Any]:
    cluster = start_cluster(root)
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("busy", 1, REPLICATION_FACTOR)])["busy"].result(60)
        _wait("a leader for busy", lambda: partitions_without_leader(admin, ["busy"]) == 0)
        lines = root / "lines.txt"
        line = b"x" * (settings.size - 1) + b"\n"
        lines.write_bytes(line * settings.count)
        environment = librdkafka_environment(root)
        produced = kcat_produce(cluster.bootstrap, "busy", lines, settings.count, environment)
        consumed = kcat_consume(cluster.bootstrap, "busy", settings.count, environment)
        return {
            "kcat": kcat_version(environment),
            "produce_msgs_per_s": round(produced),
            "consume_msgs_per_s": round(consumed),
        }
    finally:
        cluster.stop_all()


def case_idle_partitions(settings: CaseSettings, root: Path) -> dict[str, Any]:
    """One busy partition beside `--partitions` idle ones, and lines spread over them."""
    return scale_fetch.measure(root, settings.partitions, settings.spread_count)


def case_restart(settings: CaseSettings, root: Path) -> dict[str, Any]:
    """A node hosting `--partitions` replicas restarted cleanly: until ready, until full ISRs."""
    return scale_restart.measure(partitions=settings.partitions, runs=1, root=root)


def case_restart_many(settings: CaseSettings, root: Path) -> dict[str, Any]:
    """The same with `--topics` x `--topic-partitions` replicas."""
    return scale_restart.measure(
        topics=settings.topics, partitions=settings.topic_partitions, runs=1, root=root
    )


def case_restart_many_kill(settings: CaseSettings, root: Path) -> dict[str, Any]:
    """The same after SIGKILL."""
    return scale_restart.measure(
        topics=settings.topics, partitions=settings.topic_partitions, runs=1, kill=True, root=root
    )


def case_latency(settings: CaseSettings, root: Path) -> dict[str, Any]:
    """Paced acks=all latency, many clients on one node, memory per connection and replica."""
    return scale_latency.measure(root)


CASES: dict[str, Case] = {
    "baseline": case_baseline,
    "create": case_create,
    "create_many": case_create_many,
    "create_many_beside_load": case_create_many_beside_load,
    "idle_partitions": case_idle_partitions,
    "restart": case_restart,
    "restart_many": case_restart_many,
    "restart_many_kill": case_restart_many_kill,
    "latency": case_latency,
}


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Field by field, the median of the runs' numbers (nested dicts too)."""
    merged: dict[str, Any] = {}
    for key, first in runs[0].items():
        values = [run[key] for run in runs if key in run]
        if isinstance(first, dict):
            merged[key] = median_of(values)
        elif isinstance(first, int | float) and not isinstance(first, bool):
            merged[key] = round(statistics.median(values), 3)
        else:
            merged[key] = first
    return merged


def run_case(case: str, settings: CaseSettings) -> dict[str, Any]:
    """One run of `case` in its own directory; a run that fails reports `{"error": ...}` so the
    other cases' figures of a long benchmark are not lost with it."""
    with tempfile.TemporaryDirectory(prefix=f"bench-scale-{case}-") as directory:
        try:
            return CASES[case](settings, Path(directory))
        except Exception as error:  # reported in the JSON; the other cases go on
            return {"error": f"{type(error).__name__}: {error}"}


def measure(cases: list[str], runs: int, settings: CaseSettings) -> dict[str, Any]:
    """Runs each of `cases` `runs` times, alternating; the medians of the runs that succeeded,
    and every run (failed ones as `{"error": ...}`), by case."""
    results: dict[str, list[dict[str, Any]]] = {case: [] for case in cases}
    for _ in range(runs):
        for case in cases:
            results[case].append(run_case(case, settings))
    return {
        "bench": "scale",
        "runs": runs,
        "settings": vars(settings),
        "cases": {
            case: {
                "median": median_of([run for run in values if "error" not in run] or [{}]),
                "runs": values,
            }
            for case, values in results.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases",
        type=lambda text: text.split(","),
        default=list(CASES),
        help=f"comma-separated, of: {', '.join(CASES)}",
    )
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--count", type=int, default=CaseSettings.count)
    parser.add_argument("--size", type=int, default=CaseSettings.size)
    parser.add_argument("--partitions", type=int, default=CaseSettings.partitions)
    parser.add_argument("--topics", type=int, default=CaseSettings.topics)
    parser.add_argument("--topic-partitions", type=int, default=CaseSettings.topic_partitions)
    parser.add_argument("--spread-count", type=int, default=CaseSettings.spread_count)
    args = parser.parse_args()
    compile_node_packages()
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(CASES)}")
    settings = CaseSettings(
        args.count,
        args.size,
        args.partitions,
        args.topics,
        args.topic_partitions,
        args.spread_count,
    )
    print(json.dumps(measure(args.cases, args.runs, settings)), flush=True)


if __name__ == "__main__":
    main()
