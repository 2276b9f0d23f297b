"""The recovery examples of reference/async-storage-and-recovery.txt on real processes.

Three controller-only voters (ids 101-103, never disturbed) and three broker-only nodes with the
example's ids 1, 2 and 3, so the partition states read back through the admin API of a
controller (`GET /v1/topics/{t}/partitions/0`, `GET /v1/events`) can be compared with the
reference's tables as written. The partition is assigned `[1, 2, 3]` by hand, so replica order
(which decides between equal candidates) is the example's.

- 5.2.2, clean ELR-based recovery: the ISR shrinks to the leader through the leader's
  AlterPartition requests, the leader crashes, the ELR member is elected cleanly, the crashed
  broker comes back through the out-of-sync phase; no acknowledged (acks=all) write is lost.
- 5.3.3, balanced unclean recovery: all three brokers crash one after the other, two of them
  lose their unflushed data in a power cut (durability journal), they come back one by one
  (steps 6-8), and the controller must recover the partition from the replica with the most
  complete log (steps 9-10: issue 18, not built yet).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from bench.cluster import Cluster
from net.client import NodeConnection
from net.records import Record, encode_batch
from tests.integration.test_produce_consume import kcat_consume, produce_request

pytestmark = pytest.mark.timeout(240)

CONTROLLERS = (101, 102, 103)
BROKERS = (1, 2, 3)
# The controller node every view is read from: controllers are never killed or paused.
OBSERVER = CONTROLLERS[0]
NO_LEADER = -1
# The replica fetcher's long poll (broker.replica_fetcher.FETCH_MAX_WAIT is 500 ms): once a
# paused follower's last Fetch waited this long at its leader, the leader has answered it, so
# nothing written afterwards can reach the follower through its socket buffer when it resumes.
FETCH_ANSWERED_S = 1.0


class State(NamedTuple):
    """A partition's leadership and replica sets, as the reference's tables give them."""

    leader: int
    isr: list[int]
    elr: list[int]
    last_known_elr: list[int]


def state_of(view: dict[str, Any]) -> State:
    return State(view["leader"], view["isr"], view["elr"], view["last_known_elr"])


def partition(cluster: Cluster, topic: str) -> dict[str, Any]:
    """The partition as a controller sees it, with its leader's log view when it has one."""
    view: dict[str, Any] = cluster.nodes[OBSERVER].get(
        f"/v1/topics/{topic}/partitions/0", timeout=5.0
    )
    return view


def wait_state(cluster: Cluster, topic: str, expected: State, timeout: float = 30.0) -> None:
    seen: list[State | str] = []

    def reached() -> bool:
        try:
            seen.append(state_of(partition(cluster, topic)))
        except (OSError, ValueError) as error:
            # The controller answering may not have replayed the topic yet (404).
            seen.append(repr(error))
        return seen[-1] == expected

    try:
        cluster.wait_for(f"{topic}-0 in state {expected}", reached, timeout)
    except AssertionError as error:
        raise AssertionError(f"{topic}-0 last seen in {seen[-1:]}; {error}") from None


def events(cluster: Cluster) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = cluster.nodes[OBSERVER].get("/v1/events", timeout=5.0)
    return listed


def partition_states(cluster: Cluster, topic: str, after: int = -1) -> list[tuple[int, State]]:
    """(metadata offset, state) after each change of the partition, from the event log, with
    consecutive repeats (one change reported as several events) folded."""
    changes: list[tuple[int, State]] = []
    for event in events(cluster):
        if event["offset"] <= after or event["topic"] != topic or event["isr"] is None:
            continue
        state = state_of(event)
        if not changes or changes[-1][1] != state:
            changes.append((event["offset"], state))
    return changes


def fenced_at(cluster: Cluster, broker: int, after: int = -1) -> list[int]:
    """The metadata offsets at which `broker` was fenced."""
    return [
        event["offset"]
        for event in events(cluster)
        if event["offset"] > after
        and event["type"] == "broker_fenced"
        and event["broker"] == broker
    ]


def brokers(cluster: Cluster) -> dict[int, dict[str, Any]]:
    return {broker["id"]: broker for broker in cluster.nodes[OBSERVER].get("/v1/brokers")}


def start_cluster(root: Path, settings: dict[str, str], journals: bool = False) -> Cluster:
    cluster = Cluster.controllers_from(root, CONTROLLERS[0], len(CONTROLLERS), **settings)
    cluster.add_brokers(BROKERS)
    if journals:
        for broker in BROKERS:
            cluster.keep_durability_journal(broker)
    cluster.start_all()
    cluster.wait_for(
        "a quorum leader", lambda: cluster.agreed_leader(list(CONTROLLERS)), timeout=30
    )
    cluster.wait_for(
        "brokers ready", lambda: all(cluster.ready(broker) for broker in BROKERS), timeout=60
    )
    return cluster


