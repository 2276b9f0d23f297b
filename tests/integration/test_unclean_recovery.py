"""Unclean recovery on real processes (async-storage-and-recovery.txt 5.3, KIP-966).

A partition whose every replica restarted uncleanly has an empty ISR and ELR: no clean election
is ever possible, and the controller inspects the replicas' logs (GetReplicaLogInfo) to elect
one, by the topic's `unclean.recovery.strategy`:

- one node with default settings (balanced): its RF 1 partition leads again after `kill -9`
  and a restart, with every acknowledged record, and the event log reports the recovery;
- balanced waits for every LastKnownELR member, naming the missing one, and elects once it
  returns; proactive elects the best answer within its window; manual waits for the operator,
  who elects through the admin API and the CLI.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster, kraft_executable
from tests.integration.test_admin_api import call
from tests.integration.test_leader_epoch_scenarios import produce
from tests.integration.test_produce_consume import kcat_consume

pytestmark = pytest.mark.timeout(180)

FAST_SESSIONS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300"}


def create_topic(cluster: Cluster, name: str, assignment: list[int], **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = NewTopic(name, 1, replica_assignment=[assignment], config=configs)
    admin.create_topics([topic])[name].result(30)


def partition(cluster: Cluster, observer: int, topic: str) -> dict[str, Any]:
    state: dict[str, Any] = cluster.nodes[observer].get(f"/v1/topics/{topic}/partitions/0")
    return state


def events(cluster: Cluster, observer: int, topic: str, kind: str) -> list[dict[str, Any]]:
    """The observer's events of `kind` for `topic`; none while its admin API answers slowly."""
    try:
        listed = cluster.nodes[observer].get("/v1/events", timeout=5)
    except OSError:
        return []
    return [event for event in listed if event["type"] == kind and event.get("topic") == topic]


@pytest.fixture
def single_node(tmp_path: Path) -> Iterator[Cluster]:
    """One combined node with every setting at its default."""
    cluster = Cluster.combined(tmp_path, 1)
    cluster.start_all()
    try:
        cluster.wait_for("node ready", lambda: cluster.ready(1), 30)
        yield cluster
    finally:
        cluster.stop_all()


async def test_one_node_with_defaults_leads_again_after_kill_9(single_node: Cluster) -> None:
    cluster = single_node
    await asyncio.to_thread(create_topic, cluster, "solo", [1])
    values = [f"m{i}" for i in range(100)]
    await asyncio.to_thread(produce, cluster, "solo", values, "all")

    cluster.kill(1)
    cluster.start(1)
    await asyncio.to_thread(
        cluster.wait_for,
        "the partition led again",
        lambda: cluster.ready(1) and partition(cluster, 1, "solo")["leader"] == 1,
        10.0,
    )
    state = partition(cluster, 1, "solo")
    assert (state["isr"], state["elr"], state["last_known_elr"]) == ([1], [], [])
    read = await asyncio.to_thread(kcat_consume, cluster, "solo")
    assert [value for _, _, value in read] == values

    [recovery] = events(cluster, 1, "solo", "unclean_recovery")
    assert recovery["data_loss_possible"] is True
    assert recovery["strategy"] == "balanced"
    assert recovery["leader"] == 1
    assert [(r["broker"], r["log_end_offset"]) for r in recovery["replica_logs"]] == [(1, 100)]
    assert recovery["lost_offsets"] is None
    # The election itself is not reported as a second data-loss event.
    assert [e for e in cluster.nodes[1].get("/v1/events") if e["data_loss_possible"]] == [recovery]


CONTROLLERS = (101, 102, 103)
A, B = 1, 2


@pytest.fixture
def split(tmp_path: Path) -> Iterator[Cluster]:
    """Three controller-only voters and brokers 1 and 2, with short broker sessions and a 2 s
    recovery window: both brokers may be down while the quorum stands."""
    settings = {**FAST_SESSIONS, "unclean.recovery.timeout.ms": "2000"}
    cluster = Cluster.controllers_from(tmp_path, CONTROLLERS[0], len(CONTROLLERS), **settings)
    cluster.add_brokers([A, B])
    cluster.start_all()
    try:
        cluster.wait_for("brokers ready", lambda: cluster.ready(A) and cluster.ready(B), 30)
        yield cluster
    finally:
        cluster.stop_all()


def observer(cluster: Cluster) -> int:
    """A running controller whose admin API answers."""
    return next(node for node in CONTROLLERS if node in cluster.running())


def shape(state: dict[str, Any]) -> tuple[int, list[int], list[int], list[int]]:
    return state["leader"], state["isr"], state["elr"], state["last_known_elr"]


def wait_for_shape(
    cluster: Cluster, observer: int, topic: str, expected: tuple[Any, ...], timeout: float = 60
) -> None:
    def reached() -> bool:
        try:
            state = cluster.nodes[observer].get(f"/v1/topics/{topic}/partitions/0", timeout=5)
        except OSError:
            # Not replayed by the observer yet (404), or a slow answer under load.
            return False
        return shape(state) == expected

    cluster.wait_for(f"{topic} (leader, isr, elr, last_known_elr) = {expected}", reached, timeout)


