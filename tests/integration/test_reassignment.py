"""Reassignment and scaling end to end, on real `kraft serve` processes through the admin API
and the `kraft` CLI, while an idempotent acks=all confluent-kafka producer writes: every
acknowledged message is read back exactly once, at its acknowledged offset.

- `kraft reassign start|list|cancel` with the throttle;
- a partition of RF 3 moves to other brokers through its stages (target + old replicas with
  adding/removing, then the target with ISR = target), and the old replicas' logs are deleted;
- the active controller SIGKILLed mid-move, a target broker SIGKILLed mid-move (then started
  again), and a cancelled move each end consistent;
- a fourth broker beside three with 12 partitions of RF 3: `POST /v1/rebalance` moves the
  fewest replicas (computed here independently), evens replica and leader counts;
- `kraft brokers remove` drains a broker and unregisters it, and its node stops.

Moves are slowed down by the replication throttle (a few KB/s over a few hundred KB) so that
the tests see them in progress.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster, kraft_executable

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SETTINGS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    # Preferred elections happen when the admin API asks, not on the controller's timer.
    "auto.leader.rebalance.enable": "false",
    # The checking consumer's group makes the offsets topic: small, so moves stay few.
    "offsets.topic.num.partitions": "2",
}
# Enough bytes that a throttled move takes a few seconds.
VALUE = b"v" * 1000
# Throttled: the quota lets a first burst of 10 s worth of bytes through (Kafka's rate window
# counts at least 10 of its 11 samples), so the rate is low enough that the ~300 KB a test
# writes first outlasts that burst and the move stays in progress for many seconds.
SLOW = 10_000


def call(cluster: Cluster, node_id: int, method: str, path: str, body: Any = None) -> Any:
    """(HTTP status, decoded JSON) of one admin API request to node `node_id`."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{cluster.nodes[node_id].admin_port}{path}", data=data, method=method
    )
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, payload = error.code, error.read()
    return status, json.loads(payload) if payload else None


def get(cluster: Cluster, path: str, node_id: int | None = None) -> Any:
    """GET from the given node, or from the first running one that answers."""
    for candidate in [node_id] if node_id is not None else cluster.running():
        try:
            return cluster.nodes[candidate].get(path, timeout=10)
        except (OSError, ValueError):
            continue
    return None


def partition(cluster: Cluster, topic: str, index: int = 0) -> dict[str, Any] | None:
    described = get(cluster, f"/v1/topics/{topic}")
    if described is None:
        return None
    found: dict[str, Any] = next(p for p in described["partitions"] if p["partition"] == index)
    return found


def reassignments(cluster: Cluster) -> list[dict[str, Any]] | None:
    answer: list[dict[str, Any]] | None = get(cluster, "/v1/reassignments")
    return answer


class AckedProducer:
    """An idempotent acks=all producer writing keyed messages in a thread until stopped,
    recording (key, partition, offset) of every acknowledged one."""

    def __init__(self, cluster: Cluster, topic: str, partitions: int) -> None:
        self.topic = topic
        self.partitions = partitions
        self.acked: list[tuple[str, int, int]] = []
        self.errors: list[str] = []
        self._producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
            }
        )
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors.append(str(error))
            return
        key = message.key()
        offset = message.offset()
        partition = message.partition()
        assert key is not None and offset is not None and partition is not None
        self.acked.append((key.decode(), partition, offset))

    def _run(self) -> None:
        sent = 0
        while not self._done.is_set():
            self._producer.produce(
                self.topic,
                VALUE,
                key=f"k{sent}".encode(),
                partition=sent % self.partitions,
                on_delivery=self._delivered,
            )
            sent += 1
            self._producer.poll(0.005)

    def __enter__(self) -> AckedProducer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def wait_for_acks(self, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acked) < count:
            assert time.monotonic() < deadline, f"only {len(self.acked)} acks"
            time.sleep(0.1)

    def stop(self) -> None:
        if self._thread.is_alive():
            self._done.set()
            self._thread.join(timeout=30)
            assert self._producer.flush(120) == 0, "messages still unacknowledged"