@pytest.fixture
def stopped(tmp_path: Path) -> Iterator[list[Cluster]]:
    """Where a test puts its cluster, to have every process killed however the test ends."""
    clusters: list[Cluster] = []
    yield clusters
    for cluster in clusters:
        for node_id in cluster.running():
            # A paused process cannot even die until it is continued.
            cluster.resume(node_id)
        cluster.stop_all()


def create_topic(cluster: Cluster, topic: str) -> None:
    """`topic`, one partition on replicas [1, 2, 3] (leader 1), min.insync.replicas=2."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = NewTopic(
        topic, 1, replica_assignment=[list(BROKERS)], config={"min.insync.replicas": "2"}
    )
    admin.create_topics([new])[topic].result(timeout=30)
    wait_state(cluster, topic, State(1, list(BROKERS), [], []))


def produce(
    cluster: Cluster, broker: int, topic: str, values: list[str], acks: int
) -> tuple[ErrorCode, int]:
    """One batch of `values` sent to `broker` with `acks`, without retries: (error, base
    offset) as the broker answered."""

    async def send() -> tuple[ErrorCode, int]:
        connection = NodeConnection(
            "127.0.0.1", cluster.nodes[broker].broker_port or 0, request_timeout=15.0
        )
        try:
            batch = encode_batch([Record(value.encode()) for value in values])
            response: Any = await connection.send(produce_request(topic, batch, acks=acks))
        finally:
            await connection.close()
        answer = response.responses[0].partition_responses[0]
        return ErrorCode(answer.error_code), answer.base_offset

    return asyncio.run(send())


def produce_acknowledged(
    cluster: Cluster, broker: int, topic: str, values: list[str], acks: int
) -> dict[int, str]:
    """`values` written and acknowledged: offset -> value."""
    error, base = produce(cluster, broker, topic, values, acks)
    assert error == ErrorCode.none, (error, values)
    return {base + index: value for index, value in enumerate(values)}


def read_all(cluster: Cluster, topic: str) -> dict[int, str]:
    """Everything a consumer reads (below the high watermark): offset -> value."""
    return {offset: value for _, offset, value in kcat_consume(cluster, topic)}


def test_example_5_2_2_clean_elr_based_recovery(tmp_path: Path, stopped: list[Cluster]) -> None:
    """5.2.2 step by step. The ISR shrinks by the leader's AlterPartition: a SIGSTOPped
    follower stops fetching and is dropped after `replica.lag.time.max.ms` (2 s), while its
    broker session (12 s) is still valid, so it is out of the ISR before any fencing (the events
    prove the order). Broker 2 stays paused until the end; its session expires meanwhile, which
    changes nothing since it is in neither ISR nor ELR then. Broker 3 is paused only until
    broker 1 is killed, so that it is an unfenced ELR member when broker 1 is fenced.

    Step 3 differs from the reference's table, which says `ELR=[]`: by case C (5.2.1) the
    fenced leader joins the ELR, since the new ISR [3] is below MinISR, and Kafka's
    PartitionChangeBuilder does the same (an unclean shutdown is only known at registration).
    The state is `Leader=3, ISR=[3], ELR=[1]` until broker 1 registers again without a
    clean-shutdown epoch, which moves it to the LastKnownELR ("Unclean Exclusion"); the ISR
    reaching MinISR again then clears both (case G), as the table's step 4 says.
    """
    topic = "clean-recovery"
    cluster = start_cluster(
        tmp_path,
        {
            "replica.lag.time.max.ms": "2000",
            "broker.session.timeout.ms": "12000",
            "broker.heartbeat.interval.ms": "500",
            # Broker 1 is the preferred leader: no rebalance may move the leadership back.
            "auto.leader.rebalance.enable": "false",
        },
    )
    stopped.append(cluster)
    create_topic(cluster, topic)

    # 1. Leader=1, ISR=[1,2,3], ELR=[].
    wait_state(cluster, topic, State(1, [1, 2, 3], [], []))
    epoch = partition(cluster, topic)["leader_epoch"]
    broker_2_epoch = brokers(cluster)[2]["epoch"]
    acknowledged = produce_acknowledged(cluster, 1, topic, [f"a{i}" for i in range(10)], -1)

    # 2a. Replica 2 leaves the ISR (case F): Leader=1, ISR=[1,3], ELR=[].
    before_shrink = events(cluster)[-1]["offset"]
    cluster.pause(2)
    wait_state(cluster, topic, State(1, [1, 3], [], []), timeout=15)
    assert not brokers(cluster)[2]["fenced"], "the ISR shrank by fencing, not AlterPartition"
    shrunk_at = partition_states(cluster, topic, before_shrink)[0][0]
    assert not [offset for offset in fenced_at(cluster, 2, before_shrink) if offset < shrunk_at]
    # ISR=[1,3] is still MinISR: acks=all writes are acknowledged.
    acknowledged |= produce_acknowledged(cluster, 1, topic, [f"b{i}" for i in range(10)], -1)

    # 2b. Replica 3 leaves too; the ISR is below MinISR, so 3 joins the ELR (5.2: "once the
    # ISR reaches MinISR, any further ISR removals become moves to the ELR"):
    # Leader=1, ISR=[1], ELR=[3].
    cluster.pause(3)
    wait_state(cluster, topic, State(1, [1], [3], []), timeout=15)
    assert not brokers(cluster)[3]["fenced"]
    # The HWM cannot advance any more: acks=all is refused, acks=1 is written on the leader
    # alone and never committed.
    frozen = partition(cluster, topic)["high_watermark"]
    assert frozen == len(acknowledged)
    time.sleep(FETCH_ANSWERED_S)
    error, _ = produce(cluster, 1, topic, ["refused"], -1)
    assert error == ErrorCode.not_enough_replicas
    uncommitted = produce_acknowledged(cluster, 1, topic, [f"u{i}" for i in range(5)], 1)
    view = partition(cluster, topic)
    assert view["high_watermark"] == frozen
    assert view["log_end_offsets"]["1"] == frozen + len(uncommitted)

    # 3. The leader crashes (SIGKILL: an unclean shutdown). The controller fences it after its
    # session and elects the ELR member 3 (case B; 1 joins the ELR by case C, see above).
    cluster.kill(1)
    cluster.resume(3)
    before_fence = events(cluster)[-1]["offset"]
    wait_state(cluster, topic, State(3, [3], [1], []), timeout=30)
    assert brokers(cluster)[1]["fenced"]
    view = partition(cluster, topic)
    assert view["leader_epoch"] == epoch + 1
    assert fenced_at(cluster, 1, before_fence)
    assert [state for _, state in partition_states(cluster, topic, before_shrink)] == [
        State(1, [1, 3], [], []),
        State(1, [1], [3], []),
        State(3, [3], [1], []),
    ]
    # A clean election (from the ELR), no potential data loss.
    assert [
        (event["type"], event["previous_leader"])
        for event in events(cluster)
        if event["offset"] > before_fence and event["leader"] == 3
        if event["type"] in ("leader_changed", "unclean_election")
    ] == [("leader_changed", 1)]
    assert [event for event in events(cluster) if event["data_loss_possible"]] == []

    # 4. Broker 1 registers again (no clean-shutdown marker: it leaves the ELR for the
    # LastKnownELR), catches up with leader 3 and rejoins the ISR: Leader=3, ISR=[1,3], ELR=[].
    before_restart = events(cluster)[-1]["offset"]
    cluster.start(1)
    wait_state(cluster, topic, State(3, [1, 3], [], []), timeout=45)
    assert [state for _, state in partition_states(cluster, topic, before_restart)] == [
        State(3, [3], [], [1]),
        State(3, [1, 3], [], []),
    ]

    # And broker 2 comes back too: its session expired while it was paused, so it was fenced
    # (changing nothing here), and its heartbeats unfence it again under the same
    # registration; it catches up and rejoins.
    assert fenced_at(cluster, 2, before_shrink)
    cluster.resume(2)
    wait_state(cluster, topic, State(3, [1, 2, 3], [], []), timeout=45)
    registration = brokers(cluster)[2]
    assert not registration["fenced"] and registration["epoch"] == broker_2_epoch, registration
    assert [event for event in events(cluster) if event["data_loss_possible"]] == []
    end = len(acknowledged)
    cluster.wait_for(
        "every replica at the same log end, all of it committed",
        lambda: (
            (view := partition(cluster, topic))["log_end_offsets"] == {"1": end, "2": end, "3": end}
            and view["high_watermark"] == end
        ),
        15,
    )

    # No acks=all record was lost, and what was never committed was never served.
    read = read_all(cluster, topic)
    assert {offset: read.get(offset) for offset in acknowledged} == acknowledged
    assert not set(uncommitted.values()) & set(read.values())
    assert "refused" not in read.values()


def test_example_5_3_3_balanced_unclean_recovery(tmp_path: Path, stopped: list[Cluster]) -> None:
    """5.3.3 step by step, with the example's LEOs: replica 1 has 15 records, replica 2 has 12
    and replica 3 has 10 (followers paused at different times while acks=1 writes go on; the
    long `replica.lag.time.max.ms` keeps the ISR full); the leader's HWM is 10.

    The power outage: the three brokers are SIGKILLed 3 s apart (1, then 2, then 3), within
    one broker session (8 s), so the controller fences them one by one in that order while
    none of them runs any more (as in the reference, no replica copies anything after the
    outage: the survivors cannot reach a leader). Killing each only once the previous one was
    fenced would let replica 3 catch up with the new leader 2 first, which the example does
    not do. The states of steps 3 and 4 last one gap each; they are checked in the event log
    (each event carries the partition's whole state, in metadata-log order), step 5 live.

    Brokers 1 and 3 are then power-cut (files cut back to their fsynced lengths: with the
    default flush policy, only on segment roll, their segment was never synced and they lose
    their whole log, committed records included), broker 2 is not, and they restart in the
    order 1, 2, 3 (steps 6-8, each checked). Steps 9-10, the controller's balanced recovery
    (GetReplicaLogInfo to the LastKnownELR, highest last epoch then LEO), are issue 18's.
    """
    topic = "balanced-recovery"
    session_ms = 8000
    gap_s = 3.0
    cluster = start_cluster(
        tmp_path,
        {
            "broker.session.timeout.ms": str(session_ms),
            "broker.heartbeat.interval.ms": "500",
            "replica.lag.time.max.ms": "60000",
            "unclean.recovery.strategy": "balanced",
            "unclean.leader.election.enable": "false",
            "auto.leader.rebalance.enable": "false",
        },
        journals=True,
    )
    stopped.append(cluster)
    create_topic(cluster, topic)

    # 1. Leader=1, ISR=[1,2,3], ELR=[], LastKnownELR=[]; LEOs 15, 12, 10; leader's HWM 10.
    wait_state(cluster, topic, State(1, [1, 2, 3], [], []))
    committed = produce_acknowledged(cluster, 1, topic, [f"c{i}" for i in range(5)], -1)
    committed |= produce_acknowledged(cluster, 1, topic, [f"c{i}" for i in range(5, 10)], -1)
    assert sorted(committed) == list(range(10))
    cluster.pause(3)
    time.sleep(FETCH_ANSWERED_S)
    on_1_and_2 = produce_acknowledged(cluster, 1, topic, ["r10", "r11"], 1)
    cluster.wait_for(
        "replica 2 at LEO 12",
        lambda: partition(cluster, topic)["log_end_offsets"]["2"] == 12,
        10,
    )
    cluster.pause(2)
    time.sleep(FETCH_ANSWERED_S)
    produce_acknowledged(cluster, 1, topic, ["r12", "r13", "r14"], 1)
    view = partition(cluster, topic)
    assert state_of(view) == State(1, [1, 2, 3], [], [])
    assert view["log_end_offsets"] == {"1": 15, "2": 12, "3": 10}
    assert view["high_watermark"] == 10
    before_outage = events(cluster)[-1]["offset"]
    epoch = view["leader_epoch"]

    # 2. The power outage: every broker stops, one after the other.
    cluster.kill(1)
    # Heartbeating again, so their sessions end after broker 1's; they cannot fetch anything.
    cluster.resume(2)
    cluster.resume(3)
    time.sleep(gap_s)
    cluster.kill(2)
    time.sleep(gap_s)
    cluster.kill(3)

    # 3-5. The controller fences 1, 2 and 3 in turn.
    # 5. Leader=NoLeader, ISR=[], ELR=[2,3], LastKnownELR=[].
    wait_state(cluster, topic, State(NO_LEADER, [], [2, 3], []), timeout=session_ms / 1000 + 15)
    assert all(brokers(cluster)[broker]["fenced"] for broker in BROKERS)
    changes = partition_states(cluster, topic, before_outage)
    assert [state for _, state in changes] == [
        # 3. Broker 1 fenced, replica 2 elected: Leader=2, ISR=[2,3], ELR=[] (case D).
        State(2, [2, 3], [], []),
        # 4. Broker 2 fenced, replica 3 elected: Leader=3, ISR=[3], ELR=[2] (case C).
        State(3, [3], [2], []),
        # 5. Broker 3 fenced: no leader, ISR=[], ELR=[2,3] (case A).
        State(NO_LEADER, [], [2, 3], []),
    ]
    for broker, (offset, _) in zip(BROKERS, changes, strict=True):
        fences = fenced_at(cluster, broker, before_outage)
        assert fences and fences[0] <= offset, (broker, fences, changes)
    epochs = [
        event["leader_epoch"]
        for event in events(cluster)
        if event["offset"] > before_outage
        and event["type"] in ("leader_changed", "partition_offline")
    ]
    assert epochs == [epoch + 1, epoch + 2, epoch + 3]

    # The power cut: brokers 1 and 3 lose what they had not fsynced; broker 2 keeps its log.
    logs = {broker: cluster.nodes[broker].data_dir / f"{topic}-0" for broker in BROKERS}
    sizes = {
        broker: sum(f.stat().st_size for f in logs[broker].glob("*.log")) for broker in BROKERS
    }
    cluster.power_cut(1)
    cluster.power_cut(3)
    after = {
        broker: sum(f.stat().st_size for f in logs[broker].glob("*.log")) for broker in BROKERS
    }
    assert after[1] < sizes[1] and after[3] < sizes[3], (sizes, after)
    assert after[2] == sizes[2] > sizes[3], (sizes, after)
    before_restarts = events(cluster)[-1]["offset"]

    # 6. Broker 1 starts with its committed data lost, registers without a broker epoch; it is
    # in neither ISR nor ELR: Leader=NoLeader, ISR=[], ELR=[2,3], LastKnownELR=[].
    cluster.start(1)
    cluster.wait_for("broker 1 ready", lambda: cluster.ready(1), timeout=45)
    assert state_of(partition(cluster, topic)) == State(NO_LEADER, [], [2, 3], [])
    assert partition_states(cluster, topic, before_restarts) == []

    # 7. Broker 2 starts with no loss, registers without a broker epoch and moves from the
    # ELR to the LastKnownELR: Leader=NoLeader, ISR=[], ELR=[3], LastKnownELR=[2].
    cluster.start(2)
    cluster.wait_for("broker 2 ready", lambda: cluster.ready(2), timeout=45)
    assert state_of(partition(cluster, topic)) == State(NO_LEADER, [], [3], [2])

    # 8. Broker 3 starts with its committed data lost and moves to the LastKnownELR too:
    # Leader=NoLeader, ISR=[], ELR=[], LastKnownELR=[2,3]. (From the event log: with balanced
    # recovery the controller leaves this state at once.)
    cluster.start(3)
    cluster.wait_for("broker 3 ready", lambda: cluster.ready(3), timeout=45)
    restarts = [state for _, state in partition_states(cluster, topic, before_restarts)]
    assert restarts[:2] == [
        State(NO_LEADER, [], [3], [2]),
        State(NO_LEADER, [], [], [2, 3]),
    ], restarts

    # 9-10. Balanced recovery: GetReplicaLogInfo to the LastKnownELR (2 and 3); replica 2 has
    # the highest (last epoch, LEO) and is elected, reported as a potential data-loss event.
    cluster.wait_for(
        "balanced recovery to elect replica 2",
        lambda: partition(cluster, topic)["leader"] == 2,
        timeout=20,
    )
    # The one potential data-loss event of the whole example (the outage's elections were clean).
    recoveries = [
        event
        for event in events(cluster)
        if event.get("topic") == topic and event["data_loss_possible"]
    ]
    assert len(recoveries) == 1, recoveries
    (recovery,) = recoveries
    assert recovery["type"] == "unclean_recovery", recovery
    assert (recovery["strategy"], recovery["leader"]) == ("balanced", 2), recovery
    # Every LastKnownELR member's answer: replica 2 kept its 12 records, replica 3 lost its
    # unflushed ones; nothing beyond replica 2's log end is lost.
    answers = {r["broker"]: r["log_end_offset"] for r in recovery["replica_logs"]}
    assert sorted(answers) == [2, 3] and answers[2] == 12 and answers[3] < 12, recovery
    assert recovery["lost_offsets"] is None, recovery
    # The election that follows it: replica 2 alone in the ISR, ELR and LastKnownELR cleared.
    elected = [state for _, state in partition_states(cluster, topic, recovery["offset"])]
    assert elected[0] == State(2, [2], [], []), elected

    # In the end, no committed data was lost: 1 and 3 recover from replica 2.
    wait_state(cluster, topic, State(2, [1, 2, 3], [], []), timeout=45)
    read = read_all(cluster, topic)
    assert {offset: read.get(offset) for offset in committed | on_1_and_2} == (
        committed | on_1_and_2
    )
