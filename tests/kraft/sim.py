"""A seeded, deterministic simulation of a KRaft quorum around `RaftNode`.

Each node has an in-memory log that models fsync (a crash keeps only the synced prefix) and a
quorum-state "file" written synchronously, as the driver contract requires, before the
messages of the same `Ready` are sent. The network loses, delays, reorders and duplicates
messages and can be partitioned. Every invariant is checked after every step; a violation
raises `InvariantViolationError` naming the seed so that the run can be reproduced exactly.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from kraft.messages import Entry, Message
from kraft.quorum_state import QuorumState
from kraft.raft import Append, Appended, RaftConfig, RaftNode, Ready, Role, Truncate

SIM_CONFIG = RaftConfig(
    election_timeout_ms=300,
    fetch_timeout_ms=600,
    election_backoff_max_ms=300,
    request_timeout_ms=300,
    fetch_max_wait_ms=100,
    fetch_max_entries=20,
)
TICK_MS = 50


class InvariantViolationError(AssertionError):
    """A Raft safety property or liveness bound did not hold."""


@dataclass
class SimNode:
    """A node's durable state and its current incarnation (None while crashed)."""

    node_id: int
    log: list[Entry] = field(default_factory=list)
    synced_length: int = 0
    quorum_state: QuorumState = field(default_factory=QuorumState)
    raft: RaftNode | None = None
    incarnation: int = 0
    # The HW this incarnation last reported: it must never go down while the process lives
    # (a restart re-learns it from 0; the cluster's committed prefix is checked separately).
    last_high_watermark: int = 0
    # Offsets below this have been compared with the committed record.
    verified_offset: int = 0


@dataclass
class FaultProfile:
    """Per-step or per-message probabilities of the faults the network and nodes suffer."""

    loss: float = 0.05
    duplicate: float = 0.03
    max_delay_ms: int = 40
    crash: float = 0.002
    partition: float = 0.002
    heal: float = 0.004
    resign: float = 0.0005


