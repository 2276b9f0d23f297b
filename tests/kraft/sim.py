"""A seeded, deterministic simulation of a KRaft quorum around `RaftNode`.

Each node has an in-memory log that models fsync (a crash keeps only the synced prefix) and a
quorum-state "file" written synchronously, as the driver contract requires, before the
messages of the same `Ready` are sent. The network loses, delays, reorders and duplicates
messages and can be partitioned. Every invariant is checked after every step; a violation
raises `InvariantViolationError` naming the seed so that the run can be reproduced exactly.

With a `storage_root`, each node also keeps its log where the real driver does: a
`kraft.metadata_log.MetadataLog` over a real storage log and snapshot files in its own
directory, which every `Ready` is applied to as the driver applies it, and which must hold
exactly the state machine's offsets after every `Ready`. A restarted node then starts, as the
driver does, from what that storage log holds, opened with a stale log-start checkpoint; a
crash is either a power cut (the storage log loses the unsynced tail, as the model does) or a
SIGKILL (the page cache survives: everything written stays, synced or not).

Each node also runs a toy controller whose metadata image is the list of the digests of the
committed entries it applied. At random times it snapshots that image on a random node (the
snapshot bytes are the digests, so they take several FetchSnapshot chunks to transfer) and
the node deletes its log prefix. A crashed observer sometimes loses its whole disk, quorum state
included, and must catch up through a snapshot. Voters never lose their disk: Raft's safety
rests on a voter keeping what it acknowledged (and its vote), so a voter with an empty disk
could let a committed entry be lost; voters catch up through snapshots when they lag behind the
leader's log start instead (Kafka needs KIP-853's directory ids to make disk loss safe).
"""

from __future__ import annotations

import hashlib
import heapq
import random
import shutil
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from kraft.messages import Entry, FetchSnapshotResponse, Message, SnapshotId
from kraft.metadata_log import MetadataLog, MetadataLogDivergedError
from kraft.quorum_state import QuorumState
from kraft.raft import (
    Append,
    Appended,
    DeleteBefore,
    LoadSnapshot,
    LocalSnapshot,
    RaftConfig,
    RaftNode,
    Ready,
    Role,
    SnapshotChunkToWrite,
    Truncate,
)
from storage.log import Log, LogConfig

SIM_CONFIG = RaftConfig(
    election_timeout_ms=300,
    fetch_timeout_ms=600,
    election_backoff_max_ms=300,
    request_timeout_ms=300,
    fetch_max_wait_ms=100,
    fetch_max_entries=20,
    # Small chunks, so that a transfer takes several FetchSnapshot round trips.
    fetch_snapshot_max_bytes=256,
)
TICK_MS = 50
DIGEST_BYTES = 8
# Small segments, so that rolls, deletions of whole segments and truncations across segment
# boundaries all happen within a run.
SIM_LOG_CONFIG = LogConfig(segment_bytes=2048, retention_ms=None)


def digest(entry: Entry) -> bytes:
    """What the toy controller keeps of one committed entry."""
    raw = f"{entry.offset}:{entry.epoch}:{entry.kind.value}:".encode() + entry.data
    return hashlib.sha256(raw).digest()[:DIGEST_BYTES]


def split_digests(data: bytes) -> list[bytes]:
    """The image stored in a snapshot's bytes."""
    return [data[i : i + DIGEST_BYTES] for i in range(0, len(data), DIGEST_BYTES)]


class InvariantViolationError(AssertionError):
    """A Raft safety property or liveness bound did not hold."""


@dataclass
class SimNode:
    """A node's durable state and its current incarnation (None while crashed)."""

    node_id: int
    # The log holds the entries from `log_start` on; the ones below `synced_end` are durable.
    log_start: int = 0
    log: list[Entry] = field(default_factory=list)
    synced_end: int = 0
    # The latest complete snapshot and every snapshot file on disk (durable).
    snapshot: LocalSnapshot | None = None
    snapshot_files: dict[SnapshotId, bytes] = field(default_factory=dict)
    # A snapshot being fetched (lost in a crash).
    partial: tuple[SnapshotId, bytearray] | None = None
    # The toy controller's metadata image: one digest per committed entry, from offset 0.
    image: list[bytes] = field(default_factory=list)
    quorum_state: QuorumState = field(default_factory=QuorumState)
    raft: RaftNode | None = None
    incarnation: int = 0
    # The HW this incarnation last reported: it must never go down while the process lives
    # (a restart re-learns it from 0; the cluster's committed prefix is checked separately).
    last_high_watermark: int = 0
    # Offsets below this have been compared with the committed record.
    verified_offset: int = 0
    # The metadata log on disk, with a storage root; None while crashed.
    store: MetadataLog | None = None


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
    # The share of observer crashes that also wipe the disk.
    disk_loss: float = 0.5


