"""The quorum RPCs on the wire: `kraft.messages` values to and from Kafka's schemas.

Controllers speak to each other with Kafka's own messages, one pinned version each (both ends
are this program): Vote v2 (with KIP-996's pre-vote flag), BeginQuorumEpoch v1,
EndQuorumEpoch v1, Fetch v12 on the `__cluster_metadata` topic, FetchSnapshot v1 (KIP-630; the
highest version kio knows) and DescribeQuorum v2.

Each metadata-log entry is one RecordBatch v2 holding one record: the batch's base offset is
the entry's offset, its partition leader epoch the entry's epoch, and a LeaderChange entry is a
control batch (control record type 2, as Kafka writes its LeaderChangeMessage).
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from kio.schema.begin_quorum_epoch.v1 import request as begin_request
from kio.schema.begin_quorum_epoch.v1 import response as begin_response
from kio.schema.describe_quorum.v2 import request as describe_request
from kio.schema.describe_quorum.v2 import response as describe_response
from kio.schema.end_quorum_epoch.v1 import request as end_request
from kio.schema.end_quorum_epoch.v1 import response as end_response
from kio.schema.errors import ErrorCode as WireErrorCode
from kio.schema.fetch.v12 import request as fetch_request
from kio.schema.fetch.v12 import response as fetch_response
from kio.schema.fetch_snapshot.v1 import request as snapshot_request
from kio.schema.fetch_snapshot.v1 import response as snapshot_response
from kio.schema.types import BrokerId, TopicName
from kio.schema.vote.v2 import request as vote_request
from kio.schema.vote.v2 import response as vote_response
from kio.static.primitive import Records, i32, i32Timedelta, i64

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
    QuorumView,
    ReplicaView,
    SnapshotId,
    VoteRequest,
    VoteResponse,
)
from net.api_keys import ApiKey
from net.records import Record, decode_batches, encode_batch

METADATA_TOPIC = "__cluster_metadata"
VOTE_VERSION = 2
BEGIN_QUORUM_EPOCH_VERSION = 1
END_QUORUM_EPOCH_VERSION = 1
FETCH_VERSION = 12
DESCRIBE_QUORUM_VERSION = 2
FETCH_SNAPSHOT_VERSION = 1
# A control record's key: version 0, type 2 (LeaderChange).
_LEADER_CHANGE_KEY = struct.pack(">hh", 0, 2)
_NO_LEADER = -1
_TOPIC = TopicName(METADATA_TOPIC)

WireRequest = (
    vote_request.VoteRequest
    | begin_request.BeginQuorumEpochRequest
    | end_request.EndQuorumEpochRequest
    | fetch_request.FetchRequest
    | snapshot_request.FetchSnapshotRequest
)
WireResponse = (
    vote_response.VoteResponse
    | begin_response.BeginQuorumEpochResponse
    | end_response.EndQuorumEpochResponse
    | fetch_response.FetchResponse
    | snapshot_response.FetchSnapshotResponse
)


class WireFormatError(ValueError):
    """A quorum message that does not carry exactly the metadata partition."""


def _broker(node_id: int | None) -> BrokerId:
    return BrokerId(_NO_LEADER if node_id is None else node_id)


def _node(wire: int) -> int | None:
    return None if wire < 0 else wire


def _error_to_wire(error: ErrorCode) -> WireErrorCode:
    return WireErrorCode(error.value)


def _error_from_wire(code: WireErrorCode) -> ErrorCode:
    try:
        return ErrorCode(code.value)
    except ValueError:
        # Any other error means the same to the state machine: no usable answer from that node.
        return ErrorCode.NOT_LEADER_OR_FOLLOWER


def _only_partition(message: Any, what: str) -> Any:
    """The single metadata partition a quorum message must carry."""
    topics = message.topics if hasattr(message, "topics") else message.responses
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise WireFormatError(f"{what} must carry exactly the {METADATA_TOPIC} partition")
    topic = topics[0]
    name = (
        getattr(topic, "topic_name", None)
        or getattr(topic, "topic", None)
        or getattr(topic, "name", None)
    )
    if name != METADATA_TOPIC:
        raise WireFormatError(f"{what} is for topic {name!r}, not {METADATA_TOPIC}")
    return topics[0].partitions[0]


# -- log entries as record batches --------------------------------------------------------------


def encode_entries(entries: Iterable[Entry]) -> bytes:
    """The record batches storing `entries`, one batch each, concatenated."""
    return b"".join(
        encode_batch(
            [
                Record(
                    key=_LEADER_CHANGE_KEY if entry.kind is EntryKind.LEADER_CHANGE else None,
                    value=entry.data,
                    timestamp=0,
                )
            ],
            base_offset=entry.offset,
            partition_leader_epoch=entry.epoch,
            is_control=entry.kind is EntryKind.LEADER_CHANGE,
            now_ms=0,
        )
        for entry in entries
    )


def decode_entries(data: bytes | memoryview) -> list[Entry]:
    """The entries stored in whole record batches (a partial trailing batch is ignored)."""
    entries = []
    for header, records in decode_batches(data):
        kind = EntryKind.LEADER_CHANGE if header.is_control else EntryKind.DATA
        for record in records:
            assert record.offset is not None
            entries.append(
                Entry(record.offset, header.partition_leader_epoch, record.value or b"", kind)
            )
    return entries


# -- Vote ---------------------------------------------------------------------------------------


def _vote_request_to_wire(
    message: VoteRequest, cluster_id: str, to_node: int
) -> vote_request.VoteRequest:
    return vote_request.VoteRequest(
        cluster_id=cluster_id,
        voter_id=BrokerId(to_node),
        topics=(
            vote_request.TopicData(
                topic_name=_TOPIC,
                partitions=(
                    vote_request.PartitionData(
                        partition_index=i32(0),
                        replica_epoch=i32(message.candidate_epoch),
                        replica_id=BrokerId(message.candidate_id),
                        replica_directory_id=None,
                        voter_directory_id=None,
                        last_offset_epoch=i32(message.last_offset_epoch),
                        last_offset=i64(message.last_offset),
                        pre_vote=message.pre_vote,
                    ),
                ),
            ),
        ),
    )


def _vote_request_from_wire(request: vote_request.VoteRequest) -> tuple[Message, int]:
    vote = _only_partition(request, "Vote")
    return (
        VoteRequest(
            candidate_epoch=vote.replica_epoch,
            candidate_id=vote.replica_id,
            last_offset_epoch=vote.last_offset_epoch,
            last_offset=vote.last_offset,
            pre_vote=vote.pre_vote,
        ),
        vote.replica_id,
    )


def _vote_response_to_wire(message: VoteResponse) -> vote_response.VoteResponse:
    return vote_response.VoteResponse(
        error_code=WireErrorCode.none,
        topics=(
            vote_response.TopicData(
                topic_name=_TOPIC,
                partitions=(
                    vote_response.PartitionData(
                        partition_index=i32(0),
                        error_code=_error_to_wire(message.error),
                        leader_id=_broker(message.leader_id),
                        leader_epoch=i32(message.leader_epoch),
                        vote_granted=message.vote_granted,
                    ),
                ),
            ),
        ),
    )


def _vote_response_from_wire(response: vote_response.VoteResponse, request: VoteRequest) -> Message:
    vote = _only_partition(response, "Vote response")
    return VoteResponse(
        error=_error_from_wire(vote.error_code),
        leader_epoch=vote.leader_epoch,
        leader_id=_node(vote.leader_id),
        vote_granted=vote.vote_granted,
        pre_vote=request.pre_vote,
    )


# -- BeginQuorumEpoch and EndQuorumEpoch --------------------------------------------------------


def _begin_request_to_wire(
    message: BeginQuorumEpochRequest, cluster_id: str, to_node: int
) -> begin_request.BeginQuorumEpochRequest:
    return begin_request.BeginQuorumEpochRequest(
        cluster_id=cluster_id,
        voter_id=BrokerId(to_node),
        topics=(
            begin_request.TopicData(
                topic_name=_TOPIC,
                partitions=(
                    begin_request.PartitionData(
                        partition_index=i32(0),
                        voter_directory_id=None,
                        leader_id=BrokerId(message.leader_id),
                        leader_epoch=i32(message.leader_epoch),
                    ),
                ),
            ),
        ),
        leader_endpoints=(),
    )


def _begin_request_from_wire(
    request: begin_request.BeginQuorumEpochRequest,
) -> tuple[Message, int]:
    begin = _only_partition(request, "BeginQuorumEpoch")
    return BeginQuorumEpochRequest(begin.leader_epoch, begin.leader_id), begin.leader_id


def _end_request_to_wire(
    message: EndQuorumEpochRequest, cluster_id: str, to_node: int
) -> end_request.EndQuorumEpochRequest:
    return end_request.EndQuorumEpochRequest(
        cluster_id=cluster_id,
        topics=(
            end_request.TopicData(
                topic_name=_TOPIC,
                partitions=(
                    end_request.PartitionData(
                        partition_index=i32(0),
                        leader_id=BrokerId(message.leader_id),
                        leader_epoch=i32(message.leader_epoch),
                        preferred_candidates=tuple(
                            end_request.ReplicaInfo(
                                candidate_id=BrokerId(candidate), candidate_directory_id=None
                            )
                            for candidate in message.preferred_successors
                        ),
                    ),
                ),
            ),
        ),
        leader_endpoints=(),
    )


def _end_request_from_wire(request: end_request.EndQuorumEpochRequest) -> tuple[Message, int]:
    end = _only_partition(request, "EndQuorumEpoch")
    successors = tuple(candidate.candidate_id for candidate in end.preferred_candidates)
    return EndQuorumEpochRequest(end.leader_epoch, end.leader_id, successors), end.leader_id


def _epoch_response_to_wire(
    module: Any, message: BeginQuorumEpochResponse | EndQuorumEpochResponse
) -> WireResponse:
    """BeginQuorumEpoch's or EndQuorumEpoch's response, which have the same fields, from
    `module` (that RPC's kio response module)."""
    response_type = (
        module.BeginQuorumEpochResponse
        if isinstance(message, BeginQuorumEpochResponse)
        else module.EndQuorumEpochResponse
    )
    wire: WireResponse = response_type(
        error_code=WireErrorCode.none,
        topics=(
            module.TopicData(
                topic_name=_TOPIC,
                partitions=(
                    module.PartitionData(
                        partition_index=i32(0),
                        error_code=_error_to_wire(message.error),
                        leader_id=_broker(message.leader_id),
                        leader_epoch=i32(message.leader_epoch),
                    ),
                ),
            ),
        ),
    )
    return wire


def _begin_response_from_wire(
    response: begin_response.BeginQuorumEpochResponse, request: Message
) -> Message:
    begin = _only_partition(response, "BeginQuorumEpoch response")
    return BeginQuorumEpochResponse(
        _error_from_wire(begin.error_code), begin.leader_epoch, _node(begin.leader_id)
    )


def _end_response_from_wire(
    response: end_response.EndQuorumEpochResponse, request: Message
) -> Message:
    end = _only_partition(response, "EndQuorumEpoch response")
    return EndQuorumEpochResponse(
        _error_from_wire(end.error_code), end.leader_epoch, _node(end.leader_id)
    )


# -- Fetch --------------------------------------------------------------------------------------


def _fetch_request_to_wire(
    message: FetchRequest, cluster_id: str, to_node: int
) -> fetch_request.FetchRequest:
    return fetch_request.FetchRequest(
        cluster_id=cluster_id,
        replica_id=BrokerId(message.replica_id),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=500)),
        min_bytes=i32(1),
        topics=(
            fetch_request.FetchTopic(
                topic=_TOPIC,
                partitions=(
                    fetch_request.FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(message.replica_epoch),
                        fetch_offset=i64(message.fetch_offset),
                        last_fetched_epoch=i32(message.last_fetched_epoch),
                        partition_max_bytes=i32(1024 * 1024),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )


def _fetch_request_from_wire(request: fetch_request.FetchRequest) -> tuple[Message, int]:
    fetch = _only_partition(request, "Fetch")
    return (
        FetchRequest(
            replica_id=request.replica_id,
            replica_epoch=fetch.current_leader_epoch,
            fetch_offset=fetch.fetch_offset,
            last_fetched_epoch=fetch.last_fetched_epoch,
        ),
        request.replica_id,
    )


def _fetch_response_to_wire(message: FetchResponse) -> fetch_response.FetchResponse:
    diverging = message.diverging_epoch
    snapshot = message.snapshot_id
    return fetch_response.FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=WireErrorCode.none,
        responses=(
            fetch_response.FetchableTopicResponse(
                topic=_TOPIC,
                partitions=(
                    fetch_response.PartitionData(
                        partition_index=i32(0),
                        error_code=_error_to_wire(message.error),
                        high_watermark=i64(message.high_watermark),
                        diverging_epoch=fetch_response.EpochEndOffset(
                            epoch=i32(diverging.epoch if diverging else -1),
                            end_offset=i64(diverging.end_offset if diverging else -1),
                        ),
                        current_leader=fetch_response.LeaderIdAndEpoch(
                            leader_id=_broker(message.leader_id),
                            leader_epoch=i32(message.leader_epoch),
                        ),
                        snapshot_id=fetch_response.SnapshotId(
                            end_offset=i64(snapshot.end_offset if snapshot else -1),
                            epoch=i32(snapshot.epoch if snapshot else -1),
                        ),
                        aborted_transactions=None,
                        records=(
                            Records(encode_entries(message.records)) if message.records else None
                        ),
                    ),
                ),
            ),
        ),
    )


def _fetch_response_from_wire(
    response: fetch_response.FetchResponse, request: FetchRequest
) -> Message:
    fetch = _only_partition(response, "Fetch response")
    diverging = None
    if fetch.diverging_epoch.epoch >= 0:
        diverging = DivergingEpoch(fetch.diverging_epoch.epoch, fetch.diverging_epoch.end_offset)
    snapshot = None
    if fetch.snapshot_id.end_offset >= 0 and fetch.snapshot_id.epoch >= 0:
        snapshot = SnapshotId(fetch.snapshot_id.end_offset, fetch.snapshot_id.epoch)
    return FetchResponse(
        error=_error_from_wire(fetch.error_code),
        leader_epoch=fetch.current_leader.leader_epoch,
        leader_id=_node(fetch.current_leader.leader_id),
        high_watermark=fetch.high_watermark,
        fetch_offset=request.fetch_offset,
        last_fetched_epoch=request.last_fetched_epoch,
        records=tuple(decode_entries(fetch.records)) if fetch.records else (),
        diverging_epoch=diverging,
        snapshot_id=snapshot,
    )


# -- FetchSnapshot ------------------------------------------------------------------------------


def _snapshot_request_to_wire(
    message: FetchSnapshotRequest, cluster_id: str, to_node: int
) -> snapshot_request.FetchSnapshotRequest:
    return snapshot_request.FetchSnapshotRequest(
        cluster_id=cluster_id,
        replica_id=BrokerId(message.replica_id),
        max_bytes=i32(message.max_bytes),
        topics=(
            snapshot_request.TopicSnapshot(
                name=_TOPIC,
                partitions=(
                    snapshot_request.PartitionSnapshot(
                        partition=i32(0),
                        current_leader_epoch=i32(message.leader_epoch),
                        snapshot_id=snapshot_request.SnapshotId(
                            end_offset=i64(message.snapshot_id.end_offset),
                            epoch=i32(message.snapshot_id.epoch),
                        ),
                        position=i64(message.position),
                    ),
                ),
            ),
        ),
    )


def _snapshot_request_from_wire(
    request: snapshot_request.FetchSnapshotRequest,
) -> tuple[Message, int]:
    chunk = _only_partition(request, "FetchSnapshot")
    return (
        FetchSnapshotRequest(
            replica_id=request.replica_id,
            leader_epoch=chunk.current_leader_epoch,
            snapshot_id=SnapshotId(chunk.snapshot_id.end_offset, chunk.snapshot_id.epoch),
            position=chunk.position,
            max_bytes=request.max_bytes,
        ),
        request.replica_id,
    )


def _snapshot_response_to_wire(
    message: FetchSnapshotResponse,
) -> snapshot_response.FetchSnapshotResponse:
    if message.unread_bytes:
        raise ValueError("a FetchSnapshotResponse must carry its bytes before it is sent")
    return snapshot_response.FetchSnapshotResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=WireErrorCode.none,
        topics=(
            snapshot_response.TopicSnapshot(
                name=_TOPIC,
                partitions=(
                    snapshot_response.PartitionSnapshot(
                        index=i32(0),
                        error_code=_error_to_wire(message.error),
                        snapshot_id=snapshot_response.SnapshotId(
                            end_offset=i64(message.snapshot_id.end_offset),
                            epoch=i32(message.snapshot_id.epoch),
                        ),
                        current_leader=snapshot_response.LeaderIdAndEpoch(
                            leader_id=_broker(message.leader_id),
                            leader_epoch=i32(message.leader_epoch),
                        ),
                        size=i64(message.size),
                        position=i64(message.position),
                        unaligned_records=Records(message.data),
                    ),
                ),
            ),
        ),
    )


