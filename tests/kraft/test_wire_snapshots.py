"""FetchSnapshot, Fetch's snapshot id and DescribeQuorum through Kafka's wire format."""

from __future__ import annotations

import io
from typing import Any

import pytest
from kio.schema.errors import ErrorCode as WireErrorCode
from kio.serial import entity_reader, entity_writer

from kraft.messages import (
    ErrorCode,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    QuorumView,
    ReplicaView,
    SnapshotId,
)
from kraft.wire import (
    WireFormatError,
    describe_quorum_request,
    describe_quorum_response,
    quorum_view_from_wire,
    request_from_wire,
    request_to_wire,
    response_from_wire,
    response_to_wire,
)


def through_bytes(entity: Any) -> Any:
    """Encode and decode a kio entity, as it crosses the network."""
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    decoded, _ = entity_reader(type(entity))(memoryview(buffer.getvalue()), 0)
    return decoded


def test_fetch_snapshot_request_round_trips() -> None:
    request = FetchSnapshotRequest(
        replica_id=3, leader_epoch=7, snapshot_id=SnapshotId(900, 6), position=4096, max_bytes=512
    )
    wire = through_bytes(request_to_wire(request, "cluster", 1))
    assert request_from_wire(wire) == (request, 3)


def test_fetch_snapshot_response_round_trips_with_its_bytes() -> None:
    response = FetchSnapshotResponse(
        error=ErrorCode.NONE,
        leader_id=1,
        leader_epoch=7,
        snapshot_id=SnapshotId(900, 6),
        size=10_000,
        position=4096,
        data=b"chunk" * 10,
    )
    request = FetchSnapshotRequest(3, 7, SnapshotId(900, 6), 4096, 512)
    wire = through_bytes(response_to_wire(response))
    assert response_from_wire(wire, request) == response


def test_a_fetch_response_carries_the_snapshot_to_fetch() -> None:
    request = FetchRequest(replica_id=2, replica_epoch=4, fetch_offset=0, last_fetched_epoch=0)
    response = FetchResponse(
        error=ErrorCode.NONE,
        leader_epoch=4,
        leader_id=1,
        high_watermark=120,
        fetch_offset=0,
        last_fetched_epoch=0,
        snapshot_id=SnapshotId(100, 3),
    )
    assert response_from_wire(response_to_wire(response), request) == response
    plain = FetchResponse(ErrorCode.NONE, 4, 1, 120, 0, 0)
    decoded = response_from_wire(response_to_wire(plain), request)
    assert isinstance(decoded, FetchResponse)
    assert decoded.snapshot_id is None


def test_describe_quorum_reports_the_view_or_the_error() -> None:
    view = QuorumView(
        leader_id=1,
        leader_epoch=5,
        high_watermark=42,
        voters=(ReplicaView(1, 42, 1_700_000_000_000, -1), ReplicaView(2, 40, 1, 2)),
        observers=(ReplicaView(7, 30, -1, 1_700_000_000_001),),
    )
    assert describe_quorum_request().topics[0].partitions[0].partition_index == 0
    assert quorum_view_from_wire(through_bytes(describe_quorum_response(view))) == view
    refused = through_bytes(describe_quorum_response(view, ErrorCode.NOT_LEADER_OR_FOLLOWER))
    partition = refused.topics[0].partitions[0]
    assert partition.error_code == WireErrorCode.not_leader_or_follower
    with pytest.raises(WireFormatError, match="not_leader_or_follower"):
        quorum_view_from_wire(refused)
    with pytest.raises(WireFormatError):
        quorum_view_from_wire(None)
