"""The fast ProduceResponse encoder writes kio's bytes for every served version."""

from __future__ import annotations

import datetime
import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from net import messages
from net.produce_response import PartitionProduced, encode_produce_response
from net.protocol import field_entity_type, make_entity

_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT64 = st.integers(-(2**63), 2**63 - 1)
_TEXT = st.text(max_size=12)

partitions = st.builds(
    PartitionProduced,
    index=_INT32,
    error_code=st.sampled_from([code.value for code in ErrorCode]),
    base_offset=_INT64,
    # kio holds the append time as an aware datetime of whole milliseconds (or None for -1).
    log_append_time_ms=st.just(-1) | st.integers(0, 2**44),
    log_start_offset=_INT64,
    record_errors=st.lists(st.tuples(_INT32, st.none() | _TEXT), max_size=3).map(tuple),
    error_message=st.none() | _TEXT,
)
responses = st.lists(st.tuples(_TEXT, st.lists(partitions, max_size=3)), max_size=3)


def kio_encoding(
    version: int, answer: list[tuple[str, list[PartitionProduced]]], throttle_ms: int
) -> bytes:
    schema = messages.PRODUCE_RESPONSES[version]
    topic_type = field_entity_type(schema, "responses")
    partition_type = field_entity_type(topic_type, "partition_responses")
    error_type: Any = field_entity_type(partition_type, "record_errors") if version >= 8 else None
    entity = make_entity(
        schema,
        responses=tuple(
            make_entity(
                topic_type,
                name=name,
                partition_responses=tuple(
                    make_entity(
                        partition_type,
                        index=p.index,
                        error_code=ErrorCode(p.error_code),
                        base_offset=p.base_offset,
                        log_append_time=None
                        if p.log_append_time_ms == -1
                        else datetime.datetime.fromtimestamp(
                            p.log_append_time_ms / 1000, datetime.UTC
                        ),
                        log_start_offset=p.log_start_offset,
                        record_errors=()
                        if error_type is None
                        else tuple(
                            make_entity(
                                error_type, batch_index=index, batch_index_error_message=message
                            )
                            for index, message in p.record_errors
                        ),
                        error_message=p.error_message,
                    )
                    for p in produced
                ),
            )
            for name, produced in answer
        ),
        throttle_time=datetime.timedelta(milliseconds=throttle_ms),
    )
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


@pytest.mark.parametrize("version", sorted(messages.PRODUCE_RESPONSES))
def test_encoder_matches_kio_byte_for_byte(version: int) -> None:
    @settings(max_examples=60, deadline=None)
    @given(answer=responses, throttle_ms=st.integers(0, 2**31 - 1))
    def same_bytes(answer: list[tuple[str, list[PartitionProduced]]], throttle_ms: int) -> None:
        assert encode_produce_response(version, answer, throttle_ms) == kio_encoding(
            version, answer, throttle_ms
        )

    same_bytes()


def test_versions_it_does_not_serve_are_refused() -> None:
    with pytest.raises(ValueError, match="v2"):
        encode_produce_response(2, [])
    with pytest.raises(ValueError, match="v11"):
        encode_produce_response(11, [])