def _snapshot_response_from_wire(
    response: snapshot_response.FetchSnapshotResponse, request: Message
) -> Message:
    chunk = _only_partition(response, "FetchSnapshot response")
    return FetchSnapshotResponse(
        error=_error_from_wire(chunk.error_code),
        leader_id=_node(chunk.current_leader.leader_id),
        leader_epoch=chunk.current_leader.leader_epoch,
        snapshot_id=SnapshotId(chunk.snapshot_id.end_offset, chunk.snapshot_id.epoch),
        size=chunk.size,
        position=chunk.position,
        data=bytes(chunk.unaligned_records),
    )


# -- the table of quorum RPCs -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuorumRpc:
    """One quorum RPC the state machine speaks: its api key and pinned version, its message
    kinds (`kraft.messages`) and kio's, and how each crosses the wire.

    `request_to_wire(message, cluster_id, to_node)`, `request_from_wire(wire)` -> (message,
    sender), `response_to_wire(message)` and `response_from_wire(wire, request)`, where
    `request` is the message the response answers.
    """

    api_key: ApiKey
    version: int
    request: type[Message]
    response: type[Message]
    wire_request: type[WireRequest]
    wire_response: type[WireResponse]
    request_to_wire: Callable[[Any, str, int], WireRequest]
    request_from_wire: Callable[[Any], tuple[Message, int]]
    response_to_wire: Callable[[Any], WireResponse]
    response_from_wire: Callable[[Any, Any], Message]


