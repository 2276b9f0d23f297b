"""Wire translation of the classic group APIs (broker/groups/wire.py).

Requests are built as kio entities and sent through the request codec first, so they are what
the server would decode; responses are encoded and decoded again, so every field checked is one
a client reads.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.groups import wire
from broker.groups.membership import (
    GroupDescription,
    GroupState,
    HeartbeatAnswer,
    JoinAnswer,
    JoinedMember,
    LeaveAnswer,
    LeftMember,
    MemberDescription,
    Protocol,
    SyncAnswer,
)
from net.api_keys import ApiKey
from net.protocol import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    field_entity_type,
    make_entity,
    request_schema,
)

MS = datetime.timedelta(milliseconds=1)


def _versions(served: tuple[int, int]) -> list[int]:
    return list(range(served[0], served[1] + 1))


def _request_type(api_key: int, version: int, *path: str) -> Any:
    entity: Any = request_schema(api_key, version)
    for name in path:
        entity = field_entity_type(entity, name)
    return entity


def _request(api_key: int, version: int, **values: Any) -> Any:
    """A request of `version` as the server decodes it off the wire."""
    entity = make_entity(_request_type(api_key, version), **values)
    frame = b"".join(bytes(b) for b in encode_request(entity, 7, "client-1"))
    _header, body = decode_request(frame[4:])
    assert body == entity
    return body


def _on_the_wire(response: Any) -> Any:
    """`response` encoded and decoded again, checked to be unchanged by the trip."""
    frame = b"".join(bytes(b) for b in encode_response(42, response))
    decoded = decode_response(frame[4:], response.__api_key__, response.__version__)
    assert decoded == response
    return decoded


# --- FindCoordinator ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_find_coordinator_before_v4_asks_for_one_key(version: int) -> None:
    extra = {"key_type": 0} if version >= 1 else {}
    request = _request(ApiKey.FIND_COORDINATOR, version, key="my-group", **extra)

    assert wire.find_coordinator_keys(version, request) == ["my-group"]
    assert wire.find_coordinator_key_type_error(version, request) is ErrorCode.none

    response = _on_the_wire(
        wire.find_coordinator_response(
            version, [wire.Coordinator("my-group", ErrorCode.none, 2, "broker-2", 9093)]
        )
    )
    assert response.error_code is ErrorCode.none
    assert (response.node_id, response.host, response.port) == (2, "broker-2", 9093)


@pytest.mark.parametrize("version", [4, 6])
def test_find_coordinator_from_v4_asks_for_a_batch(version: int) -> None:
    request = _request(ApiKey.FIND_COORDINATOR, version, key_type=0, coordinator_keys=("a", "b"))

    assert wire.find_coordinator_keys(version, request) == ["a", "b"]
    assert wire.find_coordinator_key_type_error(version, request) is ErrorCode.none

    response = _on_the_wire(
        wire.find_coordinator_response(
            version,
            [
                wire.Coordinator("a", ErrorCode.none, 1, "broker-1", 9092),
                wire.Coordinator("b", ErrorCode.coordinator_not_available, message="loading"),
            ],
        )
    )
    a, b = response.coordinators
    assert (a.key, a.error_code, a.node_id, a.host, a.port) == (
        "a",
        ErrorCode.none,
        1,
        "broker-1",
        9092,
    )
    assert (b.key, b.error_code, b.node_id, b.host, b.port, b.error_message) == (
        "b",
        ErrorCode.coordinator_not_available,
        -1,
        "",
        -1,
        "loading",
    )


def test_find_coordinator_error_message_where_the_version_has_one() -> None:
    refused = wire.Coordinator("t", ErrorCode.invalid_request, message="no transactions")
    v0 = _on_the_wire(wire.find_coordinator_response(0, [refused]))
    v2 = _on_the_wire(wire.find_coordinator_response(2, [refused]))

    assert v0.error_code is v2.error_code is ErrorCode.invalid_request
    assert not hasattr(v0, "error_message")
    assert v2.error_message == "no transactions"
    assert v2.throttle_time == datetime.timedelta(0)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_find_coordinator_refuses_transaction_coordinators(version: int) -> None:
    request = _request(ApiKey.FIND_COORDINATOR, version, key="txn", key_type=1)
    assert wire.find_coordinator_key_type_error(version, request) is ErrorCode.invalid_request


def test_find_coordinator_refuses_transaction_coordinators_in_a_batch() -> None:
    request = _request(ApiKey.FIND_COORDINATOR, 6, key_type=1, coordinator_keys=("txn",))
    assert wire.find_coordinator_key_type_error(6, request) is ErrorCode.invalid_request


# --- JoinGroup ----------------------------------------------------------------------------------


def _join_request(version: int, **values: Any) -> Any:
    protocol_type = _request_type(ApiKey.JOIN_GROUP, version, "protocols")
    defaults: dict[str, Any] = {
        "group_id": "g",
        "session_timeout": 10_000 * MS,
        "rebalance_timeout": 60_000 * MS,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": (
            make_entity(protocol_type, name="range", metadata=b"\x00\x01"),
            make_entity(protocol_type, name="cooperative-sticky", metadata=b"\x02"),
        ),
    }
    return _request(ApiKey.JOIN_GROUP, version, **(defaults | values))


def test_join_v0_takes_the_session_timeout_as_rebalance_timeout() -> None:
    group_id, join = wire.join_request(0, _join_request(0), "rdkafka", "/10.0.0.1")

    assert group_id == "g"
    assert join.member_id == ""
    assert (join.client_id, join.client_host) == ("rdkafka", "/10.0.0.1")
    assert join.protocol_type == "consumer"
    assert join.protocols == (
        Protocol("range", b"\x00\x01"),
        Protocol("cooperative-sticky", b"\x02"),
    )
    assert join.session_timeout_ms == join.rebalance_timeout_ms == 10_000
    assert join.group_instance_id is None
    assert not join.require_known_member_id
    assert not join.supports_skip_assignment


@pytest.mark.parametrize(
    ("version", "known_member_id", "instance_id", "skip_assignment"),
    [
        (1, False, None, False),
        (3, False, None, False),
        (4, True, None, False),
        (5, True, "static-1", False),
        (7, True, "static-1", False),
        (9, True, "static-1", True),
    ],
)
def test_join_flags_follow_the_version(
    version: int, known_member_id: bool, instance_id: str | None, skip_assignment: bool
) -> None:
    request = _join_request(version, member_id="m-1", group_instance_id="static-1")

    _group_id, join = wire.join_request(version, request, "c", "/h")

    assert join.member_id == "m-1"
    assert (join.session_timeout_ms, join.rebalance_timeout_ms) == (10_000, 60_000)
    assert join.group_instance_id == instance_id
    assert join.require_known_member_id is known_member_id
    assert join.supports_skip_assignment is skip_assignment


_LEADER_ANSWER = JoinAnswer(
    error=ErrorCode.none,
    member_id="m-1",
    generation_id=3,
    protocol_type="consumer",
    protocol_name="range",
    leader="m-1",
    members=(
        JoinedMember("m-1", "static-1", b"\x00\x01"),
        JoinedMember("m-2", None, b""),
    ),
    skip_assignment=True,
)


@pytest.mark.parametrize("version", [0, 2, 5, 6])
def test_join_response_before_v7(version: int) -> None:
    response = _on_the_wire(wire.join_response(version, _LEADER_ANSWER))

    assert response.error_code is ErrorCode.none
    assert (response.generation_id, response.protocol_name) == (3, "range")
    assert (response.leader, response.member_id) == ("m-1", "m-1")
    assert [(m.member_id, m.metadata) for m in response.members] == [
        ("m-1", b"\x00\x01"),
        ("m-2", b""),
    ]
    if version >= 5:
        assert [m.group_instance_id for m in response.members] == ["static-1", None]
    assert not hasattr(response, "protocol_type")


def test_join_response_v9_carries_protocol_type_and_skip_assignment() -> None:
    response = _on_the_wire(wire.join_response(9, _LEADER_ANSWER))

    assert (response.protocol_type, response.protocol_name) == ("consumer", "range")
    assert response.skip_assignment is True
    assert response.throttle_time == datetime.timedelta(0)


@pytest.mark.parametrize(("version", "protocol_name"), [(0, ""), (6, ""), (7, None), (9, None)])
def test_join_error_has_no_member_and_a_null_protocol_where_allowed(
    version: int, protocol_name: str | None
) -> None:
    response = _on_the_wire(wire.join_error(version, ErrorCode.invalid_group_id))

    assert response.error_code is ErrorCode.invalid_group_id
    assert (response.member_id, response.generation_id, response.leader) == ("", -1, "")
    assert response.protocol_name == protocol_name
    assert response.members == ()


def test_member_id_required_answer_carries_the_new_member_id() -> None:
    answer = JoinAnswer(ErrorCode.member_id_required, "rdkafka-1234")
    response = _on_the_wire(wire.join_response(5, answer))

    assert response.error_code is ErrorCode.member_id_required
    assert response.member_id == "rdkafka-1234"


# --- SyncGroup, Heartbeat -----------------------------------------------------------------------


def _sync_request(version: int, **values: Any) -> Any:
    assignment_type = _request_type(ApiKey.SYNC_GROUP, version, "assignments")
    defaults: dict[str, Any] = {
        "group_id": "g",
        "generation_id": 3,
        "member_id": "m-1",
        "group_instance_id": "static-1",
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": (
            make_entity(assignment_type, member_id="m-1", assignment=b"\x01"),
            make_entity(assignment_type, member_id="m-2", assignment=b""),
        ),
    }
    return _request(ApiKey.SYNC_GROUP, version, **(defaults | values))


@pytest.mark.parametrize(
    ("version", "instance_id", "protocol"),
    [(0, None, None), (1, None, None), (3, "static-1", None), (5, "static-1", "range")],
)
def test_sync_request(version: int, instance_id: str | None, protocol: str | None) -> None:
    group_id, sync = wire.sync_request(version, _sync_request(version))

    assert group_id == "g"
    assert (sync.member_id, sync.generation_id) == ("m-1", 3)
    assert sync.assignments == {"m-1": b"\x01", "m-2": b""}
    assert sync.group_instance_id == instance_id
    assert sync.protocol_name == protocol
    assert sync.protocol_type == (None if protocol is None else "consumer")


def test_follower_sync_request_has_no_assignments() -> None:
    _group_id, sync = wire.sync_request(3, _sync_request(3, assignments=()))
    assert sync.assignments == {}


@pytest.mark.parametrize("version", [0, 3, 4, 5])
def test_sync_response(version: int) -> None:
    answer = SyncAnswer(ErrorCode.none, b"\x00\x01assignment", "consumer", "range")
    response = _on_the_wire(wire.sync_response(version, answer))

    assert response.error_code is ErrorCode.none
    assert response.assignment == b"\x00\x01assignment"
    if version >= 5:
        assert (response.protocol_type, response.protocol_name) == ("consumer", "range")
    else:
        assert not hasattr(response, "protocol_name")


def test_sync_error_response_v5_has_null_protocol() -> None:
    response = _on_the_wire(wire.sync_response(5, SyncAnswer(ErrorCode.rebalance_in_progress)))

    assert response.error_code is ErrorCode.rebalance_in_progress
    assert (response.protocol_type, response.protocol_name, response.assignment) == (
        None,
        None,
        b"",
    )


@pytest.mark.parametrize(("version", "instance_id"), [(0, None), (1, None), (3, "s"), (4, "s")])
def test_heartbeat(version: int, instance_id: str | None) -> None:
    request = _request(
        ApiKey.HEARTBEAT,
        version,
        group_id="g",
        generation_id=3,
        member_id="m-1",
        group_instance_id="s",
    )

    group_id, heartbeat = wire.heartbeat_request(version, request)

    assert group_id == "g"
    assert (heartbeat.member_id, heartbeat.generation_id) == ("m-1", 3)
    assert heartbeat.group_instance_id == instance_id
    response = _on_the_wire(
        wire.heartbeat_response(version, HeartbeatAnswer(ErrorCode.rebalance_in_progress))
    )
    assert response.error_code is ErrorCode.rebalance_in_progress


# --- LeaveGroup ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2])
def test_leave_before_v3_names_one_member(version: int) -> None:
    request = _request(ApiKey.LEAVE_GROUP, version, group_id="g", member_id="m-1")

    group_id, leaving = wire.leave_request(version, request)

    assert group_id == "g"
    assert [(m.member_id, m.group_instance_id) for m in leaving] == [("m-1", None)]


@pytest.mark.parametrize("version", [3, 4, 5])
def test_leave_from_v3_names_a_batch(version: int) -> None:
    member_type = _request_type(ApiKey.LEAVE_GROUP, version, "members")
    request = _request(
        ApiKey.LEAVE_GROUP,
        version,
        group_id="g",
        members=(
            make_entity(member_type, member_id="m-1"),
            make_entity(member_type, member_id="", group_instance_id="static-2"),
        ),
    )

    _group_id, leaving = wire.leave_request(version, request)

    assert [(m.member_id, m.group_instance_id) for m in leaving] == [
        ("m-1", None),
        ("", "static-2"),
    ]


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (LeaveAnswer(ErrorCode.none, (LeftMember("m-1", None, ErrorCode.none),)), ErrorCode.none),
        (
            LeaveAnswer(ErrorCode.none, (LeftMember("m-1", None, ErrorCode.unknown_member_id),)),
            ErrorCode.unknown_member_id,
        ),
        (LeaveAnswer(ErrorCode.not_coordinator), ErrorCode.not_coordinator),
        (
            LeaveAnswer(
                ErrorCode.none,
                (
                    LeftMember("m-1", None, ErrorCode.none),
                    LeftMember("m-2", "s", ErrorCode.fenced_instance_id),
                ),
            ),
            ErrorCode.fenced_instance_id,
        ),
    ],
)
@pytest.mark.parametrize("version", [0, 1, 2])
def test_leave_response_before_v3_has_one_error(
    version: int, answer: LeaveAnswer, error: ErrorCode
) -> None:
    response = _on_the_wire(wire.leave_response(version, answer))

    assert response.error_code is error
    assert not hasattr(response, "members")


@pytest.mark.parametrize("version", [3, 5])
def test_leave_response_from_v3_answers_each_member(version: int) -> None:
    answer = LeaveAnswer(
        ErrorCode.none,
        (
            LeftMember("m-1", None, ErrorCode.none),
            LeftMember("", "static-2", ErrorCode.unknown_member_id),
        ),
    )
    response = _on_the_wire(wire.leave_response(version, answer))

    assert response.error_code is ErrorCode.none
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in response.members] == [
        ("m-1", None, ErrorCode.none),
        ("", "static-2", ErrorCode.unknown_member_id),
    ]


# --- OffsetCommit -------------------------------------------------------------------------------


def _commit_request(version: int, **values: Any) -> Any:
    topic_type = _request_type(ApiKey.OFFSET_COMMIT, version, "topics")
    partition_type = field_entity_type(topic_type, "partitions")
    defaults: dict[str, Any] = {
        "group_id": "g",
        "generation_id_or_member_epoch": 3,
        "member_id": "m-1",
        "group_instance_id": "static-1",
        "topics": (
            make_entity(
                topic_type,
                name="orders",
                partitions=(
                    make_entity(
                        partition_type,
                        partition_index=0,
                        committed_offset=42,
                        committed_leader_epoch=5,
                        committed_metadata="meta",
                    ),
                    make_entity(
                        partition_type,
                        partition_index=1,
                        committed_offset=7,
                        committed_leader_epoch=5,
                        committed_metadata=None,
                    ),
                ),
            ),
        ),
    }
    return _request(ApiKey.OFFSET_COMMIT, version, **(defaults | values))


@pytest.mark.parametrize(
    ("version", "epoch", "instance_id"),
    [
        (2, -1, None),
        (3, -1, None),
        (5, -1, None),
        (6, 5, None),
        (7, 5, "static-1"),
        (9, 5, "static-1"),
    ],
)
def test_offset_commit_request(version: int, epoch: int, instance_id: str | None) -> None:
    commit = wire.offset_commit_request(version, _commit_request(version))

    assert (commit.group_id, commit.generation_id, commit.member_id) == ("g", 3, "m-1")
    assert commit.group_instance_id == instance_id
    assert commit.retention_ms is None
    assert commit.offsets == (
        wire.CommittedOffset("orders", 0, 42, epoch, "meta"),
        # A null metadata is stored as "", as Kafka does.
        wire.CommittedOffset("orders", 1, 7, epoch, ""),
    )


def test_offset_commit_outside_the_group() -> None:
    request = _commit_request(3, generation_id_or_member_epoch=-1, member_id="")
    commit = wire.offset_commit_request(3, request)
    assert (commit.generation_id, commit.member_id) == (-1, "")


@pytest.mark.parametrize("version", [2, 4])
def test_offset_commit_explicit_retention_before_v5(version: int) -> None:
    request = _commit_request(version, retention_time=86_400_000 * MS)
    assert wire.offset_commit_request(version, request).retention_ms == 86_400_000


@pytest.mark.parametrize("version", [2, 3, 6, 8, 9])
def test_offset_commit_response(version: int) -> None:
    errors = {
        "orders": {0: ErrorCode.none, 1: ErrorCode.offset_metadata_too_large},
        "payments": {3: ErrorCode.unknown_topic_or_partition},
    }
    response = _on_the_wire(wire.offset_commit_response(version, errors))

    assert {
        t.name: {p.partition_index: p.error_code for p in t.partitions} for t in response.topics
    } == errors


# --- OffsetFetch --------------------------------------------------------------------------------


def _fetch_topics(version: int, *path: str) -> tuple[Any, ...]:
    topic_type = _request_type(ApiKey.OFFSET_FETCH, version, *path)
    return (
        make_entity(topic_type, name="orders", partition_indexes=(0, 1)),
        make_entity(topic_type, name="payments", partition_indexes=(2,)),
    )


@pytest.mark.parametrize("version", [1, 2, 3, 7])
def test_offset_fetch_listed_partitions(version: int) -> None:
    request = _request(
        ApiKey.OFFSET_FETCH,
        version,
        group_id="g",
        topics=_fetch_topics(version, "topics"),
        require_stable=True,
    )

    fetch = wire.offset_fetch_request(version, request)

    assert fetch.groups == (wire.OffsetFetchGroup("g", {"orders": (0, 1), "payments": (2,)}),)
    assert fetch.require_stable is (version >= 7)


@pytest.mark.parametrize("version", [2, 5, 7])
def test_offset_fetch_null_topics_asks_for_all(version: int) -> None:
    request = _request(ApiKey.OFFSET_FETCH, version, group_id="g", topics=None)
    assert wire.offset_fetch_request(version, request).groups == (wire.OffsetFetchGroup("g", None),)


@pytest.mark.parametrize("version", [8, 9])
def test_offset_fetch_from_v8_asks_for_several_groups(version: int) -> None:
    group_type = _request_type(ApiKey.OFFSET_FETCH, version, "groups")
    request = _request(
        ApiKey.OFFSET_FETCH,
        version,
        groups=(
            make_entity(
                group_type, group_id="a", topics=_fetch_topics(version, "groups", "topics")
            ),
            make_entity(group_type, group_id="b", topics=None),
        ),
        require_stable=True,
    )

    fetch = wire.offset_fetch_request(version, request)

    assert fetch.groups == (
        wire.OffsetFetchGroup("a", {"orders": (0, 1), "payments": (2,)}),
        wire.OffsetFetchGroup("b", None),
    )
    assert fetch.require_stable


_OFFSETS = (
    wire.FetchedOffset("orders", 0, 42, 5, "meta"),
    wire.FetchedOffset("orders", 1),
    wire.FetchedOffset("payments", 2, error=ErrorCode.unstable_offset_commit),
)


def _partitions(topics: Any) -> list[tuple[str, int, int, str | None, ErrorCode]]:
    return [
        (t.name, p.partition_index, p.committed_offset, p.metadata, p.error_code)
        for t in topics
        for p in t.partitions
    ]


@pytest.mark.parametrize("version", [1, 2, 4, 5, 7])
def test_offset_fetch_response_of_one_group(version: int) -> None:
    response = _on_the_wire(
        wire.offset_fetch_response(version, [wire.GroupOffsets("g", ErrorCode.none, _OFFSETS)])
    )

    assert _partitions(response.topics) == [
        ("orders", 0, 42, "meta", ErrorCode.none),
        # Not committed: offset -1 and metadata "", as Kafka answers.
        ("orders", 1, -1, "", ErrorCode.none),
        ("payments", 2, -1, "", ErrorCode.unstable_offset_commit),
    ]
    if version >= 5:
        epochs = [p.committed_leader_epoch for t in response.topics for p in t.partitions]
        assert epochs == [5, -1, -1]
    if version >= 2:
        assert response.error_code is ErrorCode.none


def test_offset_fetch_group_error_v2_is_top_level() -> None:
    asked = (wire.FetchedOffset("orders", 0),)
    response = _on_the_wire(
        wire.offset_fetch_response(
            2, [wire.GroupOffsets("g", ErrorCode.coordinator_load_in_progress, asked)]
        )
    )
    assert response.error_code is ErrorCode.coordinator_load_in_progress
    assert _partitions(response.topics) == [("orders", 0, -1, "", ErrorCode.none)]


def test_offset_fetch_group_error_v1_goes_to_each_partition() -> None:
    asked = (wire.FetchedOffset("orders", 0), wire.FetchedOffset("orders", 1))
    response = _on_the_wire(
        wire.offset_fetch_response(1, [wire.GroupOffsets("g", ErrorCode.not_coordinator, asked)])
    )
    assert not hasattr(response, "error_code")
    assert _partitions(response.topics) == [
        ("orders", 0, -1, "", ErrorCode.not_coordinator),
        ("orders", 1, -1, "", ErrorCode.not_coordinator),
    ]


@pytest.mark.parametrize("version", [8, 9])
def test_offset_fetch_response_from_v8_answers_each_group(version: int) -> None:
    response = _on_the_wire(
        wire.offset_fetch_response(
            version,
            [
                wire.GroupOffsets("a", ErrorCode.none, _OFFSETS),
                wire.GroupOffsets("b", ErrorCode.not_coordinator),
            ],
        )
    )

    a, b = response.groups
    assert (a.group_id, a.error_code) == ("a", ErrorCode.none)
    assert _partitions(a.topics)[0] == ("orders", 0, 42, "meta", ErrorCode.none)
    assert a.topics[0].partitions[0].committed_leader_epoch == 5
    assert (b.group_id, b.error_code, b.topics) == ("b", ErrorCode.not_coordinator, ())


# --- DescribeGroups, ListGroups, DeleteGroups, OffsetDelete -------------------------------------

_STABLE = GroupDescription(
    group_id="g",
    state=GroupState.STABLE,
    protocol_type="consumer",
    protocol="range",
    members=(
        MemberDescription("m-1", "static-1", "rdkafka", "/10.0.0.1", b"\x00sub", b"\x00\xffasg"),
        MemberDescription("m-2", None, "rdkafka", "/10.0.0.2", b"", b""),
    ),
)


@pytest.mark.parametrize("version", [0, 1, 3, 5])
def test_describe_groups(version: int) -> None:
    extra = {"include_authorized_operations": True} if version >= 3 else {}
    request = _request(ApiKey.DESCRIBE_GROUPS, version, groups=("g", "gone"), **extra)
    assert wire.describe_groups_request(version, request) == ["g", "gone"]

    response = _on_the_wire(
        wire.describe_groups_response(
            version, [_STABLE, wire.GroupResult("gone", ErrorCode.not_coordinator)]
        )
    )

    described, failed = response.groups
    assert (described.error_code, described.group_id, described.group_state) == (
        ErrorCode.none,
        "g",
        "Stable",
    )
    assert (described.protocol_type, described.protocol_data) == ("consumer", "range")
    assert [
        (m.member_id, m.client_id, m.client_host, m.member_metadata, m.member_assignment)
        for m in described.members
    ] == [
        ("m-1", "rdkafka", "/10.0.0.1", b"\x00sub", b"\x00\xffasg"),
        ("m-2", "rdkafka", "/10.0.0.2", b"", b""),
    ]
    assert (failed.error_code, failed.group_id, failed.group_state, failed.members) == (
        ErrorCode.not_coordinator,
        "gone",
        "",
        (),
    )
    if version >= 3:
        assert described.authorized_operations == failed.authorized_operations == -(2**31)
    if version >= 4:
        assert [m.group_instance_id for m in described.members] == ["static-1", None]


def test_describe_a_group_that_does_not_exist_is_dead() -> None:
    dead = GroupDescription("nobody", GroupState.DEAD, "", "", ())
    (group,) = _on_the_wire(wire.describe_groups_response(5, [dead])).groups
    assert (group.error_code, group.group_state, group.protocol_type) == (
        ErrorCode.none,
        "Dead",
        "",
    )


def test_list_groups_filters() -> None:
    assert wire.list_groups_filter(0, _request(ApiKey.LIST_GROUPS, 0)) == wire.ListGroupsFilter()
    v4 = wire.list_groups_filter(
        4, _request(ApiKey.LIST_GROUPS, 4, states_filter=("Stable", "empty"))
    )
    assert v4.states == frozenset({"stable", "empty"})
    v5 = wire.list_groups_filter(
        5, _request(ApiKey.LIST_GROUPS, 5, states_filter=(), types_filter=("Consumer",))
    )
    assert v5 == wire.ListGroupsFilter(types=frozenset({"consumer"}))


def test_list_groups_filter_admits() -> None:
    assert wire.ListGroupsFilter().admits(GroupState.PREPARING_REBALANCE)
    stable_or_empty = wire.ListGroupsFilter(states=frozenset({"stable", "empty"}))
    assert stable_or_empty.admits(GroupState.STABLE)
    assert not stable_or_empty.admits(GroupState.COMPLETING_REBALANCE)
    assert wire.ListGroupsFilter(types=frozenset({"classic"})).admits(GroupState.STABLE)
    assert not wire.ListGroupsFilter(types=frozenset({"consumer"})).admits(GroupState.STABLE)


@pytest.mark.parametrize("version", [0, 3, 4, 5])
def test_list_groups_response(version: int) -> None:
    groups = [
        wire.ListedGroup("a", "consumer", GroupState.STABLE),
        wire.ListedGroup("b", "", GroupState.EMPTY),
    ]
    response = _on_the_wire(wire.list_groups_response(version, ErrorCode.none, groups))

    assert response.error_code is ErrorCode.none
    assert [(g.group_id, g.protocol_type) for g in response.groups] == [
        ("a", "consumer"),
        ("b", ""),
    ]
    if version >= 4:
        assert [g.group_state for g in response.groups] == ["Stable", "Empty"]
    if version >= 5:
        assert [g.group_type for g in response.groups] == ["classic", "classic"]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_groups(version: int) -> None:
    request = _request(ApiKey.DELETE_GROUPS, version, groups_names=("a", "b"))
    assert wire.delete_groups_request(version, request) == ["a", "b"]

    response = _on_the_wire(
        wire.delete_groups_response(
            version,
            [
                wire.GroupResult("a", ErrorCode.none),
                wire.GroupResult("b", ErrorCode.non_empty_group),
            ],
        )
    )
    assert [(r.group_id, r.error_code) for r in response.results] == [
        ("a", ErrorCode.none),
        ("b", ErrorCode.non_empty_group),
    ]


def test_offset_delete() -> None:
    topic_type = _request_type(ApiKey.OFFSET_DELETE, 0, "topics")
    partition_type = field_entity_type(topic_type, "partitions")
    request = _request(
        ApiKey.OFFSET_DELETE,
        0,
        group_id="g",
        topics=(
            make_entity(
                topic_type,
                name="orders",
                partitions=tuple(make_entity(partition_type, partition_index=i) for i in (0, 1)),
            ),
        ),
    )
    assert wire.offset_delete_request(0, request) == ("g", {"orders": (0, 1)})

    errors = {"orders": {0: ErrorCode.none, 1: ErrorCode.group_subscribed_to_topic}}
    response = _on_the_wire(wire.offset_delete_response(0, ErrorCode.none, errors))
    assert response.error_code is ErrorCode.none
    assert {
        t.name: {p.partition_index: p.error_code for p in t.partitions} for t in response.topics
    } == errors
    refused = _on_the_wire(wire.offset_delete_response(0, ErrorCode.group_id_not_found, {}))
    assert (refused.error_code, refused.topics) == (ErrorCode.group_id_not_found, ())


# --- every served version encodes ---------------------------------------------------------------


@pytest.mark.parametrize("version", _versions(wire.JOIN_GROUP_VERSIONS))
def test_every_join_version_encodes(version: int) -> None:
    _on_the_wire(wire.join_response(version, _LEADER_ANSWER))
    _on_the_wire(wire.join_error(version, ErrorCode.not_coordinator))
    _group_id, join = wire.join_request(version, _join_request(version), "c", "/h")
    assert join.session_timeout_ms == 10_000


@pytest.mark.parametrize("version", _versions(wire.SYNC_GROUP_VERSIONS))
def test_every_sync_version_encodes(version: int) -> None:
    _on_the_wire(wire.sync_response(version, SyncAnswer(ErrorCode.none, b"a", "consumer", "r")))
    assert wire.sync_request(version, _sync_request(version))[1].generation_id == 3


@pytest.mark.parametrize("version", _versions(wire.HEARTBEAT_VERSIONS))
def test_every_heartbeat_version_encodes(version: int) -> None:
    _on_the_wire(wire.heartbeat_response(version, HeartbeatAnswer(ErrorCode.none)))


@pytest.mark.parametrize("version", _versions(wire.LEAVE_GROUP_VERSIONS))
def test_every_leave_version_encodes(version: int) -> None:
    answer = LeaveAnswer(ErrorCode.none, (LeftMember("m", None, ErrorCode.none),))
    _on_the_wire(wire.leave_response(version, answer))


@pytest.mark.parametrize("version", _versions(wire.FIND_COORDINATOR_VERSIONS))
def test_every_find_coordinator_version_encodes(version: int) -> None:
    coordinator = wire.Coordinator("g", ErrorCode.none, 1, "h", 9092)
    _on_the_wire(wire.find_coordinator_response(version, [coordinator]))


@pytest.mark.parametrize("version", _versions(wire.OFFSET_COMMIT_VERSIONS))
def test_every_offset_commit_version_encodes(version: int) -> None:
    _on_the_wire(wire.offset_commit_response(version, {"t": {0: ErrorCode.none}}))
    assert len(wire.offset_commit_request(version, _commit_request(version)).offsets) == 2


@pytest.mark.parametrize("version", _versions(wire.OFFSET_FETCH_VERSIONS))
def test_every_offset_fetch_version_encodes(version: int) -> None:
    _on_the_wire(
        wire.offset_fetch_response(version, [wire.GroupOffsets("g", ErrorCode.none, _OFFSETS)])
    )


@pytest.mark.parametrize("version", _versions(wire.DESCRIBE_GROUPS_VERSIONS))
def test_every_describe_groups_version_encodes(version: int) -> None:
    _on_the_wire(wire.describe_groups_response(version, [_STABLE]))


@pytest.mark.parametrize("version", _versions(wire.LIST_GROUPS_VERSIONS))
def test_every_list_groups_version_encodes(version: int) -> None:
    listed = wire.ListedGroup("g", "consumer", GroupState.STABLE)
    _on_the_wire(wire.list_groups_response(version, ErrorCode.none, [listed]))