class Simulation:
    """Drives a quorum through a seeded schedule of events and checks it after every step."""

    def __init__(self, seed: int, voters: int, observers: int = 1) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.voter_ids = list(range(1, voters + 1))
        self.node_ids = self.voter_ids + [100 + i for i in range(observers)]
        self.nodes = {node_id: SimNode(node_id) for node_id in self.node_ids}
        self.now_ms = 0
        self.faults = FaultProfile()
        self.faults_enabled = True
        self._events: list[tuple[int, int, str, tuple[object, ...]]] = []
        self._sequence = 0
        self.blocked: set[tuple[int, int]] = set()
        # Global truth: what was committed at each offset, and the leader epoch that did it.
        self.committed: dict[int, Entry] = {}
        self.commit_epoch: dict[int, int] = {}
        self.leader_of_epoch: dict[int, int] = {}
        self.steps = 0
        for node_id in self.node_ids:
            self._start(node_id)
            self._schedule(self.rng.randrange(TICK_MS), "tick", (node_id,))
        self._schedule(20, "client", ())

    # ------------------------------------------------------------------ plumbing

    def fail(self, reason: str) -> InvariantViolationError:
        """An assertion error carrying everything needed to reproduce the run."""
        return InvariantViolationError(
            f"seed={self.seed} voters={len(self.voter_ids)} step={self.steps} "
            f"t={self.now_ms}ms: {reason}"
        )

    def _schedule(self, delay_ms: int, kind: str, payload: tuple[object, ...]) -> None:
        self._sequence += 1
        heapq.heappush(self._events, (self.now_ms + delay_ms, self._sequence, kind, payload))

    def _jitter(self, bound: int) -> int:
        return self.rng.randrange(bound) if bound > 0 else 0

    def _start(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.incarnation += 1
        node.raft = RaftNode(
            node_id=node_id,
            voters=self.voter_ids,
            config=SIM_CONFIG,
            jitter=self._jitter,
            quorum_state=node.quorum_state,
            log=node.log,
            now_ms=self.now_ms,
        )
        node.last_high_watermark = 0
        node.verified_offset = 0
        self._drain(node)

    def crash(self, node_id: int) -> None:
        """Kill a node: its unsynced log tail is lost; the quorum state was written durably."""
        node = self.nodes[node_id]
        node.raft = None
        node.incarnation += 1
        del node.log[node.synced_length :]

    def restart(self, node_id: int) -> None:
        """Start a crashed node again from its durable state."""
        if self.nodes[node_id].raft is None:
            self._start(node_id)

    # ------------------------------------------------------------------ driver

    def _drain(self, node: SimNode) -> None:
        raft = node.raft
        assert raft is not None
        ready = raft.take_ready()
        self._apply(node, ready)

    def _apply(self, node: SimNode, ready: Ready) -> None:
        raft = node.raft
        assert raft is not None
        # Contract step 1: the quorum state is durable before any message leaves.
        if ready.quorum_state is not None:
            node.quorum_state = ready.quorum_state
        for op in ready.log_ops:
            if isinstance(op, Truncate):
                if op.offset < node.last_high_watermark:
                    raise self.fail(
                        f"node {node.node_id} truncates to {op.offset} below its high "
                        f"watermark {node.last_high_watermark}"
                    )
                del node.log[op.offset :]
                node.synced_length = min(node.synced_length, op.offset)
                node.verified_offset = min(node.verified_offset, op.offset)
            elif isinstance(op, Append):
                for entry in op.entries:
                    if entry.offset != len(node.log):
                        raise self.fail(f"node {node.node_id} appends {entry} at {len(node.log)}")
                    node.log.append(entry)
        if ready.fsync_up_to is not None:
            self._schedule(
                1 + self.rng.randrange(15),
                "fsync",
                (node.node_id, node.incarnation, ready.fsync_up_to),
            )
        for outgoing in ready.messages:
            self._send(node.node_id, outgoing.to, outgoing.message)
        if ready.high_watermark is not None:
            if ready.high_watermark < node.last_high_watermark:
                raise self.fail(f"node {node.node_id} high watermark went backwards")
            node.last_high_watermark = ready.high_watermark
        for entry in ready.committed:
            self._record_commit(node, entry, raft.epoch)

    def _send(self, source: int, destination: int, message: Message) -> None:
        if self.faults_enabled and self.rng.random() < self.faults.loss:
            return
        copies = 2 if self.faults_enabled and self.rng.random() < self.faults.duplicate else 1
        for _ in range(copies):
            delay = 1 + self.rng.randrange(self.faults.max_delay_ms)
            self._schedule(delay, "deliver", (source, destination, message))

    def _record_commit(self, node: SimNode, entry: Entry, epoch: int) -> None:
        known = self.committed.get(entry.offset)
        if known is None:
            self.committed[entry.offset] = entry
            self.commit_epoch[entry.offset] = epoch
        elif known != entry:
            raise self.fail(
                f"node {node.node_id} committed {entry} but {known} was committed at that offset"
            )

    # ------------------------------------------------------------------ the schedule

    def step(self) -> None:
        """Process the next event, inject faults, then check every invariant."""
        time_ms, _, kind, payload = heapq.heappop(self._events)
        self.now_ms = time_ms
        self.steps += 1
        if kind == "tick":
            (node_id,) = payload
            assert isinstance(node_id, int)
            raft = self.nodes[node_id].raft
            if raft is not None:
                raft.tick(self.now_ms)
                self._drain(self.nodes[node_id])
            self._schedule(TICK_MS, "tick", (node_id,))
        elif kind == "deliver":
            self._deliver(*payload)
        elif kind == "fsync":
            self._fsync(*payload)
        elif kind == "client":
            self._client_append()
            self._schedule(20 + self.rng.randrange(40), "client", ())
        elif kind == "restart":
            (node_id,) = payload
            assert isinstance(node_id, int)
            self.restart(node_id)
        if self.faults_enabled:
            self._inject_faults()
        self.check()

    def _deliver(self, *payload: object) -> None:
        source, destination, message = payload
        assert isinstance(source, int) and isinstance(destination, int)
        if (source, destination) in self.blocked:
            return
        node = self.nodes[destination]
        if node.raft is not None:
            node.raft.receive(message, source, self.now_ms)  # type: ignore[arg-type]
            self._drain(node)

    def _fsync(self, *payload: object) -> None:
        node_id, incarnation, up_to = payload
        assert isinstance(node_id, int) and isinstance(up_to, int)
        node = self.nodes[node_id]
        if node.raft is None or node.incarnation != incarnation:
            return
        node.synced_length = max(node.synced_length, min(up_to, len(node.log)))
        node.raft.fsync_completed(node.synced_length, self.now_ms)
        self._drain(node)

    def _client_append(self) -> None:
        node = self.nodes[self.rng.choice(self.voter_ids)]
        if node.raft is None:
            return
        count = 1 + self.rng.randrange(3)
        data = [f"{self.seed}:{self.now_ms}:{i}".encode() for i in range(count)]
        result = node.raft.append(data)
        if isinstance(result, Appended):
            self._drain(node)

    def _inject_faults(self) -> None:
        rng = self.rng
        if rng.random() < self.faults.crash:
            victim = rng.choice(self.node_ids)
            if self.nodes[victim].raft is not None:
                self.crash(victim)
                self._schedule(100 + rng.randrange(1500), "restart", (victim,))
        if rng.random() < self.faults.partition:
            shuffled = list(self.node_ids)
            rng.shuffle(shuffled)
            cut = 1 + rng.randrange(len(shuffled) - 1)
            side_a, side_b = shuffled[:cut], shuffled[cut:]
            for a in side_a:
                for b in side_b:
                    self.blocked.add((a, b))
                    if rng.random() < 0.8:  # sometimes one-way
                        self.blocked.add((b, a))
        if rng.random() < self.faults.heal:
            self.blocked.clear()
        if rng.random() < self.faults.resign:
            leader = self.leader()
            if leader is not None:
                leader.resign(self.now_ms)
                self._drain(self.nodes[leader.node_id])

    def heal(self) -> None:
        """Stop injecting faults, reconnect everyone and restart the crashed nodes."""
        self.faults_enabled = False
        self.blocked.clear()
        for node_id in self.node_ids:
            self.restart(node_id)

    # ------------------------------------------------------------------ invariants

    def check(self) -> None:
        """Check every safety property on the current state."""
        majority = len(self.voter_ids) // 2 + 1
        highest = max(self.committed, default=-1)
        for node in self.nodes.values():
            raft = node.raft
            if raft is None:
                continue
            if raft.role is Role.LEADER:
                holder = self.leader_of_epoch.setdefault(raft.epoch, node.node_id)
                if holder != node.node_id:
                    raise self.fail(f"two leaders in epoch {raft.epoch}: {holder}, {node.node_id}")
                self._check_leader_completeness(node, raft)
            hw = raft.high_watermark
            if hw > len(node.log):
                raise self.fail(f"node {node.node_id} high watermark {hw} above its log end")
            # Logs agree below each node's HW: every entry there is the committed one.
            for offset in range(node.verified_offset, hw):
                if node.log[offset] != self.committed.get(offset):
                    raise self.fail(f"node {node.node_id} log differs from committed at {offset}")
            node.verified_offset = max(node.verified_offset, hw)
        if highest >= 0:
            durable = sum(
                1
                for voter in self.voter_ids
                if self.nodes[voter].synced_length > highest
                and self.nodes[voter].log[highest] == self.committed[highest]
            )
            if durable < majority:
                raise self.fail(f"committed offset {highest} is durable on only {durable} voters")

    def _check_leader_completeness(self, node: SimNode, raft: RaftNode) -> None:
        # Every entry committed by a leader of an earlier epoch is in this leader's log.
        for offset in range(len(self.committed) - 1, -1, -1):
            if self.commit_epoch[offset] >= raft.epoch:
                continue
            if offset >= len(node.log) or node.log[offset] != self.committed[offset]:
                raise self.fail(
                    f"leader {node.node_id} of epoch {raft.epoch} lacks committed offset "
                    f"{offset} ({self.committed[offset]})"
                )
            return  # log matching: the rest of the prefix is then equal too

    # ------------------------------------------------------------------ liveness

    def leader(self) -> RaftNode | None:
        """The live leader with the highest epoch, if any."""
        leaders = [
            node.raft
            for node in self.nodes.values()
            if node.raft is not None and node.raft.role is Role.LEADER
        ]
        return max(leaders, key=lambda raft: raft.epoch, default=None)

    def run(self, steps: int) -> None:
        """Process `steps` events."""
        for _ in range(steps):
            self.step()

    def run_until_commit_after_heal(self, within_ms: int) -> int:
        """After `heal()`: wait for a leader, append, and require the entry to commit in time.

        Returns the simulated milliseconds it took.
        """
        start = self.now_ms
        marker = f"after-heal-{self.seed}".encode()
        appended_at: int | None = None
        while self.now_ms - start < within_ms:
            self.step()
            leader = self.leader()
            if appended_at is None and leader is not None:
                result = leader.append([marker])
                if isinstance(result, Appended):
                    appended_at = result.base_offset
                    node = self.nodes[leader.node_id]
                    self._drain(node)
            if appended_at is not None and self.committed.get(appended_at, None) is not None:
                if self.committed[appended_at].data != marker:
                    appended_at = None  # that append was lost with a deposed leader; retry
                    continue
                return self.now_ms - start
        raise self.fail(f"no commit within {within_ms}ms after healing")
