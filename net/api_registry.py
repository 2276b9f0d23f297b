"""Which API versions this node serves, the handlers that serve them, and ApiVersions itself.

broker/ and controller/ register one handler per API key with the version range it serves: an
async function, or a plain function for APIs answered without waiting (whose result the server
then uses at once, saving a task per request).
ApiVersions is answered from this registry, so a node never advertises an API or a version
that has no handler. A registration may advertise versions below the ones it serves (Produce
from v0 while serving v3+, KAFKA-18659); a request for one of those gets that API's
UNSUPPORTED_VERSION response from the server, never a dropped connection.
"""

import datetime
import re
import typing
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16
from kio.static.protocol import Payload

from net.api_keys import ApiKey
from net.buffer_gatherer import Buffer
from net.principal import ANONYMOUS, KafkaPrincipal
from net.protocol import (
    RequestHeader,
    api_versions_error_frame,
    can_refuse_version,
    encode_body,
    response_schema,
    schema_versions,
)


class RequestContext(NamedTuple):
    """What a handler knows about a request besides its body."""

    header: RequestHeader
    # "host:port" of the client.
    peer: str
    # Unique in the process, over every listener; distinguishes connections from one peer.
    connection_id: int
    # Event-loop time (`loop.time()`) when the request's last byte arrived; deadlines such as
    # Produce's timeout or Fetch's max wait count from here.
    received_at: float
    # Size of the request frame, size prefix excluded.
    request_bytes: int
    # Who sent it, as the connection's authentication established it.
    principal: KafkaPrincipal = ANONYMOUS
    # The name of the listener the connection came in on (Kafka's default name: PLAINTEXT).
    listener: str = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class PreEncodedResponse:
    """A response body a handler encoded itself: no size prefix, no header.

    The server frames it and writes `buffers` with `transport.writelines`, so record bytes
    (slices of segment files) reach the socket without being copied into one buffer. The
    body must be the response of the request's own API version.
    """

    buffers: Sequence[Buffer]


HandlerResult: TypeAlias = Payload | PreEncodedResponse | None
"""A kio response of the request's version, a pre-encoded body, or None for no response at all
(Produce with acks=0)."""

# The request parameter is the kio request class of the API, whose exact type varies by
# registration; a handler annotates its own.
Handler: TypeAlias = Callable[[RequestContext, Any], Awaitable[HandlerResult] | HandlerResult]


@dataclass(frozen=True, slots=True)
class ApiRegistration:
    """One API key: the versions its handler serves and the (possibly wider) advertised range."""

    api_key: int
    min_version: int
    max_version: int
    advertised_min_version: int
    handler: Handler

    def serves(self, api_version: int) -> bool:
        return self.min_version <= api_version <= self.max_version


# Kafka's rule for ApiVersions v3+ ClientSoftwareName/Version (KIP-511).
_SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