def assert_every_ack_present_once(cluster: Cluster, producer: AckedProducer) -> None:
    """Reads every partition of the topic to its end: each acknowledged key once, at the
    offset its acknowledgement gave."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"check-{producer.topic}-{time.monotonic_ns()}",
            "enable.auto.commit": False,
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(producer.topic, p), timeout=30)[1]
            for p in range(producer.partitions)
        }
        consumer.assign([TopicPartition(producer.topic, p, 0) for p in range(producer.partitions)])
        found: list[tuple[str, int, int]] = []
        positions = dict.fromkeys(ends, 0)
        deadline = time.monotonic() + 90
        while any(positions[p] < ends[p] for p in ends):
            assert time.monotonic() < deadline, f"read to {positions}, ends {ends}"
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            key, index, offset = message.key(), message.partition(), message.offset()
            assert key is not None and index is not None and offset is not None
            found.append((key.decode(), index, offset))
            positions[index] = offset + 1
    finally:
        consumer.close()
    counts = Counter(name for name, _, _ in found)
    where = {name: (index, offset) for name, index, offset in found}
    assert producer.acked, "nothing was acknowledged"
    for name, index, offset in producer.acked:
        assert counts[name] == 1, f"{name} read {counts[name]} times"
        assert where[name] == (index, offset), (
            f"{name} acked at {index}:{offset}, read at {where[name]}"
        )


def create_topic(cluster: Cluster, topic: str, assignment: list[list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
    admin.create_topics([new])[topic].result(30)
    cluster.wait_for(
        f"{topic} led",
        lambda: (
            all(p["leader"] >= 0 for p in get(cluster, f"/v1/topics/{topic}")["partitions"])
            if get(cluster, f"/v1/topics/{topic}")
            else None
        ),
        timeout=60,
    )


def throttle(cluster: Cluster, node_id: int, bytes_per_sec: int) -> None:
    status, answer = call(
        cluster,
        node_id,
        "POST",
        "/v1/reassignments",
        {"partitions": [], "throttle_bytes_per_sec": bytes_per_sec},
    )
    assert status == 202, answer


def start_move(cluster: Cluster, node_id: int, topic: str, replicas: list[int]) -> None:
    status, answer = call(
        cluster,
        node_id,
        "POST",
        "/v1/reassignments",
        {"topic": topic, "partition": 0, "replicas": replicas},
    )
    assert status == 202, answer
    assert answer["started"] == [{"topic": topic, "partition": 0, "replicas": replicas}]


def settled(cluster: Cluster, topic: str, replicas: list[int]) -> dict[str, Any] | None:
    """The partition once no reassignment is in progress and it holds `replicas` with every
    one in the ISR."""
    moving = reassignments(cluster)
    state = partition(cluster, topic)
    if moving is None or moving or state is None:
        return None
    if state["replicas"] != replicas or sorted(state["isr"]) != sorted(replicas):
        return None
    return state


def unfenced(cluster: Cluster, ids: set[int]) -> bool:
    """Whether exactly the brokers `ids` are registered, all unfenced."""
    listed = get(cluster, "/v1/brokers")
    if listed is None:
        return False
    return {b["id"] for b in listed} == ids and not any(b["fenced"] for b in listed)


def replica_dirs(cluster: Cluster, topic: str) -> set[int]:
    """The nodes whose data directory holds a log of partition 0 of `topic`."""
    return {
        node_id
        for node_id, node in cluster.nodes.items()
        if (node.data_dir / f"{topic}-0").exists()
    }


# -- five brokers: moves ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("reassign-five")
    cluster = Cluster.combined(root, 3, **SETTINGS)
    cluster.add_brokers([4, 5])
    with cluster.started(90):
        yield cluster


def test_a_move_under_load_goes_through_its_stages(five: Cluster) -> None:
    topic = "staged"
    create_topic(five, topic, [[1, 2, 3]])
    with AckedProducer(five, topic, 1) as producer:
        producer.wait_for_acks(300)
        throttle(five, 1, SLOW)
        start_move(five, 1, topic, [3, 4, 5])
        (moving,) = five.wait_for("the move in progress", lambda: reassignments(five))
        assert moving["replicas"] == [3, 4, 5, 1, 2]
        assert moving["target"] == [3, 4, 5]
        assert moving["adding"] == [4, 5] and moving["removing"] == [1, 2]
        assert set(moving["bytes_behind"]) == {"4", "5"}
        throttle(five, 1, 0)
        state = five.wait_for("the move done", lambda: settled(five, topic, [3, 4, 5]), 120)
        producer.wait_for_acks(len(producer.acked) + 100)
    assert state["leader"] in (3, 4, 5)
    events = [e["type"] for e in get(five, "/v1/events", 1) if e.get("topic") == topic]
    moved = [e for e in events if e.startswith("reassignment_")]
    assert moved[0] == "reassignment_started" and moved[-1] == "reassignment_completed", moved
    five.wait_for("old replicas deleted", lambda: replica_dirs(five, topic) == {3, 4, 5} or None)
    assert_every_ack_present_once(five, producer)


def test_killing_the_active_controller_mid_move(five: Cluster) -> None:
    topic = "controller-killed"
    create_topic(five, topic, [[4, 5, 1]])
    with AckedProducer(five, topic, 1) as producer:
        producer.wait_for_acks(300)
        throttle(five, 4, SLOW)
        start_move(five, 4, topic, [4, 5, 2])
        five.wait_for("the move in progress", lambda: reassignments(five))
        active = get(five, "/v1/cluster")["controller_id"]
        five.kill(active)
        time.sleep(2)
        throttle(five, 4, 0)
        five.start(active)
        five.wait_for("brokers unfenced", five.brokers_unfenced, timeout=90)
        five.wait_for("the move done", lambda: settled(five, topic, [4, 5, 2]), 120)
        producer.wait_for_acks(len(producer.acked) + 100)
    assert_every_ack_present_once(five, producer)


def test_killing_a_target_broker_mid_move(five: Cluster) -> None:
    topic = "target-killed"
    create_topic(five, topic, [[1, 2, 3]])
    with AckedProducer(five, topic, 1) as producer:
        producer.wait_for_acks(300)
        throttle(five, 1, SLOW)
        start_move(five, 1, topic, [1, 2, 4])
        five.wait_for("the move in progress", lambda: reassignments(five))
        five.kill(4)
        time.sleep(2)
        # The move waits for broker 4.
        assert [r["adding"] for r in reassignments(five) or []] == [[4]]
        throttle(five, 1, 0)
        five.start(4)
        five.wait_for("the move done", lambda: settled(five, topic, [1, 2, 4]), 120)
        producer.wait_for_acks(len(producer.acked) + 100)
    five.wait_for("old replica deleted", lambda: replica_dirs(five, topic) == {1, 2, 4} or None)
    assert_every_ack_present_once(five, producer)


def test_a_cancelled_move_goes_back(five: Cluster) -> None:
    topic = "cancelled"
    create_topic(five, topic, [[2, 3]])
    with AckedProducer(five, topic, 1) as producer:
        producer.wait_for_acks(300)
        throttle(five, 2, 1000)
        start_move(five, 2, topic, [5, 1])
        five.wait_for("the move in progress", lambda: reassignments(five))
        status, state = call(five, 2, "DELETE", f"/v1/reassignments/{topic}/0")
        assert status == 200, state
        assert state["replicas"] == [2, 3]
        throttle(five, 2, 0)
        assert reassignments(five) == []
        status, answer = call(five, 2, "DELETE", f"/v1/reassignments/{topic}/0")
        assert status == 404 and answer["error"] == "no_reassignment"
        five.wait_for("back on 2, 3", lambda: settled(five, topic, [2, 3]), 60)
        producer.wait_for_acks(len(producer.acked) + 100)
    five.wait_for("added replicas deleted", lambda: replica_dirs(five, topic) == {2, 3} or None)
    assert_every_ack_present_once(five, producer)


def test_the_cli_starts_lists_and_cancels_a_move(five: Cluster) -> None:
    topic = "by-cli"
    create_topic(five, topic, [[1, 2]])
    with AckedProducer(five, topic, 1) as producer:
        producer.wait_for_acks(300)
        started = kraft(five, "reassign", "start", f"{topic}:0=3,4", "--throttle", "1000")
        assert started.returncode == 0, started.stderr
        assert started.stdout.splitlines() == [
            f"started {topic}:0 -> [3, 4]",
            "replication throttle 1000 B/s",
        ]
        listed = kraft(five, "reassign", "list")
        assert listed.returncode == 0, listed.stderr
        heading, row = listed.stdout.splitlines()
        assert heading.split()[:4] == ["TOPIC", "PARTITION", "REPLICAS", "TARGET"]
        assert row.split()[:6] == [topic, "0", "3,4,1,2", "3,4", "3,4", "1,2"]
        cancelled = kraft(five, "reassign", "cancel", f"{topic}:0")
        assert cancelled.returncode == 0, cancelled.stderr
        assert cancelled.stdout.strip() == f"cancelled: {topic}:0 back on [1, 2]"
        assert kraft(five, "reassign", "list").stdout.strip() == "no reassignment in progress"
        cleared = kraft(five, "reassign", "start", f"{topic}:0=2,1", "--throttle", "0")
        assert cleared.returncode == 0, cleared.stderr
        assert "replication throttle removed" in cleared.stdout
        five.wait_for("reordered", lambda: settled(five, topic, [2, 1]), 60)
        producer.wait_for_acks(len(producer.acked) + 100)
    assert_every_ack_present_once(five, producer)


# -- scaling out and in -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def growing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("reassign-grow")
    cluster = Cluster.combined(root, 3, **SETTINGS)
    cluster.add_brokers([4])
    for node_id in (1, 2, 3):
        cluster.start(node_id)
    try:
        cluster.wait_for("brokers unfenced", lambda: unfenced(cluster, {1, 2, 3}), timeout=90)
        yield cluster
    finally:
        cluster.stop_all()


def kraft_command(cluster: Cluster, *args: str) -> list[str]:
    """`kraft ARGS --admin <node 1>`."""
    return [kraft_executable(), *args, "--admin", f"http://127.0.0.1:{cluster.nodes[1].admin_port}"]


def kraft_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("KRAFT_")}


def kraft(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    """`kraft ARGS --admin <node 1>`, its output captured."""
    return subprocess.run(
        kraft_command(cluster, *args),
        check=False,
        capture_output=True,
        text=True,
        timeout=240,
        env=kraft_environment(),
    )


def fewest_moves(replicas: list[list[int]], brokers: list[int]) -> int:
    """The least number of replica moves that leave every broker within one of the mean."""
    counts = Counter(b for r in replicas for b in r)
    total = sum(counts.values())
    floor, extra = divmod(total, len(brokers))
    ranked = sorted(brokers, key=lambda b: -counts[b])
    allowed = {b: floor + (1 if i < extra else 0) for i, b in enumerate(ranked)}
    return sum(max(0, counts[b] - allowed[b]) for b in brokers)


def test_rebalance_onto_a_new_broker_then_remove_it(growing: Cluster) -> None:
    topic = "spread"
    admin = AdminClient({"bootstrap.servers": growing.bootstrap})
    admin.create_topics([NewTopic(topic, 12, replication_factor=3)])[topic].result(30)
    growing.wait_for(
        "every partition led",
        lambda: (
            all(p["leader"] >= 0 for p in get(growing, f"/v1/topics/{topic}")["partitions"])
            if get(growing, f"/v1/topics/{topic}")
            else None
        ),
        timeout=60,
    )
    with AckedProducer(growing, topic, 12) as producer:
        producer.wait_for_acks(300)
        growing.start(4)
        growing.wait_for("broker 4 unfenced", lambda: unfenced(growing, {1, 2, 3, 4}), timeout=90)
        before = [p["replicas"] for p in get(growing, f"/v1/topics/{topic}")["partitions"]]
        expected = fewest_moves(before, [1, 2, 3, 4])
        assert expected == 9

        status, dry = call(growing, 1, "POST", "/v1/rebalance", {})
        assert status == 200 and not dry["started"], dry
        assert dry["replicas_moved"] == expected
        executed = kraft(growing, "rebalance", "--execute", "--poll", "0.5", "--timeout", "180")
        assert executed.returncode == 0, executed.stderr
        assert "no reassignment remains and the preferred leaders lead" in executed.stdout
        assert "FROM" in executed.stderr  # the plan, then the progress
        plan = dry
        assert plan["replicas_moved"] == expected
        assert {b["broker"]: b["replicas_after"] for b in plan["brokers"]} == dict.fromkeys(
            (1, 2, 3, 4), 9
        )

        def even() -> list[dict[str, Any]] | None:
            if reassignments(growing) != []:
                return None
            partitions: list[dict[str, Any]] = get(growing, f"/v1/topics/{topic}")["partitions"]
            if any(p["leader"] != p["replicas"][0] for p in partitions):
                return None
            return partitions

        partitions = growing.wait_for("moved and elected", even, timeout=180)
        producer.wait_for_acks(len(producer.acked) + 100)
    replicas = Counter(b for p in partitions for b in p["replicas"])
    leaders = Counter(p["leader"] for p in partitions)
    assert replicas == dict.fromkeys((1, 2, 3, 4), 9)
    assert leaders == dict.fromkeys((1, 2, 3, 4), 3)
    moved = sum(
        len(set(after["replicas"]) - set(old))
        for after, old in zip(partitions, before, strict=True)
    )
    assert moved == expected
    assert_every_ack_present_once(growing, producer)

    # Removing broker 4 again with the CLI: it drains the broker, waits until it hosts
    # nothing, and unregisters it; the node stops itself.
    status, refused = call(growing, 1, "DELETE", "/v1/brokers/3")
    assert status == 409 and refused["error"] == "broker_has_replicas", refused
    removed = kraft(growing, "brokers", "remove", "4", "--poll", "0.5", "--timeout", "180")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.strip() == "broker 4 drained and removed"
    assert 4 not in {b["id"] for b in get(growing, "/v1/brokers", 1)}
    hosted = [
        p for t in get(growing, "/v1/topics", 1) for p in t["partitions"] if 4 in p["replicas"]
    ]
    assert hosted == []
    node = growing.nodes[4].process
    assert node is not None and node.wait(timeout=60) == 0
    status, _ = call(growing, 1, "DELETE", "/v1/brokers/4")
    assert status == 404
