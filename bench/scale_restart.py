"""Restart at scale: how long a node hosting thousands of replicas takes to be ready again, and
how long its replicas take to be back in every ISR.

    python -m bench.scale_restart [--topics 1] [--partitions 3000] [--messages 30000]
                                  [--runs 3] [--kill]

Three combined nodes on 127.0.0.1 (RF 3, min.insync.replicas 2) host `--topics` topics of
`--partitions` partitions each. Then, `--runs` times: leadership goes back to the preferred
replicas and `--messages` 100-byte messages are produced (acks=all) spread over the
partitions, so that every run stops a node leading its share of them with fresh writes; a node
that is not the active controller is stopped (SIGTERM: a controlled shutdown; or, with
`--kill`, SIGKILL) and started again, and the bench reports:
- `ready_s`: from the start of its process until its `GET /v1/health/ready` answers 200;
- `isr_full_s`: from ready until every partition's ISR holds all three replicas again (as the
  active controller's admin API shows them);
- `stop_s`: how long the controlled shutdown took (clean restarts only);
- `phases`: the same times split by the node's own log events (seconds from the previous
  one): `leaderships_moved`, `broker_stopped`, `logs_flushed` of the stop; `logs_opened`
  (from the process start), `raft_started`, `metadata_replayed`, `registered`, `unfenced`;
- `longest_stalls`: by node, the longest stall of its event loop (`event_loop_stalled`, logged
  from 0.5 s on; 0 for none) from the stop until the ISRs are full again; `longest_stall_s`
  is the longest over every run and node.
Medians are over the runs. Prints one JSON object; every process is killed at the end.
With `--profile DIR`, py-spy records each stopped node from the SIGTERM until it exits
(`stop<N>.txt`, idle threads included: the storage threads wait on fsyncs there), and each
restarted node from its start for `--profile-seconds` (`run<N>.txt`), into DIR as collapsed
stacks, to find where the stop and the start-up time go.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Container, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from bench.cluster import Cluster, compile_node_packages, kraft_executable

_NODES = 3
_PAYLOAD = b"x" * 100


def _post(cluster: Cluster, node_id: int, path: str, body: dict[str, Any]) -> Any:
    node = cluster.nodes[node_id]
    request = urllib.request.Request(
        f"http://{node.host}:{node.admin_port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def _create_topic(
    cluster: Cluster, node_id: int, name: str, partitions: int, timeout: float
) -> None:
    """Create topic `name` through node `node_id`'s admin API. A controller too busy to answer
    within the admin deadline (503, on a loaded machine) may still create it: asked again
    until the topic exists (409 once it does)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            _post(
                cluster,
                node_id,
                "/v1/topics",
                {"name": name, "partitions": partitions, "replication_factor": _NODES},
            )
            return
        except urllib.error.HTTPError as error:
            if error.code == 409:
                return
            if error.code != 503 or time.monotonic() > deadline:
                raise
        time.sleep(1.0)


def _partitions(cluster: Cluster, node_id: int, topics: list[str]) -> list[dict[str, Any]] | None:
    found: list[dict[str, Any]] = []
    for topic in topics:
        try:
            found.extend(
                cluster.nodes[node_id].get(f"/v1/topics/{topic}", timeout=30)["partitions"]
            )
        except (OSError, ValueError):
            return None
    return found


def _all_led(cluster: Cluster, node_id: int, topics: list[str], count: int) -> bool:
    partitions = _partitions(cluster, node_id, topics)
    return (
        partitions is not None
        and len(partitions) == count
        and all(p["leader"] >= 0 for p in partitions)
    )


def _all_isr_full(cluster: Cluster, node_id: int, topics: list[str]) -> bool:
    partitions = _partitions(cluster, node_id, topics)
    return partitions is not None and all(len(p["isr"]) == _NODES for p in partitions)


def _controller(cluster: Cluster) -> int:
    leader = cluster.wait_for("a quorum leader", cluster.agreed_leader, timeout=180)
    return leader[0]


