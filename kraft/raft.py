"""The pure, deterministic Raft state machine of the metadata quorum (KIP-595, KIP-996).

`RaftNode` does no I/O and reads no clock or randomness of its own: the driver feeds it inputs
(`tick`, `receive`, `append`, `fsync_completed`, `resign`, `snapshot_created`) with the current
time, and drains the effects with `take_ready()`. Randomized election timeouts come from the
`jitter` function given to the constructor (`jitter(bound)` returns an int in `[0, bound)`); a
seeded generator makes a whole cluster reproducible.

The driver contract for a `Ready`, in this order:

1. `quorum_state`, if set, is written durably (atomic replace + fsync) BEFORE any of
   `messages` is sent: a vote or an epoch bump that was sent must survive a crash, or the node
   could vote twice in one epoch.
2. `log_ops` are applied to the local log and snapshot store in order. Entries need not
   be durable yet; when `fsync_up_to` is set the driver flushes the log and later calls
   `fsync_completed(n)` with the offset below which the log, as it is at that moment, is durable.
   The node counts its own entries (leader) or acknowledges them to the leader (follower) only
   once they are fsynced, so a lost unflushed tail can never have been counted as replicated.
3. `messages` are sent (any order, may be lost, duplicated or reordered). A
   `FetchSnapshotResponse` with `unread_bytes > 0` is completed first (see below).
4. `committed` entries (below the high watermark) may be applied to the metadata image. One
   `Ready` hands out at most `RaftConfig.max_committed_per_ready` of them (etcd raft's
   MaxCommittedSizePerReady); `has_committed_to_hand_out` says whether more are committed,
   for the next `take_ready()`.

Snapshots (KIP-630). The metadata log starts at `log_start_offset`: 0, or the end offset of the
node's latest snapshot. Policy: once a snapshot exists, every entry below its end offset is
deleted at once (no retained tail), so the log start always equals the latest snapshot's end
offset; a replica that lags behind it catches up through FetchSnapshot. That keeps one epoch
boundary below the log (the snapshot id) and one snapshot file to serve, at the price of more
snapshot transfers to lagging replicas. The snapshot-related parts of the contract:

- `snapshot_created(end_offset, epoch, size)`: the controller has durably written (fsync) a
  snapshot of its state covering the committed entries below `end_offset` (<= the high
  watermark), `size` bytes long. The node answers with `DeleteBefore(end_offset)`.
- `DeleteBefore(offset)`: delete the log entries below `offset`; the log then starts at
  `offset`, empty if it ended below it. Snapshot files older than the latest one may be deleted
  after this `Ready`'s messages are sent (a response in the same `Ready` may still read one).
- `FetchSnapshotResponse` in `messages` with `unread_bytes = n > 0` (leader side): the state
  machine has validated the request (epoch, leadership, snapshot id, position); the driver reads
  `n` bytes at `position` from the file of `snapshot_id`, puts them in `data` and sends it. If the
  file is gone, it sends the response with error `SNAPSHOT_NOT_FOUND` and no data instead.
- `SnapshotChunkToWrite(snapshot_id, position, data)` (follower and observer side): write `data`
  at `position` of the partial (not yet visible) file of `snapshot_id`; position 0 starts a new
  partial file and discards any other partial one. Partial files need no fsync and may be
  dropped in a crash: the node restarts a transfer from position 0.
- `LoadSnapshot(snapshot_id, size)`: the partial file is complete. The driver fsyncs it and makes
  it the latest snapshot (rename), truncates the log fully so it starts, empty, at
  `snapshot_id.end_offset` (as `Truncate` + `DeleteBefore`), and has the controller replace its
  metadata image with the snapshot's; `committed` of the same and later `Ready`s follow on top.
- At startup the driver passes the latest complete snapshot (`LocalSnapshot`) and the log as it
  is on disk. A log left inconsistent by a crash in the middle of the steps above (it ends below
  the snapshot, or its last epoch is older than the snapshot's) is discarded with
  `Truncate` + `DeleteBefore` in the first `Ready`, as Kafka does.

Without snapshots the node mirrors the whole metadata log in memory (the driver reads it back
at startup anyway, to rebuild the metadata image); with them, the log above the snapshot. The
epoch cache is derived from the mirror and the snapshot id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from kraft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DivergingEpoch,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Entry,
    EntryKind,
    ErrorCode,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    SnapshotId,
    VoteRequest,
    VoteResponse,
)
from kraft.quorum_state import QuorumState

# Kafka's check-quorum window is 1.5 fetch timeouts: a leader resigns only after that long
# without fetches from a majority, so one slow fetch round does not depose it.
CHECK_QUORUM_FACTOR = 1.5


class Role(Enum):
    """The roles of KIP-595 plus KIP-996's prospective (pre-vote) role."""

    UNATTACHED = "unattached"
    PROSPECTIVE = "prospective"
    CANDIDATE = "candidate"
    LEADER = "leader"
    FOLLOWER = "follower"


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Timeouts (Kafka's `controller.quorum.*` names and defaults) and fetch sizing."""

    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    # How long the leader parks a fetch that has nothing new (Fetch's max_wait_ms).
    fetch_max_wait_ms: int = 500
    # Entries in one Fetch answer: a whole controller operation (at most 10,000 records), so a
    # large topic commits in one round trip rather than one per hundred entries (Kafka bounds
    # its quorum fetches by bytes, 8 MiB; 10,000 metadata records are about 1 MiB).
    fetch_max_entries: int = 10_000
    # FetchSnapshot's max_bytes: the chunk size of a snapshot transfer.
    fetch_snapshot_max_bytes: int = 1 << 20
    # Committed entries handed out per Ready. The driver applies a Ready's commits to the
    # metadata image, the controller and the broker in one go on the node's event loop: a
    # whole 10,000-record commit (a controlled shutdown of a node with 10,000 replicas) held
    # it for a second or more, Raft fetches and heartbeats unanswered meanwhile.
    max_committed_per_ready: int = 1_000


@dataclass(frozen=True, slots=True)
class Truncate:
    """Remove every local log entry at or above `offset`."""

    offset: int


@dataclass(frozen=True, slots=True)
class Append:
    """Append these entries (contiguous, starting at the current log end) to the local log."""

    entries: tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class DeleteBefore:
    """Delete every log entry below `offset`; the log starts there (empty if it ended below)."""

    offset: int


@dataclass(frozen=True, slots=True)
class SnapshotChunkToWrite:
    """Write `data` at byte `position` of the partial file of snapshot `snapshot_id`."""

    snapshot_id: SnapshotId
    position: int
    data: bytes


@dataclass(frozen=True, slots=True)
class LoadSnapshot:
    """The partial snapshot is complete: make it the latest and restart the log at its end.

    See the module docstring for what the driver does.
    """

    snapshot_id: SnapshotId
    size: int


LogOp = Truncate | Append | DeleteBefore | SnapshotChunkToWrite | LoadSnapshot


@dataclass(frozen=True, slots=True)
class LocalSnapshot:
    """A complete snapshot this node holds: its id and its size in bytes."""

    snapshot_id: SnapshotId
    size: int


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A message to send to node `to`."""

    to: int
    message: Message


@dataclass(frozen=True, slots=True)
class RoleChange:
    """The node entered `role` in `epoch`; `leader_id` is the leader it knows, if any."""

    role: Role
    epoch: int
    leader_id: int | None


@dataclass(frozen=True, slots=True)
class NotLeader:
    """`append` refused: this node is not the leader; `leader_id` is the one it knows, if any."""

    epoch: int
    leader_id: int | None


@dataclass(frozen=True, slots=True)
class Appended:
    """`append` accepted: the entries got offsets `[base_offset, end_offset)` in `epoch`."""

    epoch: int
    base_offset: int
    end_offset: int


@dataclass(slots=True)
class Ready:
    """The effects collected since the last `take_ready()`; see the module docstring for order."""

    quorum_state: QuorumState | None = None
    log_ops: list[LogOp] = field(default_factory=list)
    fsync_up_to: int | None = None
    messages: list[Outgoing] = field(default_factory=list)
    committed: list[Entry] = field(default_factory=list)
    role_changes: list[RoleChange] = field(default_factory=list)
    high_watermark: int | None = None


@dataclass(slots=True)
class _ReplicaState:
    """What the leader knows of one fetching replica in its epoch."""

    fetch_offset: int = 0
    last_fetch_ms: int | None = None
    # When the replica last fetched from (at least) the leader's log end offset.
    last_caught_up_ms: int = -1
    # The high watermark last sent to the replica, to wake its parked fetch when it moves.
    sent_high_watermark: int = -1
    parked: FetchRequest | None = None
    parked_until_ms: int = 0
    begin_epoch_retry_ms: int = 0


@dataclass(slots=True)
class _SnapshotFetch:
    """A snapshot transfer in progress: `position` bytes of `snapshot_id` are written."""

    snapshot_id: SnapshotId
    position: int = 0


class RaftNode:
    """One member (voter or observer) of the metadata quorum."""

    def __init__(
        self,
        *,
        node_id: int,
        voters: Iterable[int],
        config: RaftConfig,
        jitter: Callable[[int], int],
        quorum_state: QuorumState,
        log: Sequence[Entry],
        now_ms: int,
        snapshot: LocalSnapshot | None = None,
    ) -> None:
        """Start from the persisted quorum state, latest snapshot and durable local log.

        `log` holds the entries on disk, contiguous from the log's start offset (0 without a
        snapshot; at or below the snapshot's end offset with one).
        """
        self.node_id = node_id
        self.voters = frozenset(voters)
        self.config = config
        self._jitter = jitter
        self._ready = Ready()
        self._log: list[Entry] = list(log)
        first = self._log[0].offset if self._log else 0
        for index, entry in enumerate(self._log):
            if entry.offset != first + index:
                raise ValueError(f"log entry at index {index} has offset {entry.offset}")
        self._snapshot = snapshot
        self.log_start_offset = first
        if snapshot is None:
            if first != 0:
                raise ValueError(f"the log starts at {first} but there is no snapshot")
        else:
            self._start_log_at_snapshot(snapshot.snapshot_id)
        self._snapshot_fetch: _SnapshotFetch | None = None
        self.flushed_offset = self.log_end_offset
        # The snapshot holds committed entries only, and the controller starts from it.
        self.high_watermark = self.log_start_offset
        self._committed_through = self.log_start_offset
        self.epoch = quorum_state.leader_epoch
        self.voted_for = quorum_state.voted_for
        self.leader_id: int | None = None
        self.role = Role.UNATTACHED
        self._persisted = quorum_state
        self._election_deadline_ms = 0
        self._fetch_deadline_ms = 0
        self._last_leader_contact_ms: int | None = None
        self._fetch_in_flight_since_ms: int | None = None
        self._votes_granted: set[int] = set()
        self._votes_rejected: set[int] = set()
        self._replicas: dict[int, _ReplicaState] = {}
        self._leader_start_ms = 0
        self._epoch_start_offset = 0
        self._next_observer_target = 0
        if quorum_state.leader_id is not None and quorum_state.leader_id != node_id:
            self._become_follower(quorum_state.leader_epoch, quorum_state.leader_id, now_ms)
        else:
            # A node that was leader before the restart cannot resume: its in-memory replica
            # state is gone. It waits out an election timeout like any unattached voter.
            self._become_unattached(self.epoch, self.voted_for, now_ms)

    def _start_log_at_snapshot(self, snapshot_id: SnapshotId) -> None:
        """Make the log start at the snapshot's end offset (startup only)."""
        start = snapshot_id.end_offset
        if self.log_start_offset > start:
            raise ValueError(f"the log starts at {self.log_start_offset}, after snapshot {start}")
        if self.log_end_offset < start or self.last_epoch() < snapshot_id.epoch:
            # A crash interrupted a LoadSnapshot (or lost the log): what is left cannot continue
            # the snapshot. Kafka's rule: discard the log and start it empty at the snapshot.
            if self._log:
                self._ready.log_ops.append(Truncate(self.log_start_offset))
            self._log = []
        else:
            # A crash came between snapshot_created and DeleteBefore: redo the deletion.
            del self._log[: start - self.log_start_offset]
        self.log_start_offset = start
        self._ready.log_ops.append(DeleteBefore(start))

    # ----------------------------------------------------------------- read-only views

    @property
    def is_voter(self) -> bool:
        """Whether this node votes (observers only replicate)."""
        return self.node_id in self.voters

    def replica_progress(self) -> dict[int, tuple[int, int, int]]:
        """On the leader: each fetching replica's `(fetched offset, last caught-up ms, last
        fetch ms)` (-1 when unknown), and the leader's own `(log end offset, leader start ms,
        -1)`: it is caught up with itself and never fetches."""
        progress = {
            replica: (
                state.fetch_offset,
                state.last_caught_up_ms,
                -1 if state.last_fetch_ms is None else state.last_fetch_ms,
            )
            for replica, state in self._replicas.items()
        }
        if self.role is Role.LEADER:
            progress[self.node_id] = (self.log_end_offset, self._leader_start_ms, -1)
        return progress

    @property
    def log_end_offset(self) -> int:
        """The offset the next entry will get (written, not necessarily fsynced)."""
        return self.log_start_offset + len(self._log)

    @property
    def log(self) -> Sequence[Entry]:
        """The in-memory mirror of the local log, from `log_start_offset` on."""
        return self._log

    @property
    def snapshot(self) -> LocalSnapshot | None:
        """The latest complete snapshot, whose end offset is the log start; None if none."""
        return self._snapshot

    def last_epoch(self) -> int:
        """The epoch of the last entry (the snapshot's when the log is empty), 0 if none."""
        if self._log:
            return self._log[-1].epoch
        return self._snapshot.snapshot_id.epoch if self._snapshot is not None else 0

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(largest local epoch <= `epoch`, the offset where that epoch's entries end).

        The epoch-cache lookup behind OffsetForLeaderEpoch and Fetch's diverging-epoch answer.
        Below the log start the snapshot id is the only boundary known: its epoch ends at its end
        offset. (0, 0) when no epoch <= `epoch` is known (the snapshot's is newer, or none).
        """
        low, high = 0, len(self._log)
        # First index whose entry epoch is > epoch (entry epochs never decrease along the log).
        while low < high:
            middle = (low + high) // 2
            if self._log[middle].epoch <= epoch:
                low = middle + 1
            else:
                high = middle
        if low > 0:
            return self._log[low - 1].epoch, self.log_start_offset + low
        if self._snapshot is not None and self._snapshot.snapshot_id.epoch <= epoch:
            return self._snapshot.snapshot_id.epoch, self._snapshot.snapshot_id.end_offset
        return 0, 0

    # ----------------------------------------------------------------- inputs

    def take_ready(self) -> Ready:
        """Drain the effects of every input since the last call, with the next committed
        entries not handed out yet (at most `max_committed_per_ready`)."""
        ready, self._ready = self._ready, Ready()
        end = min(
            self.high_watermark, self._committed_through + self.config.max_committed_per_ready
        )
        if end > self._committed_through:
            start = self.log_start_offset
            ready.committed = self._log[self._committed_through - start : end - start]
            self._committed_through = end
        return ready

    @property
    def has_committed_to_hand_out(self) -> bool:
        """Whether entries below the high watermark wait for a later `take_ready()`."""
        return self._committed_through < self.high_watermark

    def append(self, data_list: Sequence[bytes]) -> Appended | NotLeader:
        """Append client data as the leader; the entries commit once the HW passes them."""
        if self.role is not Role.LEADER:
            return NotLeader(self.epoch, self.leader_id)
        base = self.log_end_offset
        self._append_local([Entry(base + i, self.epoch, data) for i, data in enumerate(data_list)])
        self._wake_parked_fetches()
        return Appended(self.epoch, base, self.log_end_offset)

    def fsync_completed(self, up_to_offset: int, now_ms: int) -> None:
        """The local log is durable below `up_to_offset` (as it was when the driver synced)."""
        self.flushed_offset = max(self.flushed_offset, min(up_to_offset, self.log_end_offset))
        if self.role is Role.LEADER:
            self._maybe_advance_high_watermark()
            self._wake_parked_fetches()
        elif self.role is Role.FOLLOWER or not self.is_voter:
            self._maybe_send_fetch(now_ms)

    def resign(self, now_ms: int) -> None:
        """Graceful resignation: hand leadership to the most caught-up voters."""
        if self.role is Role.LEADER:
            self._resign(now_ms)

    def snapshot_created(self, end_offset: int, epoch: int, size: int) -> bool:
        """The controller durably wrote a `size`-byte snapshot of the entries below `end_offset`.

        `epoch` is the epoch of the entry at `end_offset - 1`. The log prefix below `end_offset`
        is deleted (`DeleteBefore`). Returns False, changing nothing, when the snapshot is not
        newer than the log start (say the node loaded a newer one from the leader meanwhile):
        the driver may then delete the file.
        """
        if end_offset > self.high_watermark:
            raise ValueError(
                f"snapshot end {end_offset} above high watermark {self.high_watermark}"
            )
        if end_offset <= self.log_start_offset:
            return False
        last = self._log[end_offset - 1 - self.log_start_offset]
        if last.epoch != epoch:
            raise ValueError(f"snapshot epoch {epoch} but entry {last.offset} has {last.epoch}")
        self._snapshot = LocalSnapshot(SnapshotId(end_offset, epoch), size)
        del self._log[: end_offset - self.log_start_offset]
        self.log_start_offset = end_offset
        # Parked fetches need no answer: they wait at the log end, above the high watermark.
        self._ready.log_ops.append(DeleteBefore(end_offset))
        return True

    def tick(self, now_ms: int) -> None:
        """Advance timers: elections, fetch timeouts, check-quorum, retries, parked fetches."""
        if self.role is Role.LEADER:
            self._tick_leader(now_ms)
        elif self.role is Role.FOLLOWER and now_ms >= self._fetch_deadline_ms:
            self._on_leader_lost(now_ms)
        elif self.role is Role.FOLLOWER or not self.is_voter:
            self._retry_fetch(now_ms)
        elif now_ms >= self._election_deadline_ms:
            # Unattached, prospective or candidate: (re)start with a pre-vote round, which
            # does not bump the epoch and so cannot disrupt a healthy leader (KIP-996).
            self._become_prospective(now_ms)

    def receive(self, message: Message, from_node: int, now_ms: int) -> None:
        """Handle one message from `from_node`."""
        match message:
            case VoteRequest():
                self._on_vote_request(message, from_node, now_ms)
            case VoteResponse():
                self._on_vote_response(message, from_node, now_ms)
            case BeginQuorumEpochRequest():
                self._on_begin_quorum_epoch(message, from_node, now_ms)
            case BeginQuorumEpochResponse():
                self._on_begin_quorum_epoch_response(message, from_node, now_ms)
            case EndQuorumEpochRequest():
                self._on_end_quorum_epoch(message, from_node, now_ms)
            case EndQuorumEpochResponse():
                self._observe_epoch(message.leader_epoch, message.leader_id, now_ms, from_node)
            case FetchRequest():
                self._on_fetch_request(message, from_node, now_ms)
            case FetchResponse():
                self._on_fetch_response(message, from_node, now_ms)
            case FetchSnapshotRequest():
                self._on_fetch_snapshot_request(message, from_node, now_ms)
            case FetchSnapshotResponse():
                self._on_fetch_snapshot_response(message, from_node, now_ms)

    # ----------------------------------------------------------------- transitions

    def _persist(self) -> None:
        state = QuorumState(self.epoch, self.voted_for, self.leader_id)
        if state != self._persisted:
            self._persisted = state
            self._ready.quorum_state = state

    def _enter(self, role: Role, now_ms: int) -> None:
        self.role = role
        self._replicas = {}
        self._fetch_in_flight_since_ms = None
        # A transfer is tied to the leader it started from; a new role fetches afresh.
        self._snapshot_fetch = None
        self._votes_granted = set()
        self._votes_rejected = set()
        self._arm_election_timer(now_ms)
        self._persist()
        self._ready.role_changes.append(RoleChange(role, self.epoch, self.leader_id))

    def _arm_election_timer(self, now_ms: int) -> None:
        timeout = self.config.election_timeout_ms
        self._election_deadline_ms = now_ms + timeout + self._jitter(timeout)

    def _become_unattached(self, epoch: int, voted_for: int | None, now_ms: int) -> None:
        self.epoch = epoch
        self.voted_for = voted_for
        self.leader_id = None
        self._enter(Role.UNATTACHED, now_ms)

    def _become_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        if epoch > self.epoch:
            self.voted_for = None
        self.epoch = epoch
        self.leader_id = leader_id
        self._enter(Role.FOLLOWER, now_ms)
        self._fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        self._last_leader_contact_ms = now_ms
        self._maybe_send_fetch(now_ms)

    def _become_prospective(self, now_ms: int) -> None:
        if not self.is_voter:
            return
        self.leader_id = None
        self._enter(Role.PROSPECTIVE, now_ms)
        self._votes_granted = {self.node_id}
        self._solicit_votes(pre_vote=True)
        self._maybe_win_pre_vote(now_ms)

    def _become_candidate(self, now_ms: int) -> None:
        self.epoch += 1
        self.voted_for = self.node_id
        self.leader_id = None
        self._enter(Role.CANDIDATE, now_ms)
        self._votes_granted = {self.node_id}
        self._solicit_votes(pre_vote=False)
        self._maybe_win_election(now_ms)

    def _become_leader(self, now_ms: int) -> None:
        self.leader_id = self.node_id
        self._enter(Role.LEADER, now_ms)
        self._leader_start_ms = now_ms
        self._replicas = {voter: _ReplicaState() for voter in self.voters if voter != self.node_id}
        self._epoch_start_offset = self.log_end_offset
        self._append_local(
            [Entry(self._epoch_start_offset, self.epoch, b"", EntryKind.LEADER_CHANGE)]
        )
        for voter, replica in self._replicas.items():
            replica.begin_epoch_retry_ms = now_ms + self.config.request_timeout_ms
            self._send(voter, BeginQuorumEpochRequest(self.epoch, self.node_id))
        self._maybe_advance_high_watermark()

    def _observe_epoch(
        self, epoch: int, leader_id: int | None, now_ms: int, sender: int | None = None
    ) -> bool:
        """Step down on a higher epoch, or learn the leader of the current one.

        `sender` is the node the message came from. A prospective voter follows a same-epoch
        leader only on word from that leader itself: other voters' hints may name a leader
        that is dead (the very reason it stood), and following them would livelock.
        Returns whether the message is from a stale epoch and should be ignored.
        """
        if epoch > self.epoch:
            if leader_id is not None and leader_id != self.node_id:
                self._become_follower(epoch, leader_id, now_ms)
            else:
                self._become_unattached(epoch, None, now_ms)
        elif (
            epoch == self.epoch
            and leader_id is not None
            and leader_id != self.node_id
            and self.role is not Role.FOLLOWER
            and (self.role is not Role.PROSPECTIVE or sender == leader_id)
        ):
            self._become_follower(epoch, leader_id, now_ms)
        return epoch < self.epoch

    def _on_leader_lost(self, now_ms: int) -> None:
        self._last_leader_contact_ms = None
        if self.is_voter:
            self._become_prospective(now_ms)
        else:
            self._become_unattached(self.epoch, self.voted_for, now_ms)

    def _resign(self, now_ms: int) -> None:
        successors = sorted(
            (voter for voter in self._replicas if voter in self.voters),
            key=lambda voter: (-self._replicas[voter].fetch_offset, voter),
        )
        for voter in successors:
            self._send(voter, EndQuorumEpochRequest(self.epoch, self.node_id, tuple(successors)))
        # Stay in the epoch but leaderless: this node voted for itself here, so it can neither
        # lead again nor vote for anyone else before a new epoch starts.
        self._become_unattached(self.epoch, self.voted_for, now_ms)

    # ----------------------------------------------------------------- elections

    def _solicit_votes(self, pre_vote: bool) -> None:
        request = VoteRequest(
            candidate_epoch=self.epoch + 1 if pre_vote else self.epoch,
            candidate_id=self.node_id,
            last_offset_epoch=self.last_epoch(),
            last_offset=self.log_end_offset,
            pre_vote=pre_vote,
        )
        for voter in sorted(self.voters - {self.node_id}):
            self._send(voter, request)

    def _majority(self) -> int:
        return len(self.voters) // 2 + 1

    def _log_is_up_to_date(self, last_offset_epoch: int, last_offset: int) -> bool:
        return (last_offset_epoch, last_offset) >= (self.last_epoch(), self.log_end_offset)

    def _on_vote_request(self, request: VoteRequest, sender: int, now_ms: int) -> None:
        def answer(granted: bool, error: ErrorCode = ErrorCode.NONE) -> None:
            response = VoteResponse(error, self.epoch, self.leader_id, granted, request.pre_vote)
            self._send(sender, response)

        if not self.is_voter or sender not in self.voters:
            answer(False, ErrorCode.INCONSISTENT_VOTER_SET)
            return
        if request.candidate_epoch < self.epoch:
            answer(False, ErrorCode.FENCED_LEADER_EPOCH)
            return
        up_to_date = self._log_is_up_to_date(request.last_offset_epoch, request.last_offset)
        if request.pre_vote:
            # A pre-vote never changes state. Refuse it while a leader is known to be alive
            # so a partitioned node coming back cannot disrupt a healthy quorum.
            leader_alive = self.role is Role.LEADER or (
                self.role is Role.FOLLOWER
                and self._last_leader_contact_ms is not None
                and now_ms - self._last_leader_contact_ms < self.config.fetch_timeout_ms
            )
            answer(up_to_date and not leader_alive)
            return
        if request.candidate_epoch > self.epoch:
            self._become_unattached(request.candidate_epoch, None, now_ms)
        elif self.role is Role.CANDIDATE and sender != self.node_id:
            # Another candidate in our epoch: the vote is split (each voted for itself), and
            # with a voter down neither may ever see a majority reject it. Retry after a short
            # random backoff rather than a whole election timeout; timing is liveness only.
            self._election_deadline_ms = min(
                self._election_deadline_ms,
                now_ms + self._jitter(self.config.election_backoff_max_ms),
            )
        can_vote = self.role is Role.UNATTACHED and self.voted_for in (None, sender)
        if can_vote and up_to_date:
            if self.voted_for is None:
                self.voted_for = sender
                self._persist()
                # Granting a vote restarts the election timer so the candidate gets a chance.
                self._arm_election_timer(now_ms)
            answer(True)
        else:
            answer(False)

    def _on_vote_response(self, response: VoteResponse, sender: int, now_ms: int) -> None:
        stale = self._observe_epoch(response.leader_epoch, response.leader_id, now_ms, sender)
        if sender not in self.voters:
            return
        if response.pre_vote and self.role is Role.PROSPECTIVE:
            # A voter behind in epochs answers with its older epoch; its pre-vote still counts.
            (self._votes_granted if response.vote_granted else self._votes_rejected).add(sender)
            self._maybe_win_pre_vote(now_ms)
        elif not response.pre_vote and self.role is Role.CANDIDATE:
            if stale or response.leader_epoch != self.epoch:
                return
            (self._votes_granted if response.vote_granted else self._votes_rejected).add(sender)
            self._maybe_win_election(now_ms)

    def _maybe_win_pre_vote(self, now_ms: int) -> None:
        if len(self._votes_granted) >= self._majority():
            self._become_candidate(now_ms)
        elif len(self._votes_rejected) >= self._majority():
            # Lost the pre-vote: back off before the next round instead of hammering voters.
            self._election_deadline_ms = now_ms + self._jitter(self.config.election_backoff_max_ms)

    def _maybe_win_election(self, now_ms: int) -> None:
        if len(self._votes_granted) >= self._majority():
            self._become_leader(now_ms)
        elif len(self._votes_rejected) >= self._majority():
            self._election_deadline_ms = now_ms + self._jitter(self.config.election_backoff_max_ms)

    def _on_begin_quorum_epoch(
        self, request: BeginQuorumEpochRequest, sender: int, now_ms: int
    ) -> None:
        if request.leader_epoch < self.epoch:
            self._send(
                sender,
                BeginQuorumEpochResponse(ErrorCode.FENCED_LEADER_EPOCH, self.epoch, self.leader_id),
            )
            return
        self._observe_epoch(request.leader_epoch, request.leader_id, now_ms, sender)
        self._send(sender, BeginQuorumEpochResponse(ErrorCode.NONE, self.epoch, self.leader_id))

    def _on_begin_quorum_epoch_response(
        self, response: BeginQuorumEpochResponse, sender: int, now_ms: int
    ) -> None:
        # A voter's liveness is judged by its fetches; the response only carries news of a
        # newer epoch.
        self._observe_epoch(response.leader_epoch, response.leader_id, now_ms, sender)

    def _on_end_quorum_epoch(
        self, request: EndQuorumEpochRequest, sender: int, now_ms: int
    ) -> None:
        stale = self._observe_epoch(request.leader_epoch, None, now_ms)
        if not stale and self.role is Role.FOLLOWER and self.leader_id == request.leader_id:
            # The leader is going away: stop treating it as alive (so pre-votes are granted)
            # and stand sooner the more caught-up the leader says this node is.
            self._last_leader_contact_ms = None
            successors = request.preferred_successors
            if self.node_id in successors and successors.index(self.node_id) == 0:
                backoff = 0
            else:
                backoff = self._jitter(self.config.election_backoff_max_ms)
            self._fetch_deadline_ms = min(self._fetch_deadline_ms, now_ms + backoff)
        self._send(sender, EndQuorumEpochResponse(ErrorCode.NONE, self.epoch, self.leader_id))

    # ----------------------------------------------------------------- replication: leader

    def _append_local(self, entries: list[Entry]) -> None:
        if not entries:
            return
        self._log.extend(entries)
        self._ready.log_ops.append(Append(tuple(entries)))
        self._ready.fsync_up_to = self.log_end_offset

    def _tick_leader(self, now_ms: int) -> None:
        window = int(self.config.fetch_timeout_ms * CHECK_QUORUM_FACTOR)
        if now_ms - self._leader_start_ms >= window:
            recent = 1 + sum(
                1
                for voter, replica in self._replicas.items()
                if voter in self.voters
                and replica.last_fetch_ms is not None
                and now_ms - replica.last_fetch_ms < window
            )
            if recent < self._majority():
                # Check-quorum: a leader cut off from a majority steps aside rather than keep
                # clients (and an old, partitioned view of the metadata) waiting forever.
                self._resign(now_ms)
                return
        for voter, replica in self._replicas.items():
            silent = replica.last_fetch_ms is None or (
                now_ms - replica.last_fetch_ms >= self.config.request_timeout_ms
            )
            if voter in self.voters and silent and now_ms >= replica.begin_epoch_retry_ms:
                # Re-announce the epoch to voters that do not fetch: one that went prospective
                # after a blip only rejoins on word from the leader itself.
                replica.begin_epoch_retry_ms = now_ms + self.config.request_timeout_ms
                self._send(voter, BeginQuorumEpochRequest(self.epoch, self.node_id))
        self._wake_parked_fetches(now_ms)

    def _on_fetch_request(self, request: FetchRequest, sender: int, now_ms: int) -> None:
        if request.replica_epoch > self.epoch:
            self._observe_epoch(request.replica_epoch, None, now_ms)
        if self.role is not Role.LEADER:
            self._send(sender, self._fetch_error(request, ErrorCode.NOT_LEADER_OR_FOLLOWER))
            return
        if request.replica_epoch < self.epoch:
            self._send(sender, self._fetch_error(request, ErrorCode.FENCED_LEADER_EPOCH))
            return
        replica = self._replicas.setdefault(sender, _ReplicaState())
        replica.last_fetch_ms = now_ms
        snapshot_id = self._snapshot_to_send(request)
        if snapshot_id is not None:
            replica.parked = None
            self._send(sender, self._fetch_answer(request, snapshot_id=snapshot_id))
            return
        diverging = self._diverging_epoch(request)
        if diverging is not None:
            replica.parked = None
            self._send(sender, self._fetch_answer(request, diverging=diverging))
            return
        # The replica only fetches from its fsynced end, so this offset is durable there.
        replica.fetch_offset = max(replica.fetch_offset, request.fetch_offset)
        if replica.fetch_offset >= self.log_end_offset:
            replica.last_caught_up_ms = now_ms
        if sender in self.voters:
            self._maybe_advance_high_watermark()
        replica.parked = request
        replica.parked_until_ms = now_ms + self.config.fetch_max_wait_ms
        self._wake_parked_fetches()

    def _snapshot_to_send(self, request: FetchRequest) -> SnapshotId | None:
        """The snapshot a fetcher needs because its log cannot continue from this one's.

        Kafka's rule (`validateOffsetAndEpoch`): the fetch offset is below the log start; or it
        is at the log start but the fetcher's last epoch is not the snapshot's (its entry below
        the start is not the committed one); or its last epoch is older than the snapshot's, so
        its log diverges somewhere below the log start, where the epochs are no longer known.
        """
        if self._snapshot is None:
            return None
        snapshot_id = self._snapshot.snapshot_id
        if (
            request.fetch_offset < self.log_start_offset
            or request.last_fetched_epoch < snapshot_id.epoch
            or (
                request.fetch_offset == self.log_start_offset
                and request.last_fetched_epoch != snapshot_id.epoch
            )
        ):
            return snapshot_id
        return None

    def _diverging_epoch(self, request: FetchRequest) -> DivergingEpoch | None:
        if request.fetch_offset == 0 and request.last_fetched_epoch == 0:
            return None
        epoch, end_offset = self.end_offset_for_epoch(request.last_fetched_epoch)
        if epoch != request.last_fetched_epoch or end_offset < request.fetch_offset:
            return DivergingEpoch(epoch, end_offset)
        return None

    def _wake_parked_fetches(self, now_ms: int | None = None) -> None:
        """Answer parked fetches that have data, a newer HW to learn, or waited long enough."""
        if self.role is not Role.LEADER:
            return
        for replica_id, replica in self._replicas.items():
            request = replica.parked
            if request is None:
                continue
            has_news = (
                request.fetch_offset < self.log_end_offset
                or replica.sent_high_watermark != self.high_watermark
            )
            expired = now_ms is not None and now_ms >= replica.parked_until_ms
            if not (has_news or expired):
                continue
            replica.parked = None
            end = min(self.log_end_offset, request.fetch_offset + self.config.fetch_max_entries)
            replica.sent_high_watermark = self.high_watermark
            start = self.log_start_offset
            records = tuple(self._log[request.fetch_offset - start : end - start])
            self._send(replica_id, self._fetch_answer(request, records=records))

    def _fetch_answer(
        self,
        request: FetchRequest,
        records: tuple[Entry, ...] = (),
        diverging: DivergingEpoch | None = None,
        snapshot_id: SnapshotId | None = None,
    ) -> FetchResponse:
        return FetchResponse(
            error=ErrorCode.NONE,
            leader_epoch=self.epoch,
            leader_id=self.node_id,
            high_watermark=self.high_watermark,
            fetch_offset=request.fetch_offset,
            last_fetched_epoch=request.last_fetched_epoch,
            records=records,
            diverging_epoch=diverging,
            snapshot_id=snapshot_id,
        )

    def _fetch_error(self, request: FetchRequest, error: ErrorCode) -> FetchResponse:
        return FetchResponse(
            error=error,
            leader_epoch=self.epoch,
            leader_id=self.leader_id,
            high_watermark=self.high_watermark,
            fetch_offset=request.fetch_offset,
            last_fetched_epoch=request.last_fetched_epoch,
        )

    def _on_fetch_snapshot_request(
        self, request: FetchSnapshotRequest, sender: int, now_ms: int
    ) -> None:
        if request.leader_epoch > self.epoch:
            self._observe_epoch(request.leader_epoch, None, now_ms)

        def answer(error: ErrorCode, size: int = 0, unread_bytes: int = 0) -> None:
            response = FetchSnapshotResponse(
                error=error,
                leader_id=self.leader_id,
                leader_epoch=self.epoch,
                snapshot_id=request.snapshot_id,
                size=size,
                position=request.position,
                unread_bytes=unread_bytes,
            )
            self._send(sender, response)

        if self.role is not Role.LEADER:
            answer(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            return
        if request.leader_epoch < self.epoch:
            answer(ErrorCode.FENCED_LEADER_EPOCH)
            return
        # A voter busy with a snapshot transfer is alive for check-quorum.
        self._replicas.setdefault(sender, _ReplicaState()).last_fetch_ms = now_ms
        snapshot = self._snapshot
        if snapshot is None or snapshot.snapshot_id != request.snapshot_id:
            answer(ErrorCode.SNAPSHOT_NOT_FOUND)
        elif not 0 <= request.position <= snapshot.size:
            answer(ErrorCode.POSITION_OUT_OF_RANGE, snapshot.size)
        else:
            # The driver reads the bytes (contract in the module docstring).
            chunk = min(request.max_bytes, snapshot.size - request.position)
            answer(ErrorCode.NONE, snapshot.size, chunk)

    def _maybe_advance_high_watermark(self) -> None:
        offsets = sorted(
            [self.flushed_offset]
            + [
                replica.fetch_offset
                for voter, replica in self._replicas.items()
                if voter in self.voters
            ],
            reverse=True,
        )
        majority_offset = offsets[self._majority() - 1]
        # Only an entry of the current epoch may be committed by counting replicas (Raft
        # section 5.4.2): its LeaderChange entry at the epoch start must be below the HW.
        if majority_offset > self._epoch_start_offset:
            self._set_high_watermark(majority_offset)

    def _set_high_watermark(self, high_watermark: int) -> None:
        if high_watermark <= self.high_watermark:
            return
        self.high_watermark = high_watermark
        self._ready.high_watermark = high_watermark

    # ----------------------------------------------------------------- replication: follower

    def _fetch_target(self) -> int | None:
        if self.role is Role.FOLLOWER:
            return self.leader_id
        if not self.is_voter:
            # An observer that knows no leader asks the voters in turn; a non-leader voter
            # answers NOT_LEADER_OR_FOLLOWER with the leader it knows.
            ordered = sorted(self.voters)
            self._next_observer_target = (self._next_observer_target + 1) % len(ordered)
            return ordered[self._next_observer_target]
        return None

    def _maybe_send_fetch(self, now_ms: int) -> None:
        if self._fetch_in_flight_since_ms is not None:
            return
        if self.flushed_offset < self.log_end_offset:
            # Fetch only from the fsynced end: the fetch offset is the acknowledgement.
            self._ready.fsync_up_to = self.log_end_offset
            return
        target = self._fetch_target()
        if target is None:
            return
        self._fetch_in_flight_since_ms = now_ms
        request: FetchRequest | FetchSnapshotRequest
        if self._snapshot_fetch is not None:
            request = FetchSnapshotRequest(
                replica_id=self.node_id,
                leader_epoch=self.epoch,
                snapshot_id=self._snapshot_fetch.snapshot_id,
                position=self._snapshot_fetch.position,
                max_bytes=self.config.fetch_snapshot_max_bytes,
            )
        else:
            request = FetchRequest(
                replica_id=self.node_id,
                replica_epoch=self.epoch,
                fetch_offset=self.log_end_offset,
                last_fetched_epoch=self.last_epoch(),
            )
        self._send(target, request)

    def _retry_fetch(self, now_ms: int) -> None:
        if (
            self._fetch_in_flight_since_ms is not None
            and now_ms - self._fetch_in_flight_since_ms >= self.config.request_timeout_ms
        ):
            self._fetch_in_flight_since_ms = None
        self._maybe_send_fetch(now_ms)

    def _on_fetch_response(self, response: FetchResponse, sender: int, now_ms: int) -> None:
        before = (self.role, self.epoch, self.leader_id)
        if self._observe_epoch(response.leader_epoch, response.leader_id, now_ms, sender):
            return
        if (self.role, self.epoch, self.leader_id) != before:
            return  # the transition already sent a fresh fetch to the leader just learned
        fetching = self.role is Role.FOLLOWER or (
            not self.is_voter and self.role is Role.UNATTACHED
        )
        current = (
            response.fetch_offset == self.log_end_offset
            and response.last_fetched_epoch == self.last_epoch()
            and self._snapshot_fetch is None
        )
        if not fetching or not current or self._fetch_in_flight_since_ms is None:
            return  # stale, duplicated, or from before a role change
        self._fetch_in_flight_since_ms = None
        if response.error is not ErrorCode.NONE or sender != self.leader_id:
            return  # the next tick fetches again (an observer moves on to another voter)
        self._last_leader_contact_ms = now_ms
        self._fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        if response.diverging_epoch is not None:
            # Cut at the end of our entries up to that epoch, or at the leader's end if that is
            # lower; the next fetch re-validates from wherever this lands.
            _, local_end = self.end_offset_for_epoch(response.diverging_epoch.epoch)
            truncate_to = min(local_end, response.diverging_epoch.end_offset)
            self._truncate(truncate_to)
        elif response.snapshot_id is not None:
            self._snapshot_fetch = _SnapshotFetch(response.snapshot_id)
        else:
            self._append_local(list(response.records))
            self._set_high_watermark(min(response.high_watermark, self.log_end_offset))
        self._maybe_send_fetch(now_ms)

    def _on_fetch_snapshot_response(
        self, response: FetchSnapshotResponse, sender: int, now_ms: int
    ) -> None:
        before = (self.role, self.epoch, self.leader_id)
        if self._observe_epoch(response.leader_epoch, response.leader_id, now_ms, sender):
            return
        if (self.role, self.epoch, self.leader_id) != before:
            return  # the transition dropped the transfer and fetches afresh
        transfer = self._snapshot_fetch
        if (
            transfer is None
            or self._fetch_in_flight_since_ms is None
            or response.snapshot_id != transfer.snapshot_id
            or response.position != transfer.position
        ):
            return  # stale, duplicated, or from an abandoned transfer
        self._fetch_in_flight_since_ms = None
        gone = (ErrorCode.SNAPSHOT_NOT_FOUND, ErrorCode.POSITION_OUT_OF_RANGE)
        if (response.error is not ErrorCode.NONE and response.error not in gone) or (
            sender != self.leader_id
        ):
            return  # the next tick asks again
        self._last_leader_contact_ms = now_ms
        self._fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        if response.error in gone:
            # The leader replaced that snapshot with a newer one: a plain fetch learns its id.
            self._snapshot_fetch = None
        else:
            self._ready.log_ops.append(
                SnapshotChunkToWrite(transfer.snapshot_id, transfer.position, response.data)
            )
            transfer.position += len(response.data)
            if transfer.position == response.size:
                self._load_snapshot(LocalSnapshot(transfer.snapshot_id, response.size))
        self._maybe_send_fetch(now_ms)

    def _load_snapshot(self, snapshot: LocalSnapshot) -> None:
        """Replace the whole log with a fetched snapshot; fetching resumes at its end."""
        end_offset = snapshot.snapshot_id.end_offset
        self._ready.log_ops.append(LoadSnapshot(snapshot.snapshot_id, snapshot.size))
        self._snapshot = snapshot
        self._snapshot_fetch = None
        self._log = []
        self.log_start_offset = end_offset
        self.flushed_offset = end_offset
        # The high watermark was below the snapshot (the fetch offset was below the leader's
        # log start, or the entry just below it was not the committed one), so every committed
        # entry not yet handed out is inside the snapshot: the controller must not apply them
        # on top of it.
        self._committed_through = end_offset
        self._set_high_watermark(end_offset)

    def _truncate(self, offset: int) -> None:
        if offset >= self.log_end_offset:
            return
        # Never below the log start: a leader's diverging answer is at or above its log start,
        # which is at or above the snapshot this node has (both are committed prefixes).
        del self._log[offset - self.log_start_offset :]
        self.flushed_offset = min(self.flushed_offset, offset)
        self._ready.log_ops.append(Truncate(offset))

    def _send(self, to: int, message: Message) -> None:
        self._ready.messages.append(Outgoing(to, message))