QUORUM_RPCS = (
    QuorumRpc(
        ApiKey.VOTE,
        VOTE_VERSION,
        VoteRequest,
        VoteResponse,
        vote_request.VoteRequest,
        vote_response.VoteResponse,
        _vote_request_to_wire,
        _vote_request_from_wire,
        _vote_response_to_wire,
        _vote_response_from_wire,
    ),
    QuorumRpc(
        ApiKey.BEGIN_QUORUM_EPOCH,
        BEGIN_QUORUM_EPOCH_VERSION,
        BeginQuorumEpochRequest,
        BeginQuorumEpochResponse,
        begin_request.BeginQuorumEpochRequest,
        begin_response.BeginQuorumEpochResponse,
        _begin_request_to_wire,
        _begin_request_from_wire,
        partial(_epoch_response_to_wire, begin_response),
        _begin_response_from_wire,
    ),
    QuorumRpc(
        ApiKey.END_QUORUM_EPOCH,
        END_QUORUM_EPOCH_VERSION,
        EndQuorumEpochRequest,
        EndQuorumEpochResponse,
        end_request.EndQuorumEpochRequest,
        end_response.EndQuorumEpochResponse,
        _end_request_to_wire,
        _end_request_from_wire,
        partial(_epoch_response_to_wire, end_response),
        _end_response_from_wire,
    ),
    QuorumRpc(
        ApiKey.FETCH,
        FETCH_VERSION,
        FetchRequest,
        FetchResponse,
        fetch_request.FetchRequest,
        fetch_response.FetchResponse,
        _fetch_request_to_wire,
        _fetch_request_from_wire,
        _fetch_response_to_wire,
        _fetch_response_from_wire,
    ),
    QuorumRpc(
        ApiKey.FETCH_SNAPSHOT,
        FETCH_SNAPSHOT_VERSION,
        FetchSnapshotRequest,
        FetchSnapshotResponse,
        snapshot_request.FetchSnapshotRequest,
        snapshot_response.FetchSnapshotResponse,
        _snapshot_request_to_wire,
        _snapshot_request_from_wire,
        _snapshot_response_to_wire,
        _snapshot_response_from_wire,
    ),
)
RPC_OF_REQUEST: Mapping[type[Message], QuorumRpc] = {rpc.request: rpc for rpc in QUORUM_RPCS}
_RPC_OF_RESPONSE = {rpc.response: rpc for rpc in QUORUM_RPCS}
_RPC_OF_WIRE_REQUEST = {rpc.wire_request: rpc for rpc in QUORUM_RPCS}
_RPC_OF_WIRE_RESPONSE = {rpc.wire_response: rpc for rpc in QUORUM_RPCS}


