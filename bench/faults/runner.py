"""One seeded fault run: a 3-node cluster (RF 3, min.insync.replicas 2), each node a `kraft
serve` process on its own test host (network namespace), the clients in the root namespace,
a schedule of faults, then healing, a read-back and the checker.

    run_seed(seed, seconds, workdir) -> RunResult

Order of the end of a run, so nothing outlives what it talks to: clients stopped (SIGTERM, then
SIGKILL by pid), then nodes (SIGKILL by pid), then the namespaces, mounts, bridge and route.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.cluster import Cluster, Node
from bench.faults import checker
from bench.faults.network import TestNetwork, fill_disk
from bench.faults.schedule import Step, describe, generate, parse
from storage.durability import power_cut

NODE_IDS = [1, 2, 3]
IDEMPOTENT_TOPIC = "faults-idempotent"
PLAIN_TOPIC = "faults-plain"
TEST_TOPICS = (IDEMPOTENT_TOPIC, PLAIN_TOPIC)
PARTITIONS = 3
GROUP = "faults-group"
# Each node's log dir is a tmpfs of this size (so `disk-full` fills it quickly, in memory).
DISK_MIB = 192
CLIENTS = Path(__file__).with_name("clients.py")
SETTINGS = {
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    "num.partitions": str(PARTITIONS),
    # Short enough that a fault of a few seconds shrinks the ISR and healing grows it back
    # within a short schedule (Kafka's default is 30 s).
    "replica.lag.time.max.ms": "6000",
    "offsets.topic.num.partitions": "3",
    "offsets.topic.replication.factor": "3",
    "group.initial.rebalance.delay.ms": "0",
}
# After healing, the producers must get writes acknowledged, and the consumer group must read,
# within this time (a consumer may need a rebalance: its session timeout is 6 s).
AFTER_HEAL_SECONDS = 10.0


def reproduce_command(seed: int, seconds: float, schedule: str | None = None) -> str:
    given = "" if schedule is None else f" --schedule '{schedule}'"
    return f".venv/bin/python -m bench.faults --seconds {seconds:g} --seed {seed}{given}"


@dataclass
class RunResult:
    seed: int
    seconds: float
    schedule: list[Step]
    applied: list[str]
    verdict: checker.Verdict
    heal_seconds: float | None
    duration: float
    workdir: Path
    notes: list[str] = field(default_factory=list)
    # Set when the schedule was given rather than generated from the seed.
    given: str | None = None

    @property
    def command(self) -> str:
        return reproduce_command(self.seed, self.seconds, self.given)

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    def json_line(self) -> str:
        return json.dumps(
            {
                "seed": self.seed,
                "seconds": self.seconds,
                "passed": self.passed,
                "schedule": describe(self.schedule),
                "applied": self.applied,
                "counts": self.verdict.counts,
                "heal_seconds": self.heal_seconds,
                "duration_seconds": round(self.duration, 1),
                "failures": self.verdict.failures,
                "notes": self.notes,
                "workdir": str(self.workdir),
                "reproduce": self.command,
            }
        )

    def report(self) -> str:
        lines = [
            f"fault run seed={self.seed} seconds={self.seconds:g}: "
            + ("PASS" if self.passed else "FAIL"),
            f"  schedule: {describe(self.schedule)}",
            "  applied:",
            *(f"    {line}" for line in self.applied),
            f"  heal time: {self.heal_seconds if self.heal_seconds is not None else 'never'} s, "
            f"run {self.duration:.0f} s, files in {self.workdir}",
            "  counts: " + ", ".join(f"{k}={v}" for k, v in self.verdict.counts.items()),
        ]
        if self.notes:
            lines.append("  notes:")
            lines.extend(f"    {note}" for note in self.notes)
        if self.verdict.failures:
            lines.append("  FAILURES:")
            lines.extend(f"    {failure}" for failure in self.verdict.failures)
            lines.append(f"  reproduce: {self.command}")
        return "\n".join(lines)


def _get(node: Node, path: str, timeout: float = 2.0) -> Any:
    try:
        return node.get(path, timeout=timeout)
    except (OSError, ValueError):
        return None


def _post(node: Node, path: str, body: dict[str, Any], timeout: float = 15.0) -> int:
    request = urllib.request.Request(
        f"http://{node.host}:{node.admin_port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


def _ready(node: Node) -> bool:
    try:
        with urllib.request.urlopen(
            f"http://{node.host}:{node.admin_port}/v1/health/ready", timeout=2
        ) as response:
            return bool(response.status == 200)
    except (OSError, ValueError):
        return False


class FaultRun:
    def __init__(
        self, seed: int, seconds: float, workdir: Path, heal_bound: float, given: str | None
    ) -> None:
        self.seed = seed
        self.seconds = seconds
        self.workdir = workdir
        self.heal_bound = heal_bound
        self.given = given
        self.schedule = generate(seed, seconds, NODE_IDS) if given is None else parse(given)
        self.applied: list[str] = []
        self.notes: list[str] = []
        self.network: TestNetwork | None = None
        self.cluster: Cluster | None = None
        self.clients: dict[str, subprocess.Popen[bytes]] = {}
        # Nodes we stopped on purpose (kill, power cut), so an exit we did not cause is noted.
        self.down: set[int] = set()
        self.started = time.monotonic()

    # -- bookkeeping ----------------------------------------------------------------------------

    def _log(self, text: str) -> None:
        line = f"{time.monotonic() - self.started:7.1f} {text}"
        self.applied.append(line)
        with (self.workdir / "schedule.log").open("a") as output:
            output.write(line + "\n")

    def _nodes(self) -> dict[int, Node]:
        assert self.cluster is not None
        return self.cluster.nodes

    def _any(self, path: str) -> Any:
        """`path` as the first node that answers sees it."""
        for node in self._nodes().values():
            result = _get(node, path)
            if result is not None:
                return result
        return None

    def _check_exits(self) -> None:
        assert self.cluster is not None
        for node_id, node in self._nodes().items():
            process = node.process
            if node_id in self.down or process is None:
                continue
            status = process.poll()
            if status is not None:
                self.notes.append(f"node {node_id} exited by itself with status {status}")
                self._log(f"node {node_id} exited by itself with status {status}")
                node.process = None

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> RunResult:
        evidence = checker.Evidence(IDEMPOTENT_TOPIC, PLAIN_TOPIC)
        crashed: str | None = None
        try:
            self._set_up()
            self._start_clients()
            time.sleep(2.0)
            self._run_schedule()
            heal_done = self._heal(evidence)
            time.sleep(AFTER_HEAL_SECONDS)
            self._stop_clients()
            self._collect(evidence, heal_done)
        except Exception as error:
            # The run itself broke (a node never ready, a tool failed): a failure with its
            # cause, reported like any other, after the teardown below.
            crashed = f"the run broke off: {error!r}"[:3000]
            self._log(crashed)
        finally:
            self._tear_down()
        verdict = checker.check(evidence)
        if crashed is not None:
            verdict.failures.insert(0, crashed)
        self._after_heal_availability(evidence, verdict)
        self._node_log_notes(verdict)
        return RunResult(
            self.seed,
            self.seconds,
            self.schedule,
            self.applied,
            verdict,
            evidence.heal_seconds,
            time.monotonic() - self.started,
            self.workdir,
            self.notes,
            self.given,
        )

    def _set_up(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.network = TestNetwork.open(NODE_IDS)
        self._log(f"test hosts {self.network.hosts} on bridge {self.network.bridge}")
        self.cluster = Cluster.combined_on(
            self.workdir, [self.network.hosts[node_id] for node_id in NODE_IDS], **SETTINGS
        )
        for node_id, node in self._nodes().items():
            self.network.mount_tmpfs(node.data_dir, DISK_MIB)
            node.command_prefix = self.network.exec_prefix(node_id)
            node.env = {"KRAFT_DURABILITY_JOURNAL": str(self._journal(node_id))}
        self.cluster.start_all()
        self.cluster.wait_for(
            "every node ready", lambda: all(_ready(n) for n in self._nodes().values()), 90
        )
        first = self._nodes()[NODE_IDS[0]]
        for topic in TEST_TOPICS:
            body = {"name": topic, "partitions": PARTITIONS, "replication_factor": 3}
            self.cluster.wait_for(
                f"topic {topic} created",
                lambda body=body: _post(first, "/v1/topics", body) in (201, 409),  # type: ignore[misc]
                60,
            )
        self.cluster.wait_for("full ISRs", lambda: self._unhealed() is None, 60)
        self._log("cluster ready, topics created")

    def _journal(self, node_id: int) -> Path:
        return self.workdir / f"node{node_id}.journal"

    def _client(self, name: str, role: str, *args: str) -> subprocess.Popen[bytes]:
        assert self.cluster is not None
        with (self.workdir / f"{name}.stderr").open("ab") as errors:
            return subprocess.Popen(
                [
                    sys.executable,
                    str(CLIENTS),
                    role,
                    "--bootstrap",
                    self.cluster.bootstrap,
                    "--out",
                    str(self.workdir / f"{name}.jsonl"),
                    *args,
                ],
                stdout=errors,
                stderr=subprocess.STDOUT,
            )

    def _start_clients(self) -> None:
        self.clients["idempotent"] = self._client(
            "idempotent",
            "produce",
            "--topic",
            IDEMPOTENT_TOPIC,
            "--idempotent",
            "--tag",
            f"i{self.seed}",
        )
        self.clients["plain"] = self._client(
            "plain", "produce", "--topic", PLAIN_TOPIC, "--tag", f"p{self.seed}"
        )
        self.clients["consumer"] = self._client(
            "consumer", "consume", "--topics", ",".join(TEST_TOPICS), "--group", GROUP
        )
        self._log("clients started: idempotent producer, plain producer, consumer group")

    def _stop_clients(self) -> None:
        for process in self.clients.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 45
        for name, process in self.clients.items():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.notes.append(f"client {name} did not stop within 45 s of SIGTERM: killed")
                process.kill()
                process.wait(timeout=10)
        self._log("clients stopped")

    # -- faults ---------------------------------------------------------------------------------

    def _run_schedule(self) -> None:
        heal: Callable[[], None] | None = None
        begin = time.monotonic()
        for step in self.schedule:
            delay = begin + step.start - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            # Before healing: a disk-full heal restarts its node, which would hide an exit.
            self._check_exits()
            if heal is not None:
                heal()
            heal = self._apply(step)
        delay = begin + self.seconds - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self._check_exits()
        if heal is not None:
            heal()

    def _running(self, node_id: int) -> bool:
        process = self._nodes()[node_id].process
        return process is not None and process.poll() is None

    def _apply(self, step: Step) -> Callable[[], None] | None:
        """Put `step`'s fault in force; returns what heals it."""
        assert self.network is not None and self.cluster is not None
        network, cluster = self.network, self.cluster
        victim = step.victim
        if step.kind == "calm":
            self._log("calm")
            return None
        if step.kind == "split":
            leader = self._active_controller() or NODE_IDS[0]
            others = [node_id for node_id in NODE_IDS if node_id != leader]
            for other in others:
                network.cut(leader, other)
            self._log(f"split: active controller {leader} cut from {others}")
            return self._healer(f"split of {leader}", network.heal)
        assert victim is not None
        if step.kind == "isolate":
            network.isolate(victim)
            self._log(f"isolate {victim}")
            return self._healer(f"isolate {victim}", network.heal)
        if step.kind == "cut-leader":
            peer = self._leader_of_partition_followed_by(victim)
            network.cut(victim, peer)
            self._log(f"cut-leader {victim}: cut from {peer}")
            return self._healer(f"cut {victim}-{peer}", network.heal)
        if not self._running(victim):
            self._log(f"{step.kind} {victim}: skipped, the node is not running")
            return None
        if step.kind == "pause":
            cluster.pause(victim)
            self._log(f"pause {victim} (SIGSTOP)")

            def resume() -> None:
                if self._running(victim):
                    cluster.resume(victim)
                self._log(f"resume {victim} (SIGCONT)")

            return resume
        if step.kind in ("kill", "power-cut"):
            self.down.add(victim)
            cluster.kill(victim)
            if step.kind == "power-cut":
                node = self._nodes()[victim]
                power_cut(self._journal(victim), node.data_dir)
                self._log(f"power-cut {victim}: SIGKILL, files cut to their fsynced lengths")
            else:
                self._log(f"kill {victim} (SIGKILL)")
            return self._restarter(victim)
        if step.kind == "disk-full":
            node = self._nodes()[victim]
            filler = fill_disk(node.data_dir)
            self._log(f"disk-full {victim}: its filesystem filled")

            def free_and_restart() -> None:
                filler.unlink()
                self.down.add(victim)
                cluster.kill(victim)
                self._log(f"disk-full {victim}: space freed")
                self._restarter(victim)()

            return free_and_restart
        raise AssertionError(f"unknown fault kind {step.kind}")

    def _healer(self, what: str, action: Callable[[], None]) -> Callable[[], None]:
        def heal() -> None:
            action()
            self._log(f"healed {what}")

        return heal

    def _restarter(self, node_id: int) -> Callable[[], None]:
        assert self.cluster is not None
        cluster = self.cluster

        def restart() -> None:
            cluster.start(node_id)
            self.down.discard(node_id)
            self._log(f"restart {node_id}")

        return restart

    def _leader_of_partition_followed_by(self, victim: int) -> int:
        """The leader of a test partition `victim` follows; the active controller (or another
        node) when it leads them all or nothing is known."""
        for topic in TEST_TOPICS:
            described = self._any(f"/v1/topics/{topic}")
            for partition in (described or {}).get("partitions", []):
                leader = partition.get("leader", -1)
                if leader > 0 and leader != victim and victim in partition.get("replicas", []):
                    return int(leader)
        leader = self._active_controller()
        if leader is not None and leader != victim:
            return leader
        return next(node_id for node_id in NODE_IDS if node_id != victim)

    def _active_controller(self) -> int | None:
        """The quorum leader of the highest epoch any node knows of (a node that just restarted
        or was cut off may still name an old one)."""
        views = [_get(node, "/v1/quorum") for node in self._nodes().values()]
        known = [
            (view["leader_epoch"], view["leader_id"])
            for view in views
            if view is not None and view.get("leader_id", -1) > 0
        ]
        return int(max(known)[1]) if known else None

    # -- healing and evidence -------------------------------------------------------------------

    def _unhealed(self) -> str | None:
        """Why the cluster is not healed (None when every node is ready and, as every node sees
        it, every partition of every topic has a leader and its full ISR)."""
        for node_id, node in self._nodes().items():
            if not _ready(node):
                return f"node {node_id} not ready"
        for node_id, node in self._nodes().items():
            names = _get(node, "/v1/topics")
            if names is None:
                return f"node {node_id} does not list its topics"
            for listed in names:
                name = listed["name"] if isinstance(listed, dict) else listed
                described = _get(node, f"/v1/topics/{name}")
                if described is None:
                    return f"node {node_id} does not describe topic {name}"
                for partition in described["partitions"]:
                    if partition["leader"] < 0 or sorted(partition["isr"]) != sorted(
                        partition["replicas"]
                    ):
                        return (
                            f"{name}-{partition['partition']} has leader {partition['leader']}, "
                            f"ISR {partition['isr']} of replicas {partition['replicas']} "
                            f"(as node {node_id} sees it)"
                        )
        return None

    def _heal(self, evidence: checker.Evidence) -> float:
        assert self.network is not None
        self.network.heal()
        healed_at = time.monotonic()
        self._log("last fault healed; waiting for every node ready and every ISR full")
        problem: str | None = "not checked"
        while time.monotonic() - healed_at < self.heal_bound:
            self._check_exits()
            problem = self._unhealed()
            if problem is None:
                break
            time.sleep(0.5)
        if problem is None:
            evidence.heal_seconds = round(time.monotonic() - healed_at, 1)
            self._log(f"healed in {evidence.heal_seconds} s")
        else:
            evidence.heal_problem = f"after {self.heal_bound:g} s: {problem}"
            self._log(f"NOT healed within {self.heal_bound:g} s: {problem}")
        return time.time()

    def _collect(self, evidence: checker.Evidence, heal_done: float) -> None:
        for name in ("idempotent", "plain"):
            evidence.producer_events[name] = checker.read_events(self.workdir / f"{name}.jsonl")
        evidence.consumer_events = checker.read_events(self.workdir / "consumer.jsonl")
        self._heal_done = heal_done
        readback = self._client(
            "readback",
            "readback",
            "--topics",
            ",".join(TEST_TOPICS),
            "--group",
            GROUP,
            "--partitions",
            str(PARTITIONS),
        )
        try:
            readback.wait(timeout=150)
        except subprocess.TimeoutExpired:
            self.notes.append("the read-back did not finish within 150 s: killed")
            readback.kill()
            readback.wait(timeout=10)
        evidence.readback_events = checker.read_events(self.workdir / "readback.jsonl")
        nodes = self._nodes()
        evidence.leaders = checker.leaders_per_epoch({i: n.log_path for i, n in nodes.items()})
        for topic in TEST_TOPICS:
            for partition in range(PARTITIONS):
                evidence.replicas[(topic, partition)] = self._replicas_of(topic, partition)
        quorum = self._any("/v1/quorum")
        metadata = {
            node_id: checker.read_batches(node.data_dir / "__cluster_metadata-0")
            for node_id, node in nodes.items()
        }
        evidence.metadata = (quorum["high_watermark"] if quorum else 0, metadata)

    def _replicas_of(
        self, topic: str, partition: int
    ) -> tuple[int, dict[int, list[checker.Batch]]]:
        """The leader's high watermark and each replica's batches, once every replica's log
        end reached the high watermark (bounded: a replica that never does is compared as it
        is, and the checker says it ends too early)."""
        path = f"/v1/topics/{topic}/partitions/{partition}"
        deadline = time.monotonic() + 15
        while True:
            detail = self._any(path) or {}
            high_watermark = detail.get("high_watermark")
            replicas = detail.get("replicas", [])
            ends = {
                node_id: (_get(self._nodes()[node_id], f"{path}/log") or {}).get("log_end_offset")
                for node_id in replicas
            }
            settled = high_watermark is not None and all(
                end == high_watermark for end in ends.values()
            )
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        batches = {
            node_id: checker.read_batches(self._nodes()[node_id].data_dir / f"{topic}-{partition}")
            for node_id in replicas
        }
        return (high_watermark or 0, batches)

    def _after_heal_availability(
        self, evidence: checker.Evidence, verdict: checker.Verdict
    ) -> None:
        """Once healed, both producers must get writes acknowledged again and the consumer
        group must read again."""
        if evidence.heal_seconds is None:
            return
        done = getattr(self, "_heal_done", None)
        if done is None:
            return
        for name, events in evidence.producer_events.items():
            after = [e for e in events if e["event"] == "ack" and e["time"] >= done]
            verdict.counts[f"{name}_acks_after_heal"] = len(after)
            if not after:
                verdict.failures.append(
                    f"producer {name}: no write acknowledged in the {AFTER_HEAL_SECONDS:g} s "
                    "after the cluster healed"
                )
        reads = [e for e in evidence.consumer_events if e["event"] == "read"]
        after = [e for e in reads if e["time"] >= done]
        verdict.counts["consumer_reads_after_heal"] = len(after)
        if not after:
            last = max((e["time"] for e in reads), default=None)
            since = "never read" if last is None else f"last read {done - last:.0f} s before"
            verdict.failures.append(
                f"consumer group: nothing read in the {AFTER_HEAL_SECONDS:g} s after the "
                f"cluster healed ({since})"
            )

    def _node_log_notes(self, verdict: checker.Verdict) -> None:
        """Errors the nodes logged: notes, not failures by themselves (the checks above
        decide), except a fatal fault or a task exception nobody retrieved, which is a bug
        even when the node was restarted and the cluster healed."""
        for node_id, node in self._nodes().items():
            if not node.log_path.exists():
                continue
            seen = 0
            for line in node.log_path.read_text(errors="replace").splitlines():
                # A node ends by design when its every log directory failed, or when its
                # metadata log cannot be written on a full disk (Kafka halts in both cases).
                expected_halt = '"task": "log_dirs_offline"' in line or (
                    '"task": "raft_driver"' in line and "[Errno 28]" in line
                )
                fatal = '"event": "node_fatal_fault"' in line and not expected_halt
                if fatal or "Task exception was never" in line:
                    verdict.failures.append(f"node {node_id} failed: {line[:600]}")
                if '"level": "error"' in line or "Task exception was never retrieved" in line:
                    seen += 1
                    if seen <= 3:
                        self.notes.append(f"node {node_id} log: {line[:400]}")
            if seen > 3:
                self.notes.append(f"node {node_id} log: {seen - 3} more error lines")

    def _tear_down(self) -> None:
        for process in self.clients.values():
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        if self.cluster is not None:
            for node in self.cluster.nodes.values():
                # A stopped (SIGSTOP) process still dies of SIGKILL.
                if node.process is not None and node.process.poll() is None:
                    node.process.kill()
                    node.process.wait(timeout=10)
                node.process = None
        if self.network is not None:
            self.network.close()
            self._log("torn down: processes killed, namespaces, bridge, route and mounts removed")


def run_seed(
    seed: int,
    seconds: float,
    workdir: Path,
    *,
    heal_bound: float = 60.0,
    schedule: str | None = None,
) -> RunResult:
    """Run `seed`'s schedule (or the `schedule` given, as `describe` prints one) for `seconds`."""
    return FaultRun(seed, seconds, workdir, heal_bound, schedule).run()
