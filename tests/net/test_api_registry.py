"""The registry: what may be registered, and ApiVersions answered from its contents."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, PreEncodedResponse, RequestContext
from net.protocol import (
    RequestHeader,
    decode_response,
    encode_body,
    frame_response,
    make_entity,
)
from tests.net.schemas import request_type


async def answer(context: RequestContext, request: Any) -> None:
    return None


def context_for(api_key: int, version: int) -> RequestContext:
    header = RequestHeader(api_key, version, 1, "test", 10)
    return RequestContext(header, "127.0.0.1:1", 1, 0.0, 10)


def api_versions(registry: ApiRegistry, version: int, **request_values: str) -> Any:
    """Call the registry's ApiVersions handler; returns (decoded response, frame to send)."""
    values = {"client_software_name": "test-client", "client_software_version": "1.0.0"}
    request = make_entity(
        request_type(ApiKey.API_VERSIONS, version),
        **{**values, **request_values},
    )
    registration = registry.lookup(18, version)
    assert registration is not None
    # The registry's own ApiVersions handler is a plain function.
    result: Any = registration.handler(context_for(18, version), request)
    body = result.buffers if isinstance(result, PreEncodedResponse) else encode_body(result)
    frame = b"".join(frame_response(1, ApiKey.API_VERSIONS, version, body))
    return decode_response(frame[4:], 18, version), frame


def test_a_fresh_registry_advertises_only_api_versions() -> None:
    registry = ApiRegistry()
    assert registry.advertised() == [(18, 0, 4)]
    assert registry.lookup(3, 12) is None


def test_registered_apis_are_advertised_in_key_order_and_looked_up_by_version() -> None:
    registry = ApiRegistry()
    registry.register(ApiKey.METADATA, answer, min_version=0, max_version=12)
    registry.register(ApiKey.FETCH, answer, min_version=4, max_version=12)
    assert registry.advertised() == [(1, 4, 12), (3, 0, 12), (18, 0, 4)]
    metadata = registry.lookup(3, 12)
    assert metadata is not None
    assert metadata.handler is answer
    assert registry.lookup(3, 13) is None
    assert registry.lookup(1, 3) is None


@pytest.mark.parametrize(
    ("api_key", "options", "message"),
    [
        (18, {"min_version": 0, "max_version": 4}, "already registered"),
        (3, {"min_version": 0, "max_version": 14}, "no schema for versions [14]"),
        (3, {"min_version": 5, "max_version": 2}, "bad version range"),
        (999, {"min_version": 0, "max_version": 0}, "no schema"),
        (0, {"min_version": 0, "max_version": 10}, "no schema for versions [0, 1, 2]"),
        (1, {"min_version": 4, "max_version": 12, "advertised_min_version": 2}, "cannot be"),
        (3, {"min_version": 4, "max_version": 12, "advertised_min_version": 0}, "cannot be"),
        (3, {"min_version": 4, "max_version": 12, "advertised_min_version": 5}, "must lie"),
    ],
)
def test_registrations_that_could_advertise_what_has_no_handler_are_refused(
    api_key: int, options: dict[str, int], message: str
) -> None:
    registry = ApiRegistry()
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        registry.register(api_key, answer, **options)


def test_produce_may_advertise_from_v0_while_serving_from_v3() -> None:
    registry = ApiRegistry()
    registry.register(
        ApiKey.PRODUCE, answer, min_version=3, max_version=10, advertised_min_version=0
    )
    assert (0, 0, 10) in registry.advertised()
    assert registry.lookup(0, 2) is None
    assert registry.lookup(0, 3) is not None


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_lists_the_registry_and_nothing_else(version: int) -> None:
    registry = ApiRegistry()
    registry.register(
        ApiKey.PRODUCE, answer, min_version=3, max_version=10, advertised_min_version=0
    )
    registry.register(ApiKey.METADATA, answer, min_version=0, max_version=12)
    response, _frame = api_versions(registry, version)
    assert response.error_code == ErrorCode.none
    listed = [(k.api_key, k.min_version, k.max_version) for k in response.api_keys]
    assert listed == [(0, 0, 10), (3, 0, 12), (18, 0, 4)]
    # No telemetry: librdkafka starts pushing metrics to brokers advertising these.
    assert not {71, 72} & {k.api_key for k in response.api_keys}


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_v3_plus_carries_no_top_level_tagged_fields(version: int) -> None:
    """librdkafka 2.0.2 (Debian's kcat) misreads them; see machine-baselines.md."""
    registry = ApiRegistry()
    _response, frame = api_versions(registry, version)
    # size, correlation id (header v0: no tag byte), error code, compact array of 1 entry
    # (key 18, 0..4, no tags), throttle time 0, then a tag count of 0 and nothing more.
    assert frame == struct.pack(">iih", 19, 1, 0) + b"\x02" + struct.pack(">hhh", 18, 0, 4) + (
        b"\x00" + b"\x00\x00\x00\x00" + b"\x00"
    )


def test_api_versions_response_follows_later_registrations() -> None:
    registry = ApiRegistry()
    before, _ = api_versions(registry, 3)
    registry.register(ApiKey.METADATA, answer, min_version=0, max_version=12)
    after, _ = api_versions(registry, 3)
    assert len(before.api_keys) == 1
    assert len(after.api_keys) == 2


def test_api_versions_v3_with_an_invalid_software_name_is_an_invalid_request() -> None:
    registry = ApiRegistry()
    response, _ = api_versions(registry, 3, client_software_name="-bad name-")
    assert response.error_code == ErrorCode.invalid_request
    assert response.api_keys == ()


def test_api_versions_refusal_is_v0_with_its_own_range() -> None:
    registry = ApiRegistry()
    registry.register(ApiKey.METADATA, answer, min_version=0, max_version=12)
    frame = b"".join(registry.api_versions_refusal(9))
    assert frame == struct.pack(">iihihhh", 16, 9, 35, 1, 18, 0, 4)
