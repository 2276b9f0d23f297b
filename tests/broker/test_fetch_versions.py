"""The Fetch and ListOffsets fields the data APIs read by version (their kio classes are not
imported at start) are exactly the fields kio's class of each served version has, and the
Fetch answers they write read back as kio decodes them."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any
from uuid import UUID

import pytest
from kio.schema.errors import ErrorCode

from broker import data_apis
from broker.data_apis import (
    FETCH_VERSIONS,
    LIST_OFFSETS_VERSIONS,
    _has_no_session,
    _has_rack_id,
    _has_replica_state,
    _has_topic_ids,
)
from broker.fetch_sessions import RequestedPartition
from broker.replica_manager import FetchResult
from net.api_keys import ApiKey
from net.protocol import decode_response, field_entity_type, frame_response, request_schema

FETCHES = range(FETCH_VERSIONS[0], FETCH_VERSIONS[1] + 1)


def _request(api_key: ApiKey, version: int) -> type:
    schema = request_schema(api_key, version)
    assert schema is not None
    return schema


def _fields(cls: type) -> set[str]:
    return {field.name for field in dataclasses.fields(cls)}


@pytest.mark.parametrize("version", FETCHES)
def test_the_fetch_request_guards_name_the_versions_with_the_field(version: int) -> None:
    request = _request(ApiKey.FETCH, version)
    fields = _fields(request)
    assert _has_replica_state(None, version) == ("replica_state" in fields)  # type: ignore[arg-type]
    assert _has_no_session(None, version) == ("session_id" not in fields)  # type: ignore[arg-type]
    assert _has_rack_id(None, version) == ("rack_id" in fields)  # type: ignore[arg-type]
    topic_fields = _fields(field_entity_type(request, "topics"))
    assert _has_topic_ids(None, version) == ("topic_id" in topic_fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", FETCHES)
def test_the_fetch_partition_fields_start_at_the_versions_named(version: int) -> None:
    partition = field_entity_type(
        field_entity_type(_request(ApiKey.FETCH, version), "topics"), "partitions"
    )
    fields = _fields(partition)
    assert (version >= data_apis._FETCH_LOG_START_OFFSET) == ("log_start_offset" in fields)
    assert (version >= data_apis._FETCH_CURRENT_LEADER_EPOCH) == ("current_leader_epoch" in fields)
    assert (version >= data_apis._FETCH_LAST_FETCHED_EPOCH) == ("last_fetched_epoch" in fields)


@pytest.mark.parametrize("version", range(LIST_OFFSETS_VERSIONS[0], LIST_OFFSETS_VERSIONS[1] + 1))
def test_the_list_offsets_leader_epoch_starts_at_the_version_named(version: int) -> None:
    partition = field_entity_type(
        field_entity_type(_request(ApiKey.LIST_OFFSETS, version), "topics"), "partitions"
    )
    assert (version >= data_apis._LIST_OFFSETS_CURRENT_LEADER_EPOCH) == (
        "current_leader_epoch" in _fields(partition)
    )


def test_the_data_apis_import_no_fetch_or_list_offsets_class_but_the_followers() -> None:
    # A fresh interpreter: this test process may have imported them already.
    imported = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, broker.data_apis; print(' '.join(sorted(m for m in sys.modules if "
            "m.startswith(('kio.schema.fetch.v', 'kio.schema.list_offsets.v')))))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    # Fetch v12 is the replica fetcher's own request.
    assert {name.split(".")[3] for name in imported} <= {"v12"}


@pytest.mark.parametrize("version", FETCHES)
def test_a_fetch_answer_reads_back_as_kio_decodes_it(version: int) -> None:
    topic_id = UUID(int=7)
    asked = RequestedPartition(("t", 3), "t", topic_id, None)
    answered = [
        (asked, FetchResult(ErrorCode.none, 10, 2, b"r" * 5000, leader=(1, 4))),
        (asked, FetchResult(ErrorCode.none, 10, 2, None, diverging_epoch=(3, 8), leader=(-1, 4))),
    ]
    body = data_apis._fetch_response(version, answered, session_id=9)
    frame = b"".join(frame_response(1, ApiKey.FETCH, version, body))
    decoded: Any = decode_response(frame[4:], ApiKey.FETCH, version)
    (topic,) = decoded.responses
    assert topic.topic_id == topic_id if version >= 13 else topic.topic == "t"
    with_records, diverging = topic.partitions
    assert (with_records.partition_index, with_records.high_watermark) == (3, 10)
    assert with_records.last_stable_offset == 10
    assert with_records.records == b"r" * 5000
    # Kafka sends empty records, never null (librdkafka refuses a null record set).
    assert diverging.records == b""
    if version >= 12:
        assert (
            with_records.current_leader.leader_id,
            with_records.current_leader.leader_epoch,
        ) == (1, 4)
        assert (diverging.diverging_epoch.epoch, diverging.diverging_epoch.end_offset) == (3, 8)
        # No leader now: not told, whatever its epoch.
        assert diverging.current_leader.leader_id == -1
        assert diverging.current_leader.leader_epoch == -1
    if version >= 7:
        assert decoded.session_id == 9