def request_to_wire(message: Message, cluster_id: str, to_node: int) -> WireRequest:
    """The Kafka request carrying `message` (one of the quorum request kinds)."""
    rpc = RPC_OF_REQUEST.get(type(message))
    if rpc is None:
        raise TypeError(f"{type(message).__name__} is not a quorum request")
    return rpc.request_to_wire(message, cluster_id, to_node)


def request_from_wire(request: WireRequest) -> tuple[Message, int]:
    """The state machine's view of a received request, and the node that sent it."""
    return _RPC_OF_WIRE_REQUEST[type(request)].request_from_wire(request)


def response_to_wire(message: Message) -> WireResponse:
    """The Kafka response carrying `message` (one of the quorum response kinds)."""
    rpc = _RPC_OF_RESPONSE.get(type(message))
    if rpc is None:
        raise TypeError(f"{type(message).__name__} is not a quorum response")
    return rpc.response_to_wire(message)


def response_from_wire(response: WireResponse, request: Message) -> Message:
    """The state machine's view of a response to `request` (which it echoes, for Fetch)."""
    if response.error_code != WireErrorCode.none:
        raise WireFormatError(f"quorum response with error {response.error_code.name}")
    rpc = _RPC_OF_WIRE_RESPONSE[type(response)]
    if not isinstance(request, rpc.request):
        raise TypeError(f"a {type(response).__name__} cannot answer {type(request).__name__}")
    return rpc.response_from_wire(response, request)