class Simulation:
    """Drives a quorum through a seeded schedule of events and checks it after every step."""

    def __init__(
        self, seed: int, voters: int, observers: int = 1, storage_root: Path | None = None
    ) -> None:
        self.seed = seed
        self.storage_root = storage_root
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
        self.clients_enabled = True
        # What the snapshot machinery did, for tests to require that it was exercised.
        self.snapshots_taken = 0
        self.snapshot_chunks = 0
        self.snapshot_loads: Counter[int] = Counter()
        for node_id in self.node_ids:
            self._start(node_id)
            self._schedule(self.rng.randrange(TICK_MS), "tick", (node_id,))
        self._schedule(20, "client", ())
        self._schedule(200, "snapshot", ())

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
        if self.storage_root is not None:
            self._open_store(node)
        node.raft = RaftNode(
            node_id=node_id,
            voters=self.voter_ids,
            config=SIM_CONFIG,
            jitter=self._jitter,
            quorum_state=node.quorum_state,
            log=node.log,
            now_ms=self.now_ms,
            snapshot=node.snapshot,
        )
        # The controller rebuilds its image from the latest snapshot; the node then hands it
        # the committed entries from the snapshot's end on.
        if node.snapshot is None:
            node.image = []
        else:
            node.image = split_digests(node.snapshot_files[node.snapshot.snapshot_id])
        node.last_high_watermark = node.raft.high_watermark
        node.verified_offset = node.raft.high_watermark
        self._drain(node)

    def crash(self, node_id: int, lose_disk: bool = False) -> None:
        """Kill a node: its unsynced log tail is lost; the quorum state was written durably.

        With `lose_disk` (observers only) everything is gone, quorum state included. With a
        storage root, half the crashes are a SIGKILL instead, which keeps the unsynced tail.
        """
        node = self.nodes[node_id]
        node.raft = None
        node.incarnation += 1
        node.partial = None
        if node.store is not None:
            node.store.log.close()
            node.store = None
        if lose_disk:
            if node_id in self.voter_ids:
                raise ValueError("a voter that loses its disk breaks Raft's safety")
            self.nodes[node_id] = SimNode(node_id, incarnation=node.incarnation)
            if self.storage_root is not None:
                shutil.rmtree(self._store_directory(node_id), ignore_errors=True)
            return
        if self.storage_root is not None and self.rng.random() < 0.5:
            node.synced_end = node.log_start + len(node.log)
        del node.log[node.synced_end - node.log_start :]

    def _store_directory(self, node_id: int) -> Path:
        assert self.storage_root is not None
        return self.storage_root / f"node{node_id}" / "__cluster_metadata-0"

    def _open_store(self, node: SimNode) -> None:
        """Open the node's metadata log as the driver does at start-up, the durable state the
        model kept being what a crash left on disk, and start the model from its entries."""
        store = MetadataLog(
            Log.open(self._store_directory(node.node_id), SIM_LOG_CONFIG, log_start_offset=0)
        )
        store.snapshots.open_latest()
        durable_end = node.log_start + len(node.log)
        if store.log.log_end_offset > durable_end:
            store.log.truncate_to(durable_end)  # the power cut lost what was never synced
        entries = store.entries()
        if [entry for entry in entries if entry.offset >= node.log_start] != node.log:
            raise self.fail(f"node {node.node_id} storage log differs from the durable model")
        node.log = entries
        node.log_start = entries[0].offset if entries else store.log.log_start_offset
        node.synced_end = max(node.synced_end, node.log_start)
        node.store = store

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
            self._apply_log_op(node, op)
            if node.store is not None:
                node.store.apply(op)
        if node.store is not None:
            try:
                node.store.check_holds(raft.log_start_offset, raft.log_end_offset)
            except MetadataLogDivergedError as error:
                raise self.fail(f"node {node.node_id}: {error}") from error
        if ready.fsync_up_to is not None:
            self._schedule(
                1 + self.rng.randrange(15),
                "fsync",
                (node.node_id, node.incarnation, ready.fsync_up_to),
            )
        for outgoing in ready.messages:
            self._send(node.node_id, outgoing.to, self._read_chunk(node, outgoing.message))
        # Older snapshot files may go once the messages (which may read one) are sent.
        latest = node.snapshot
        node.snapshot_files = {
            snapshot_id: data
            for snapshot_id, data in node.snapshot_files.items()
            if latest is not None and snapshot_id == latest.snapshot_id
        }
        if ready.high_watermark is not None:
            if ready.high_watermark < node.last_high_watermark:
                raise self.fail(f"node {node.node_id} high watermark went backwards")
            node.last_high_watermark = ready.high_watermark
        for entry in ready.committed:
            self._record_commit(node, entry, raft.epoch)
            if entry.offset != len(node.image):
                raise self.fail(f"node {node.node_id} applies {entry} at {len(node.image)}")
            node.image.append(digest(entry))

    def _apply_log_op(self, node: SimNode, op: object) -> None:
        if isinstance(op, Truncate):
            if op.offset < max(node.last_high_watermark, node.log_start):
                raise self.fail(
                    f"node {node.node_id} truncates to {op.offset} below its high "
                    f"watermark {node.last_high_watermark} or log start {node.log_start}"
                )
            del node.log[op.offset - node.log_start :]
            node.synced_end = min(node.synced_end, op.offset)
            node.verified_offset = min(node.verified_offset, op.offset)
        elif isinstance(op, Append):
            for entry in op.entries:
                if entry.offset != node.log_start + len(node.log):
                    raise self.fail(f"node {node.node_id} appends {entry} at a gap")
                node.log.append(entry)
        elif isinstance(op, DeleteBefore):
            # Only a durable snapshot may replace the prefix.
            if node.snapshot is None or op.offset > node.snapshot.snapshot_id.end_offset:
                raise self.fail(f"node {node.node_id} deletes below {op.offset} unsnapshotted")
            del node.log[: op.offset - node.log_start]
            node.log_start = op.offset
            node.synced_end = max(node.synced_end, op.offset)
        elif isinstance(op, SnapshotChunkToWrite):
            self._write_chunk(node, op)
        elif isinstance(op, LoadSnapshot):
            self._load_snapshot(node, op)

    def _write_chunk(self, node: SimNode, op: SnapshotChunkToWrite) -> None:
        if op.position == 0:
            node.partial = (op.snapshot_id, bytearray())
        if node.partial is None or node.partial[0] != op.snapshot_id:
            raise self.fail(f"node {node.node_id} writes a chunk of {op.snapshot_id} unstarted")
        if len(node.partial[1]) != op.position:
            raise self.fail(f"node {node.node_id} writes a chunk at a gap: {op}")
        node.partial[1].extend(op.data)
        self.snapshot_chunks += 1

    def _load_snapshot(self, node: SimNode, op: LoadSnapshot) -> None:
        partial = node.partial
        if partial is None or partial[0] != op.snapshot_id or len(partial[1]) != op.size:
            raise self.fail(f"node {node.node_id} loads an incomplete snapshot {op}")
        data = bytes(partial[1])
        node.partial = None
        self._check_snapshot(node, op.snapshot_id, data)
        node.snapshot = LocalSnapshot(op.snapshot_id, op.size)
        node.snapshot_files[op.snapshot_id] = data
        end = op.snapshot_id.end_offset
        node.log = []
        node.log_start = node.synced_end = node.verified_offset = end
        node.image = split_digests(data)
        self.snapshot_loads[node.node_id] += 1

    def _check_snapshot(self, node: SimNode, snapshot_id: SnapshotId, data: bytes) -> None:
        """A snapshot must hold exactly the committed prefix below its end offset."""
        end = snapshot_id.end_offset
        expected = b"".join(digest(self.committed[offset]) for offset in range(end))
        if data != expected or self.committed[end - 1].epoch != snapshot_id.epoch:
            raise self.fail(f"node {node.node_id} snapshot {snapshot_id} is not the committed one")

    def _read_chunk(self, node: SimNode, message: Message) -> Message:
        """Contract step 3: the driver fills a FetchSnapshot answer from the snapshot file."""
        if not isinstance(message, FetchSnapshotResponse) or message.unread_bytes == 0:
            return message
        data = node.snapshot_files[message.snapshot_id]
        chunk = data[message.position : message.position + message.unread_bytes]
        return replace(message, data=chunk, unread_bytes=0)

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
            if self.clients_enabled:
                self._client_append()
            self._schedule(20 + self.rng.randrange(40), "client", ())
        elif kind == "snapshot":
            self._take_snapshot()
            self._schedule(100 + self.rng.randrange(400), "snapshot", ())
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
        assert isinstance(message, Message)
        node = self.nodes[destination]
        if node.raft is not None:
            node.raft.receive(message, source, self.now_ms)
            self._drain(node)

    def _fsync(self, *payload: object) -> None:
        node_id, incarnation, up_to = payload
        assert isinstance(node_id, int) and isinstance(up_to, int)
        node = self.nodes[node_id]
        if node.raft is None or node.incarnation != incarnation:
            return
        log_end = node.log_start + len(node.log)
        node.synced_end = max(node.synced_end, min(up_to, log_end))
        node.raft.fsync_completed(node.synced_end, self.now_ms)
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

    def _take_snapshot(self) -> None:
        """The controller of a random node snapshots its image at a random committed offset."""
        node = self.nodes[self.rng.choice(self.node_ids)]
        raft = node.raft
        if raft is None or raft.high_watermark <= raft.log_start_offset:
            return
        end = self.rng.randint(raft.log_start_offset + 1, raft.high_watermark)
        epoch = node.log[end - 1 - node.log_start].epoch
        data = b"".join(node.image[:end])
        snapshot_id = SnapshotId(end, epoch)
        self._check_snapshot(node, snapshot_id, data)
        # Written durably first, then announced (driver contract).
        node.snapshot_files[snapshot_id] = data
        if node.store is not None:
            node.store.snapshots.write(snapshot_id, data)
        node.snapshot = LocalSnapshot(snapshot_id, len(data))
        if not raft.snapshot_created(end, epoch, len(data)):
            raise self.fail(f"node {node.node_id} refused snapshot {snapshot_id}")
        self.snapshots_taken += 1
        self._drain(node)

    def _inject_faults(self) -> None:
        rng = self.rng
        if rng.random() < self.faults.crash:
            victim = rng.choice(self.node_ids)
            if self.nodes[victim].raft is not None:
                lose_disk = victim not in self.voter_ids and rng.random() < self.faults.disk_loss
                self.crash(victim, lose_disk=lose_disk)
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
            if hw > node.log_start + len(node.log):
                raise self.fail(f"node {node.node_id} high watermark {hw} above its log end")
            if (raft.log_start_offset, raft.log_end_offset) != (
                node.log_start,
                node.log_start + len(node.log),
            ):
                raise self.fail(f"node {node.node_id} mirror differs from its log")
            # Logs agree below each node's HW: every entry there is the committed one.
            for offset in range(max(node.verified_offset, node.log_start), hw):
                if node.log[offset - node.log_start] != self.committed.get(offset):
                    raise self.fail(f"node {node.node_id} log differs from committed at {offset}")
            node.verified_offset = max(node.verified_offset, hw)
            # The controller's image (snapshot + applied entries, each checked against the
            # committed record when applied) covers exactly the committed prefix.
            if len(node.image) != hw:
                raise self.fail(f"node {node.node_id} image has {len(node.image)} entries, HW {hw}")
        if highest >= 0:
            durable = sum(1 for voter in self.voter_ids if self._holds_durably(voter, highest))
            if durable < majority:
                raise self.fail(f"committed offset {highest} is durable on only {durable} voters")

    def _holds_durably(self, node_id: int, offset: int) -> bool:
        """Whether the committed entry at `offset` survives a crash of the node."""
        node = self.nodes[node_id]
        if offset < node.log_start:
            return True  # inside the snapshot, which was checked when taken or loaded
        return (
            node.synced_end > offset and node.log[offset - node.log_start] == self.committed[offset]
        )

    def _check_leader_completeness(self, node: SimNode, raft: RaftNode) -> None:
        # Every entry committed by a leader of an earlier epoch is in this leader's log (or its
        # snapshot, which was checked against the committed record).
        for offset in range(len(self.committed) - 1, -1, -1):
            if self.commit_epoch[offset] >= raft.epoch:
                continue
            if offset < node.log_start:
                return
            index = offset - node.log_start
            if index >= len(node.log) or node.log[index] != self.committed[offset]:
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

    def run_until_converged(self, within_ms: int) -> int:
        """After `heal()`: stop the clients and wait until every node has the leader's log and HW.

        Returns the simulated milliseconds it took.
        """
        self.clients_enabled = False
        start = self.now_ms
        while self.now_ms - start < within_ms:
            self.step()
            leader = self.leader()
            if leader is None or leader.high_watermark != leader.log_end_offset:
                continue
            rafts = [node.raft for node in self.nodes.values()]
            if all(
                raft is not None
                and raft.high_watermark == leader.high_watermark
                and raft.log_end_offset == leader.log_end_offset
                for raft in rafts
            ):
                return self.now_ms - start
        raise self.fail(f"nodes did not converge within {within_ms}ms after healing")
