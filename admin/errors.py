"""How failures become HTTP answers: `ApiError` carries status, code and message; Kafka error
codes from the controller map to the HTTP status that says the same."""

from __future__ import annotations

from kio.schema.errors import ErrorCode


class ApiError(Exception):
    """An error answer: HTTP `status`, a snake_case `error` code and a `message` for people."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message


# Kafka errors that mean the request itself is wrong (400) unless listed elsewhere.
_NOT_FOUND = frozenset(
    {ErrorCode.unknown_topic_or_partition, ErrorCode.unknown_topic_id, ErrorCode.resource_not_found}
)
_CONFLICT = frozenset({ErrorCode.topic_already_exists})
_UNAVAILABLE = frozenset(
    {
        ErrorCode.not_controller,
        ErrorCode.request_timed_out,
        ErrorCode.broker_not_available,
        ErrorCode.leader_not_available,
        ErrorCode.not_leader_or_follower,
        ErrorCode.preferred_leader_not_available,
        ErrorCode.eligible_leaders_not_available,
        ErrorCode.unknown_server_error,
    }
)
# Refusals because of the cluster's current state rather than the request's shape.
_STATE_CONFLICT = frozenset({ErrorCode.election_not_needed, ErrorCode.ineligible_replica})


def http_status(code: ErrorCode) -> int:
    """The HTTP status of a Kafka error code from a forwarded request."""
    if code in _NOT_FOUND:
        return 404
    if code in _CONFLICT or code in _STATE_CONFLICT:
        return 409
    if code in _UNAVAILABLE:
        return 503
    return 400


def kafka_error(code: ErrorCode, message: str | None, subject: str) -> ApiError:
    """The `ApiError` of a Kafka error about `subject` (a topic, a partition)."""
    return ApiError(http_status(code), code.name, message or f"{code.name} for {subject}")