def _produce(cluster: Cluster, topics: list[str], messages: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "sticky.partitioning.linger.ms": 0,
        }
    )
    failures = 0

    def delivered(error: Any, _message: Any) -> None:
        nonlocal failures
        failures += error is not None

    for index in range(messages):
        while True:
            try:
                producer.produce(topics[index % len(topics)], _PAYLOAD, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    if producer.flush(300) or failures:
        raise RuntimeError(f"{failures} messages failed")


# The node log events that end each phase of a restart, in order (see the module doc).
_PHASES = (
    ("controlled_shutdown_leaderships_moved", "leaderships_moved"),
    ("broker_stopped", "broker_stopped"),
    ("log_manager_shutdown_clean", "logs_flushed"),
    ("node_stopped", None),
    ("log_manager_opened", "logs_opened"),
    ("raft_started", "raft_started"),
    ("metadata_log_replayed", "metadata_replayed"),
    ("broker_registered", "registered"),
    ("broker_unfenced", "unfenced"),
)


def _phases(log_path: Path, from_byte: int, stopped_at: float) -> dict[str, float]:
    """The seconds each phase of a restart took, from the node's JSON log lines written since
    `from_byte`; the stop phases count from `stopped_at` (wall clock), the first start phase
    from the node's `node_stopped` (its new process started right after)."""
    seen: dict[str, float] = {}
    for event in _log_events(log_path, from_byte, dict(_PHASES)):
        if event["event"] not in seen:
            stamp = event["timestamp"].replace("Z", "+00:00")
            seen[event["event"]] = datetime.datetime.fromisoformat(stamp).timestamp()
    phases: dict[str, float] = {}
    previous = stopped_at
    for event_name, phase in _PHASES:
        if event_name in seen:
            # 0 for a phase that ended before the previous one did (a broker may register
            # before its replay of the metadata log is summed up).
            if phase is not None:
                phases[phase] = round(max(seen[event_name] - previous, 0.0), 3)
            previous = max(previous, seen[event_name])
    return phases


def _longest_stalls(cluster: Cluster, logs_from: dict[int, int]) -> dict[str, float]:
    """By node, its event loop's longest stall logged (`event_loop_stalled`: 0.5 s or more)
    in its log after byte `logs_from[node]`; 0 for none."""
    return {
        str(node_id): max(
            (
                float(event["seconds"])
                for event in _log_events(
                    node.log_path, logs_from.get(node_id, 0), {"event_loop_stalled"}
                )
            ),
            default=0.0,
        )
        for node_id, node in cluster.nodes.items()
    }


def _log_events(log_path: Path, from_byte: int, names: Container[str]) -> Iterator[dict[str, Any]]:
    """The JSON events named in `names` that the node logged after byte `from_byte`."""
    with log_path.open("rb") as lines:
        lines.seek(from_byte)
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") in names:
                yield event


def _elect_preferred(cluster: Cluster, node_id: int, topics: list[str], partitions: int) -> None:
    """Leadership back to each partition's preferred replica (where it is not already)."""
    asked = [
        {"topic": topic, "partition": index} for topic in topics for index in range(partitions)
    ]
    _post(cluster, node_id, "/v1/elections", {"type": "preferred", "partitions": asked})


def _profile(
    pid: int, output: Path, seconds: float, *, idle: bool = False
) -> subprocess.Popen[bytes]:
    """py-spy recording process `pid` for `seconds` (or until it exits) into `output`
    (collapsed stacks); with `idle`, threads waiting in the kernel too."""
    py_spy = shutil.which("py-spy") or str(Path(kraft_executable()).parent / "py-spy")
    return subprocess.Popen(
        [
            *(py_spy, "record", "--pid", str(pid), "--duration", str(int(seconds))),
            *("--rate", "200", "--format", "raw", "--output", str(output)),
            *(["--idle"] if idle else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _restart_once(
    cluster: Cluster,
    node_id: int,
    observer: int,
    topics: list[str],
    kill: bool,
    timeout: float,
    profile: tuple[Path, Path, float] | None = None,
) -> dict[str, Any]:
    """One stop and start of node `node_id`; `profile`: (stop profile, start profile, seconds
    of the start's profile)."""
    result: dict[str, Any] = {}
    node = cluster.nodes[node_id]
    logs_from = {
        each: peer.log_path.stat().st_size if peer.log_path.exists() else 0
        for each, peer in cluster.nodes.items()
    }
    log_from = logs_from[node_id]
    stopped_at = time.time()
    if kill:
        cluster.kill(node_id)
    else:
        process = cluster.nodes[node_id].process
        assert process is not None
        stop_profiler = None
        if profile is not None:
            stop_profiler = _profile(process.pid, profile[0], timeout, idle=True)
            time.sleep(1.0)  # py-spy attached
            stopped_at = time.time()
        started = time.monotonic()
        process.terminate()
        process.wait(timeout=timeout)
        cluster.nodes[node_id].process = None
        result["stop_s"] = time.monotonic() - started
        if stop_profiler is not None:
            stop_profiler.wait(timeout=timeout)
    started = time.monotonic()
    cluster.start(node_id)
    profiler = None
    if profile is not None:
        process = cluster.nodes[node_id].process
        assert process is not None
        profiler = _profile(process.pid, profile[1], profile[2])
    while not cluster.ready(node_id):
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"node {node_id} not ready after {timeout} s")
        time.sleep(0.02)
    ready = time.monotonic()
    result["ready_s"] = ready - started
    while not _all_isr_full(cluster, observer, topics):
        if time.monotonic() - ready > timeout:
            raise RuntimeError(f"the ISRs are not full {timeout} s after node {node_id} restarted")
        time.sleep(0.05)
    result["isr_full_s"] = time.monotonic() - ready
    result["phases"] = _phases(node.log_path, log_from, stopped_at)
    result["longest_stalls"] = _longest_stalls(cluster, logs_from)
    if profiler is not None:
        profiler.wait(timeout=timeout)
    return result


def measure(
    *,
    topics: int = 1,
    partitions: int = 3000,
    messages: int = 30_000,
    runs: int = 3,
    kill: bool = False,
    timeout: float = 300.0,
    root: Path | None = None,
    profile_dir: Path | None = None,
    profile_seconds: float = 20.0,
) -> dict[str, Any]:
    """Start a 3-node cluster hosting `topics` x `partitions` partitions (RF 3), produce
    `messages`, restart one node (not the active controller) `runs` times (SIGKILL when
    `kill`, else SIGTERM) and return the medians of `ready_s`, `isr_full_s` (and `stop_s`).
    With `profile_dir`, each restarted node is profiled by py-spy (see the module doc)."""
    with tempfile.TemporaryDirectory(prefix="scale-restart-", dir=root) as directory:
        cluster = Cluster.combined(
            Path(directory),
            _NODES,
            **{
                "min.insync.replicas": "2",
                "default.replication.factor": "3",
                "num.partitions": "1",
            },
        )
        try:
            cluster.start_all()
            controller = _controller(cluster)
            cluster.wait_for("brokers unfenced", cluster.brokers_unfenced, timeout=60)
            names = [f"scale-{index}" for index in range(topics)]
            for name in names:
                _create_topic(cluster, controller, name, partitions, timeout)
            cluster.wait_for(
                "every partition led",
                lambda: _all_led(cluster, controller, names, topics * partitions),
                timeout=timeout,
            )
            samples = []
            for run in range(runs):
                controller = _controller(cluster)
                _elect_preferred(cluster, controller, names, partitions)
                if messages:
                    _produce(cluster, names, messages)
                cluster.wait_for(
                    "every ISR full",
                    partial(_all_isr_full, cluster, controller, names),
                    timeout=timeout,
                )
                restarted = max(node for node in cluster.nodes if node != controller)
                profile = None
                if profile_dir is not None:
                    profile_dir.mkdir(parents=True, exist_ok=True)
                    profile = (
                        profile_dir / f"stop{run}.txt",
                        profile_dir / f"run{run}.txt",
                        profile_seconds,
                    )
                samples.append(
                    _restart_once(cluster, restarted, controller, names, kill, timeout, profile)
                )
        finally:
            cluster.stop_all()
    summary: dict[str, Any] = {
        "case": f"restart {'SIGKILL' if kill else 'clean'}",
        "topics": topics,
        "partitions_per_topic": partitions,
        "replicas_on_node": topics * partitions,
        "messages": messages,
        "runs": samples,
    }
    for key in samples[0]:
        if key not in ("phases", "longest_stalls"):
            summary[f"{key}_median"] = round(statistics.median(s[key] for s in samples), 3)
    summary["longest_stall_s"] = max(max(s["longest_stalls"].values()) for s in samples)
    summary["phases_median"] = {
        phase: round(statistics.median(s["phases"][phase] for s in samples), 3)
        for phase in samples[0]["phases"]
        if all(phase in s["phases"] for s in samples)
    }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=3000)
    parser.add_argument("--messages", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kill", action="store_true", help="SIGKILL instead of SIGTERM")
    parser.add_argument("--profile", type=Path, help="py-spy each stop and start into DIR")
    parser.add_argument("--profile-seconds", type=float, default=20.0)
    args = parser.parse_args()
    compile_node_packages()
    print(
        json.dumps(
            measure(
                topics=args.topics,
                partitions=args.partitions,
                messages=args.messages,
                runs=args.runs,
                kill=args.kill,
                profile_dir=args.profile,
                profile_seconds=args.profile_seconds,
            )
        )
    )


if __name__ == "__main__":
    main()
