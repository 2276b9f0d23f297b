"""The Raft RPCs as the pure state machine sees them (KIP-595, pre-vote from KIP-996).

These are plain values, not wire structs: the asyncio driver maps them to and from the Kafka
Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and FetchSnapshot (KIP-630) messages in `net`.
Epoch 0 means "no epoch" (the first leader epoch is 1) and offsets count entries from 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum


class ErrorCode(IntEnum):
    """Kafka error codes that the quorum protocol uses (values as on the wire)."""

    NONE = 0
    NOT_LEADER_OR_FOLLOWER = 6
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    INCONSISTENT_VOTER_SET = 94
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99


class EntryKind(Enum):
    """What an entry of the metadata log carries."""

    DATA = "data"
    # Appended by every new leader at the start of its epoch; committing it is what lets the
    # leader advance the high watermark (Raft's "commit an entry of your own term" rule).
    LEADER_CHANGE = "leader_change"


@dataclass(frozen=True, slots=True)
class Entry:
    """One record of the metadata log: its offset, the leader epoch that wrote it, its bytes."""

    offset: int
    epoch: int
    data: bytes
    kind: EntryKind = EntryKind.DATA


@dataclass(frozen=True, slots=True)
class VoteRequest:
    """Asks for a vote (or, with `pre_vote`, whether a vote would be granted) for an epoch.

    A pre-vote carries the epoch the candidate would stand in (its current epoch + 1) and changes
    no state on the receiver.
    """

    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool


@dataclass(frozen=True, slots=True)
class VoteResponse:
    """The answer to a VoteRequest, with the responder's view of epoch and leader."""

    error: ErrorCode
    leader_epoch: int
    leader_id: int | None
    vote_granted: bool
    pre_vote: bool


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    """Sent by a newly elected leader to every other voter."""

    leader_epoch: int
    leader_id: int


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    """Acknowledges a BeginQuorumEpoch (or tells a stale leader the newer epoch)."""

    error: ErrorCode
    leader_epoch: int
    leader_id: int | None


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    """Sent by a resigning leader; `preferred_successors` are voters, most caught-up first."""

    leader_epoch: int
    leader_id: int
    preferred_successors: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    """Acknowledges an EndQuorumEpoch."""

    error: ErrorCode
    leader_epoch: int
    leader_id: int | None


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """A follower's or observer's pull from the leader.

    `fetch_offset` is the replica's fsynced log end offset, so the leader can count it as
    replicated; `last_fetched_epoch` is the epoch of the entry just below it (0 if none) and lets
    the leader detect divergence; `replica_epoch` is the leader epoch the replica believes in.
    """

    replica_id: int
    replica_epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@dataclass(frozen=True, slots=True)
class DivergingEpoch:
    """The leader's largest epoch <= the fetcher's last fetched epoch, and where it ends."""

    epoch: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class SnapshotId:
    """A snapshot of the metadata state covering every entry below `end_offset` (KIP-630).

    `epoch` is the epoch of the entry at `end_offset - 1`: below a log that starts at the
    snapshot, the snapshot id is the epoch boundary that the diverging-epoch check compares with.
    """

    end_offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """The leader's answer to a Fetch: entries from `fetch_offset`, or where to truncate.

    `fetch_offset` and `last_fetched_epoch` echo the request. Kafka's wire response does not
    carry them; the driver fills them in from the request it correlates the response with, so
    that the follower can drop a stale (reordered or duplicated) response.
    """

    error: ErrorCode
    leader_epoch: int
    leader_id: int | None
    high_watermark: int
    fetch_offset: int
    last_fetched_epoch: int
    records: tuple[Entry, ...] = ()
    diverging_epoch: DivergingEpoch | None = None
    # Set (and no records) when the fetch offset is below the leader's log start, or the
    # fetcher's log cannot be matched with what is left of the leader's: fetch this snapshot.
    snapshot_id: SnapshotId | None = None


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    """A follower's or observer's pull of `max_bytes` of a snapshot from byte `position` on."""

    replica_id: int
    leader_epoch: int
    snapshot_id: SnapshotId
    position: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    """The leader's answer to a FetchSnapshot: the chunk of `snapshot_id` at `position`.

    `size` is the snapshot's total size in bytes. The state machine cannot read snapshot files:
    the leader emits the response with `data` empty and `unread_bytes` set to the number of bytes
    the driver must read at `position` from the snapshot file and put into `data` (then setting
    `unread_bytes` to 0) before sending it. A response as received always carries its bytes.
    """

    error: ErrorCode
    leader_id: int | None
    leader_epoch: int
    snapshot_id: SnapshotId
    size: int
    position: int
    data: bytes = b""
    unread_bytes: int = 0


Message = (
    VoteRequest
    | VoteResponse
    | BeginQuorumEpochRequest
    | BeginQuorumEpochResponse
    | EndQuorumEpochRequest
    | EndQuorumEpochResponse
    | FetchRequest
    | FetchResponse
    | FetchSnapshotRequest
    | FetchSnapshotResponse
)


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One quorum member's replication progress as the leader knows it (-1: unknown).

    Times are wall-clock epoch milliseconds, as DescribeQuorum reports them.
    """

    node_id: int
    log_end_offset: int
    last_caught_up_ms: int
    last_fetch_ms: int = -1


@dataclass(frozen=True, slots=True)
class QuorumView:
    """The quorum as DescribeQuorum reports it (replica progress is known on the leader only)."""

    leader_id: int | None
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaView, ...]
    observers: tuple[ReplicaView, ...]
