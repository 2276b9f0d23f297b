"""Kafka's Envelope: a forwarded request with its client's principal and address, sealed and
opened again, and what a malformed one is refused for."""

from __future__ import annotations

import dataclasses
import datetime
import uuid

import pytest
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.create_topics.v7.response import CreatableTopicResult, CreateTopicsResponse
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from net.envelope import (
    EnvelopeError,
    deserialize_principal,
    envelope_error,
    open_envelope,
    seal,
    sealed_response,
    serialize_principal,
    unseal_response,
)
from net.principal import KafkaPrincipal

ALICE = KafkaPrincipal.user("alice")
REQUEST = CreateTopicsRequest(
    topics=(
        CreatableTopic(
            name=TopicName("orders"),
            num_partitions=i32(3),
            replication_factor=i16(2),
            assignments=(),
            configs=(),
        ),
    ),
    timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
    validate_only=False,
)


def test_a_sealed_request_opens_with_its_principal_and_address() -> None:
    for host, peer in (("10.1.2.3", "10.1.2.3:0"), ("fd00::7", "[fd00::7]:0")):
        opened = open_envelope(seal(REQUEST, "rdkafka", ALICE, host))
        assert opened.request == REQUEST
        assert (opened.header.api_key, opened.header.api_version) == (19, 7)
        assert opened.header.client_id == "rdkafka"
        assert opened.principal == ALICE
        assert (opened.host, opened.peer) == (host, peer)


def test_the_principal_is_kafkas_version_prefixed_default_principal_data() -> None:
    # int16 version 0, compact strings "User" and "alice", token_authenticated false, no tags.
    assert serialize_principal(ALICE) == b"\x00\x00\x05User\x06alice\x00\x00"
    assert deserialize_principal(serialize_principal(ALICE)) == ALICE
    with pytest.raises(EnvelopeError):
        deserialize_principal(b"\x00\x01\x05User\x06alice\x00\x00")


def test_the_response_travels_back_and_refusals_carry_no_response() -> None:
    opened = open_envelope(seal(REQUEST, None, ALICE, "127.0.0.1"))
    response = CreateTopicsResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        topics=(
            CreatableTopicResult(
                name=TopicName("orders"),
                topic_id=uuid.UUID(int=7),
                error_code=ErrorCode.topic_authorization_failed,
                error_message=None,
                topic_config_error_code=i16(0),
                num_partitions=i32(-1),
                replication_factor=i16(-1),
                configs=None,
            ),
        ),
    )
    assert unseal_response(sealed_response(opened.header, response), REQUEST) == response
    refused = envelope_error(ErrorCode.cluster_authorization_failed)
    with pytest.raises(EnvelopeError, match="cluster_authorization_failed"):
        unseal_response(refused, REQUEST)


def test_an_envelope_without_a_principal_a_request_or_an_address_is_refused() -> None:
    sealed = seal(REQUEST, None, ALICE, "127.0.0.1")
    for broken in (
        dataclasses.replace(sealed, request_principal=None),
        dataclasses.replace(sealed, request_data=b"\x00"),
        dataclasses.replace(sealed, client_host_address=b"\x7f\x00"),
    ):
        with pytest.raises(EnvelopeError):
            open_envelope(broken)
