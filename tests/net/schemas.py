"""Request and response classes the tests know kio has, and responses read by their top-level
error code."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kio.schema.errors import ErrorCode
from kio.static.protocol import Payload

from net.protocol import request_schema, response_schema


def request_type(api_key: int, version: int) -> type[Payload]:
    """The request class of `api_key` at `version`, which must exist."""
    schema = request_schema(api_key, version)
    assert schema is not None, f"no request schema for API {api_key} v{version}"
    return schema


def response_type(api_key: int, version: int) -> type[Payload]:
    """The response class of `api_key` at `version`, which must exist."""
    schema = response_schema(api_key, version)
    assert schema is not None, f"no response schema for API {api_key} v{version}"
    return schema


@runtime_checkable
class WithErrorCode(Protocol):
    """A response with a top-level error code (isinstance checks that it has one)."""

    error_code: ErrorCode