def wait_fenced(cluster: Cluster, observer: int, broker: int) -> None:
    def fenced() -> bool:
        listed = {b["id"]: b for b in cluster.nodes[observer].get("/v1/brokers")}
        return bool(listed[broker]["fenced"])

    cluster.wait_for(f"broker {broker} fenced", fenced, 30)


def crash_both_replicas(cluster: Cluster, topic: str, q: int, a: int = A, b: int = B) -> None:
    """SIGKILL both replicas one after the other (ISR [] and ELR [a, b] once both are fenced),
    then start them again: each registers without a clean shutdown and moves from the ELR to
    the LastKnownELR (5.3.3 steps 3-8, for two replicas)."""
    cluster.kill(a)
    wait_for_shape(cluster, q, topic, (b, [b], [a], []))
    cluster.kill(b)
    wait_for_shape(cluster, q, topic, (-1, [], [a, b], []))
    cluster.start(a)
    wait_for_shape(cluster, q, topic, (-1, [], [b], [a]))
    cluster.start(b)
    wait_for_shape(cluster, q, topic, (-1, [], [], [a, b]))


VALUES = [f"m{i}" for i in range(20)]


def last_known_elr_of_both(cluster: Cluster, topic: str, q: int) -> None:
    """`topic` on brokers A and B (min.insync.replicas 2, manual recovery, so that nothing
    races the test), VALUES acknowledged by both, then both crashed and restarted: leaderless
    with ISR and ELR empty and LastKnownELR [A, B]."""
    configs = {"min.insync.replicas": "2", "unclean.recovery.strategy": "manual"}
    create_topic(cluster, topic, [A, B], **configs)
    produce(cluster, topic, VALUES, "all")
    crash_both_replicas(cluster, topic, q)


def alter_topic(cluster: Cluster, node: int, topic: str, **configs: str) -> None:
    status, answer = call(
        cluster, node, "PATCH", f"/v1/topics/{topic}/configs", {"set": configs}, token=None
    )
    assert status == 200, answer


async def test_balanced_waits_for_every_last_known_elr_member(split: Cluster) -> None:
    cluster = split
    a, b, q = A, B, observer(cluster)
    await asyncio.to_thread(last_known_elr_of_both, cluster, "waits", q)
    values = VALUES

    # Broker b goes down again; balanced recovery may not elect a without b's answer.
    cluster.kill(b)
    await asyncio.to_thread(wait_fenced, cluster, q, b)
    await asyncio.to_thread(
        alter_topic, cluster, q, "waits", **{"unclean.recovery.strategy": "balanced"}
    )
    [waiting] = await asyncio.to_thread(
        cluster.wait_for,
        "a recovery waiting for b",
        lambda: events(cluster, q, "waits", "unclean_recovery_waiting"),
    )
    assert waiting["waiting_for"] == [b]
    assert waiting["data_loss_possible"] is False
    assert [r["broker"] for r in waiting["replica_logs"]] == [a]
    await asyncio.sleep(2)
    assert shape(partition(cluster, q, "waits")) == (-1, [], [], [a, b])

    cluster.start(b)
    [recovery] = await asyncio.to_thread(
        cluster.wait_for,
        "the recovery",
        lambda: events(cluster, q, "waits", "unclean_recovery"),
        30,
    )
    assert recovery["strategy"] == "balanced"
    assert sorted(r["broker"] for r in recovery["replica_logs"]) == [a, b]
    leader = recovery["leader"]
    await asyncio.to_thread(wait_for_shape, cluster, q, "waits", (leader, sorted([a, b]), [], []))
    read = await asyncio.to_thread(kcat_consume, cluster, "waits")
    assert [value for _, _, value in read] == values


async def test_proactive_elects_the_best_answer_within_its_window(split: Cluster) -> None:
    cluster = split
    a, b, q = A, B, observer(cluster)
    configs = {"min.insync.replicas": "2", "unclean.recovery.strategy": "proactive"}
    await asyncio.to_thread(create_topic, cluster, "eager", [a, b], **configs)
    values = [f"m{i}" for i in range(20)]
    await asyncio.to_thread(produce, cluster, "eager", values, "all")
    cluster.kill(a)
    await asyncio.to_thread(wait_for_shape, cluster, q, "eager", (b, [b], [a], []))
    cluster.kill(b)
    await asyncio.to_thread(wait_for_shape, cluster, q, "eager", (-1, [], [a, b], []))

    # Only a returns: b, in the ELR, stays fenced; proactive does not wait for it.
    cluster.start(a)
    [recovery] = await asyncio.to_thread(
        cluster.wait_for,
        "the recovery",
        lambda: events(cluster, q, "eager", "unclean_recovery"),
        20,
    )
    assert recovery["strategy"] == "proactive"
    assert recovery["leader"] == a
    assert [r["broker"] for r in recovery["replica_logs"]] == [a]
    await asyncio.to_thread(wait_for_shape, cluster, q, "eager", (a, [a], [], []))
    detail = cluster.nodes[q].get("/v1/topics/eager/partitions/0", timeout=5)
    assert detail["log_end_offsets"][str(a)] == len(values)
    # Below min.insync.replicas the high watermark holds (KIP-966); b's return heals it.
    cluster.start(b)
    await asyncio.to_thread(wait_for_shape, cluster, q, "eager", (a, [a, b], [], []))
    read = await asyncio.to_thread(kcat_consume, cluster, "eager")
    assert [value for _, _, value in read] == values