class ApiRegistry:
    """API key -> (served version range, handler); answers ApiVersions from its contents."""

    def __init__(self) -> None:
        versions = schema_versions(ApiKey.API_VERSIONS)
        self._registrations: dict[int, ApiRegistration] = {
            ApiKey.API_VERSIONS: ApiRegistration(
                api_key=ApiKey.API_VERSIONS,
                min_version=versions[0],
                max_version=versions[-1],
                advertised_min_version=versions[0],
                handler=self._handle_api_versions,
            )
        }
        self._api_versions_bodies: dict[int, list[Buffer]] = {}

    def register(
        self,
        api_key: int,
        handler: Handler,
        *,
        min_version: int,
        max_version: int,
        advertised_min_version: int | None = None,
    ) -> None:
        """Serve versions `min_version`..`max_version` of `api_key` with `handler`.

        `handler(context, request)` returns a HandlerResult or an awaitable of one (an async
        function); a plain function must not block, as it runs on the event loop between reads
        of the connection.

        `advertised_min_version` (default `min_version`) may be lower: ApiVersions then
        advertises from there, and requests for the versions below `min_version` are refused
        with UNSUPPORTED_VERSION. Raises ValueError for an API key registered twice
        (ApiVersions included: the registry serves it), a version without a kio schema, or an
        advertised version that no response can refuse.
        """
        if api_key in self._registrations:
            raise ValueError(f"api key {api_key} is already registered")
        if not 0 <= min_version <= max_version:
            raise ValueError(f"bad version range {min_version}..{max_version}")
        known = set(schema_versions(api_key))
        missing = [v for v in range(min_version, max_version + 1) if v not in known]
        if missing:
            raise ValueError(f"api key {api_key} has no schema for versions {missing}")
        advertised_min = min_version if advertised_min_version is None else advertised_min_version
        if not 0 <= advertised_min <= min_version:
            raise ValueError(
                f"advertised min version {advertised_min} must lie in 0..{min_version}"
            )
        unrefusable = [
            v for v in range(advertised_min, min_version) if not can_refuse_version(api_key, v)
        ]
        if unrefusable:
            raise ValueError(
                f"api key {api_key} versions {unrefusable} cannot be advertised: no response "
                "can refuse them"
            )
        self._registrations[api_key] = ApiRegistration(
            api_key=api_key,
            min_version=min_version,
            max_version=max_version,
            advertised_min_version=advertised_min,
            handler=handler,
        )
        self._api_versions_bodies.clear()

    def lookup(self, api_key: int, api_version: int) -> ApiRegistration | None:
        """The registration serving `api_key` at `api_version`, or None if nothing serves it."""
        registration = self._registrations.get(api_key)
        if registration is None or not registration.serves(api_version):
            return None
        return registration

    def advertised(self) -> list[tuple[int, int, int]]:
        """(api key, min version, max version) as ApiVersions advertises them, by api key."""
        return [
            (r.api_key, r.advertised_min_version, r.max_version)
            for r in sorted(self._registrations.values(), key=lambda r: r.api_key)
        ]

    def api_versions_refusal(self, correlation_id: int) -> list[Buffer]:
        """The frame answering an ApiVersions request of a version this node does not know.

        As Kafka does: a v0 body with UNSUPPORTED_VERSION listing only ApiVersions' own range,
        from which the client picks the version to retry with.
        """
        own = self._registrations[ApiKey.API_VERSIONS]
        return api_versions_error_frame(
            correlation_id,
            ErrorCode.unsupported_version,
            [(ApiKey.API_VERSIONS, own.advertised_min_version, own.max_version)],
        )

    def _handle_api_versions(
        self, context: RequestContext, request: Payload
    ) -> PreEncodedResponse | Payload:
        version = context.header.api_version
        if version >= 3 and not (
            _SOFTWARE_PATTERN.fullmatch(getattr(request, "client_software_name", ""))
            and _SOFTWARE_PATTERN.fullmatch(getattr(request, "client_software_version", ""))
        ):
            return self._api_versions_response(version, ErrorCode.invalid_request, ())
        body = self._api_versions_bodies.get(version)
        if body is None:
            body = encode_body(
                self._api_versions_response(version, ErrorCode.none, self.advertised())
            )
            self._api_versions_bodies[version] = body
        return PreEncodedResponse(body)

    @staticmethod
    def _api_versions_response(
        version: int, error_code: ErrorCode, ranges: Sequence[tuple[int, int, int]]
    ) -> Payload:
        schema: Any = response_schema(ApiKey.API_VERSIONS, version)
        (api_version_entity, _) = typing.get_args(schema.__dataclass_fields__["api_keys"].type)
        api_keys = tuple(
            api_version_entity(api_key=i16(api_key), min_version=i16(low), max_version=i16(high))
            for api_key, low, high in ranges
        )
        values: dict[str, object] = {"error_code": error_code, "api_keys": api_keys}
        if "throttle_time" in schema.__dataclass_fields__:
            values["throttle_time"] = datetime.timedelta(0)
        # The v3+ tagged fields (supported/finalized features, their epoch, ZK migration) keep
        # their defaults, which kio leaves out: librdkafka 2.0.2 misreads any top-level tagged
        # field of this response (see shared/notes/machine-baselines.md).
        response: Payload = schema(**values)
        return response
