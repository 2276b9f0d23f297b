"""Kafka error codes from the controller become the HTTP statuses that say the same."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from admin.errors import http_status, kafka_error


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (ErrorCode.unknown_topic_or_partition, 404),
        (ErrorCode.unknown_topic_id, 404),
        (ErrorCode.topic_already_exists, 409),
        (ErrorCode.election_not_needed, 409),
        (ErrorCode.not_controller, 503),
        (ErrorCode.request_timed_out, 503),
        (ErrorCode.invalid_topic_exception, 400),
        (ErrorCode.invalid_config, 400),
        (ErrorCode.invalid_partitions, 400),
        (ErrorCode.invalid_replication_factor, 400),
        (ErrorCode.invalid_request, 400),
    ],
)
def test_status_of_each_kafka_error(code: ErrorCode, status: int) -> None:
    assert http_status(code) == status


def test_the_error_names_the_kafka_code_and_keeps_its_message() -> None:
    error = kafka_error(ErrorCode.topic_already_exists, "Topic 'a' already exists.", "topic 'a'")
    assert (error.status, error.error, error.message) == (
        409,
        "topic_already_exists",
        "Topic 'a' already exists.",
    )
    assert kafka_error(ErrorCode.invalid_config, None, "topic 'a'").message == (
        "invalid_config for topic 'a'"
    )