async def test_manual_recovery_through_the_admin_api_and_the_cli(split: Cluster) -> None:
    cluster = split
    a, b, q = A, B, observer(cluster)
    await asyncio.to_thread(last_known_elr_of_both, cluster, "byhand", q)
    values = VALUES
    await asyncio.to_thread(
        cluster.wait_for, "both ready", lambda: cluster.ready(a) and cluster.ready(b), 30
    )
    await asyncio.sleep(1.5)
    assert shape(partition(cluster, q, "byhand")) == (-1, [], [], [a, b])

    # The operator sees every replica's log and the one the choice rule ranks first.
    recovery = cluster.nodes[q].get("/v1/topics/byhand/partitions/0/recovery", timeout=15)
    assert (recovery["strategy"], recovery["needs_recovery"]) == ("manual", True)
    by_broker = {r["broker"]: r for r in recovery["replicas"]}
    assert all(r["answered"] and not r["fenced"] for r in by_broker.values())
    assert by_broker[a]["log_end_offset"] == by_broker[b]["log_end_offset"] == len(values)
    assert recovery["best"] == a  # equal logs: replica order
    assert recovery["waiting_for"] == []

    # Refusals: not a replica; then a fenced replica.
    status, answer = call(
        cluster,
        q,
        "POST",
        "/v1/recoveries",
        {"topic": "byhand", "partition": 0, "leader": q},
        token=None,
    )
    assert (status, answer["error"]) == (400, "invalid_request")
    status, answer = call(
        cluster,
        q,
        "POST",
        "/v1/recoveries",
        {"topic": "nope", "partition": 0, "leader": a},
        token=None,
    )
    assert status == 404

    admin = f"http://127.0.0.1:{cluster.nodes[q].admin_port}"
    shown = subprocess.run(
        [kraft_executable(), "recover", "byhand:0", "--admin", admin],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "needs unclean recovery; the best log is replica" in shown
    elected = subprocess.run(
        [kraft_executable(), "recover", "byhand:0", "--leader", str(b), "--admin", admin, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert json.loads(elected)["partitions"][0]["leader"] == b
    # a follows b now and rejoins the ISR once caught up.
    await asyncio.to_thread(wait_for_shape, cluster, q, "byhand", (b, sorted([a, b]), [], []))
    [event] = events(cluster, q, "byhand", "unclean_recovery")
    assert (event["strategy"], event["leader"], event["data_loss_possible"]) == ("manual", b, True)
    read = await asyncio.to_thread(kcat_consume, cluster, "byhand")
    assert [value for _, _, value in read] == values

    # Led again: nothing to recover.
    status, answer = call(
        cluster,
        q,
        "POST",
        "/v1/recoveries",
        {"topic": "byhand", "partition": 0, "leader": a},
        token=None,
    )
    assert (status, answer["error"]) == (409, "election_not_needed")


async def test_a_recovery_survives_the_active_controllers_death(split: Cluster) -> None:
    """The new active controller takes the recovery over from the image: the waiting balanced
    recovery completes under it once the missing member returns."""
    cluster = split
    q = observer(cluster)
    await asyncio.to_thread(last_known_elr_of_both, cluster, "failover", q)
    values = VALUES
    cluster.kill(B)
    await asyncio.to_thread(wait_fenced, cluster, q, B)
    balanced = {"unclean.recovery.strategy": "balanced"}
    await asyncio.to_thread(alter_topic, cluster, q, "failover", **balanced)
    await asyncio.to_thread(
        cluster.wait_for,
        "a recovery waiting for b",
        lambda: events(cluster, q, "failover", "unclean_recovery_waiting"),
    )

    def controllers_agree() -> tuple[int, int, int] | None:
        return cluster.agreed_leader([c for c in CONTROLLERS if c in cluster.running()])

    active = cluster.wait_for("a quorum leader", controllers_agree)[0]
    cluster.kill(active)
    survivor = observer(cluster)
    await asyncio.to_thread(
        cluster.wait_for,
        "a new active controller",
        lambda: (leader := controllers_agree()) is not None and leader[0] != active,
        30,
    )
    cluster.start(B)
    [recovery] = await asyncio.to_thread(
        cluster.wait_for,
        "the recovery under the new controller",
        lambda: events(cluster, survivor, "failover", "unclean_recovery"),
        30,
    )
    assert recovery["strategy"] == "balanced"
    assert sorted(r["broker"] for r in recovery["replica_logs"]) == [A, B]
    leader = recovery["leader"]
    await asyncio.to_thread(wait_for_shape, cluster, survivor, "failover", (leader, [A, B], [], []))
    read = await asyncio.to_thread(kcat_consume, cluster, "failover")
    assert [value for _, _, value in read] == values