# -- DescribeQuorum -------------------------------------------------------------------------------


def describe_quorum_request() -> describe_request.DescribeQuorumRequest:
    """A DescribeQuorum request for the metadata partition."""
    return describe_request.DescribeQuorumRequest(
        topics=(
            describe_request.TopicData(
                topic_name=_TOPIC,
                partitions=(describe_request.PartitionData(partition_index=i32(0)),),
            ),
        )
    )


def describe_quorum_response(
    view: QuorumView, error: ErrorCode = ErrorCode.NONE
) -> describe_response.DescribeQuorumResponse:
    """The DescribeQuorum answer for `view` (times already in wall-clock epoch ms)."""

    def states(replicas: tuple[ReplicaView, ...]) -> tuple[describe_response.ReplicaState, ...]:
        return tuple(
            describe_response.ReplicaState(
                replica_id=BrokerId(replica.node_id),
                replica_directory_id=None,
                log_end_offset=i64(replica.log_end_offset),
                last_fetch_timestamp=i64(replica.last_fetch_ms),
                last_caught_up_timestamp=i64(replica.last_caught_up_ms),
            )
            for replica in replicas
        )

    return describe_response.DescribeQuorumResponse(
        error_code=WireErrorCode.none,
        error_message=None,
        topics=(
            describe_response.TopicData(
                topic_name=_TOPIC,
                partitions=(
                    describe_response.PartitionData(
                        partition_index=i32(0),
                        error_code=_error_to_wire(error),
                        error_message=None if error is ErrorCode.NONE else error.name,
                        leader_id=_broker(view.leader_id),
                        leader_epoch=i32(view.leader_epoch),
                        high_watermark=i64(view.high_watermark),
                        current_voters=states(view.voters),
                        observers=states(view.observers),
                    ),
                ),
            ),
        ),
        nodes=(),
    )


def quorum_view_from_wire(response: object) -> QuorumView:
    """The quorum a DescribeQuorum answer describes; WireFormatError if it is anything else or
    carries an error."""
    if not isinstance(response, describe_response.DescribeQuorumResponse):
        raise WireFormatError(f"not a DescribeQuorum response: {type(response).__name__}")
    if response.error_code != WireErrorCode.none:
        raise WireFormatError(f"DescribeQuorum failed with {response.error_code.name}")
    partition = _only_partition(response, "DescribeQuorum response")
    if partition.error_code != WireErrorCode.none:
        raise WireFormatError(f"DescribeQuorum failed with {partition.error_code.name}")

    def views(states: tuple[describe_response.ReplicaState, ...]) -> tuple[ReplicaView, ...]:
        return tuple(
            ReplicaView(
                node_id=state.replica_id,
                log_end_offset=state.log_end_offset,
                last_caught_up_ms=state.last_caught_up_timestamp,
                last_fetch_ms=state.last_fetch_timestamp,
            )
            for state in states
        )

    return QuorumView(
        leader_id=_node(partition.leader_id),
        leader_epoch=partition.leader_epoch,
        high_watermark=partition.high_watermark,
        voters=views(partition.current_voters),
        observers=views(partition.observers),
    )
