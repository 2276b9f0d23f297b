"""Kafka request/response framing and the message codec (kio's generated schemas underneath).

A frame on the wire is a big-endian int32 size followed by that many bytes: a header, then the
message body. Which header a message carries follows its API version's flexibility:

* request header v1 (api key, version, correlation id, nullable client id) for non-flexible
  versions, v2 (v1 plus tagged fields) for flexible ones. Header v0 (no client id) belonged only to
  ControlledShutdown v0, which no supported API version uses;
* response header v0 (correlation id) for non-flexible versions, v1 (plus tagged fields) for
  flexible ones, except ApiVersions, whose response header is always v0 so a client can read it
  before it knows which versions the server speaks.

Bodies are encoded and decoded by kio. The two headers are read and written here with `struct`
because they are a few fixed fields on every request, where kio's pure-Python writer would cost
about 10 µs each. Bodies with a `records` field are encoded into a list of buffers that holds the
record bytes by reference (see `encode_body`), so neither a Produce request nor a Fetch response
copies its records; FetchResponse bodies go through the specialised encoder of
`net.fetch_response`, as kio's costs ~20 µs per partition.

Note: kio's reader rejects tagged fields it does not know (KIP-482 says to skip them);
request headers are parsed here and skip them, bodies are as strict as kio.
"""

import dataclasses
import datetime
import functools
import io
import struct
import types
import typing
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple, TypeVar

from kio.index import UnknownAPIKey, UnknownEntity, load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_unsigned_varint
from kio.static.constants import EntityType
from kio.static.primitive import TZAware, TZAwareMicros, f64, i32Timedelta, i64Timedelta
from kio.static.protocol import Payload

from net import legacy_produce, manual_recovery, replica_log_info
from net.api_keys import ApiKey
from net.buffer_gatherer import Buffer, BufferGatherer
from net.fetch_request import VERSION as FETCH_REQUEST_VERSION
from net.fetch_request import encode_fetch_request
from net.fetch_response import encode_fetch_response

_Entity = TypeVar("_Entity")

SIZE_PREFIX = 4
# api key, api version and correlation id: the part every request header version shares.
REQUEST_HEADER_FIXED_SIZE = 8

_SIZE = struct.Struct(">i")
_REQUEST_FIXED = struct.Struct(">hhi")
_REQUEST_FIXED_AND_CLIENT_ID = struct.Struct(">hhih")
_INT16 = struct.Struct(">h")
# Bodies smaller than this are joined with their header into one buffer; larger ones stay apart
# so they are not copied.
_JOIN_LIMIT = 64 * 1024
_NO_TAGGED_FIELDS = b"\x00"


# The throttle time of every response: this node never throttles.
NO_THROTTLE = datetime.timedelta(0)


class ProtocolError(ValueError):
    """Bytes that do not form a valid Kafka message."""


class InvalidRequestError(ProtocolError):
    """A request frame that cannot be parsed; Kafka closes the connection on these."""


class InvalidResponseError(ProtocolError):
    """A response frame that cannot be parsed as the response to the request it answers."""


class UnknownApiError(ProtocolError):
    """A request for an API key, or a version of it, that no schema describes."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"no schema for api key {api_key} version {api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class RequestHeader(NamedTuple):
    """A decoded request header; `size` is its length in bytes, where the body starts."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    size: int


# Messages kio lacks, declared in kio's form: api key -> (versions, request, response).
_OWN_SCHEMAS: dict[int, tuple[range, type[Payload], type[Payload]]] = {
    ApiKey.GET_REPLICA_LOG_INFO: (
        replica_log_info.VERSIONS,
        replica_log_info.GetReplicaLogInfoRequest,
        replica_log_info.GetReplicaLogInfoResponse,
    ),
    ApiKey.ELECT_RECOVERED_LEADER: (
        manual_recovery.VERSIONS,
        manual_recovery.ElectRecoveredLeaderRequest,
        manual_recovery.ElectRecoveredLeaderResponse,
    ),
}


@functools.cache
def request_schema(api_key: int, api_version: int) -> type[Payload] | None:
    """The request body class of `api_key` at `api_version`, or None if no schema exists."""
    if api_key == ApiKey.PRODUCE and api_version in legacy_produce.LEGACY_VERSIONS:
        return legacy_produce.REQUEST_SCHEMAS[api_version]
    if api_key in _OWN_SCHEMAS:
        versions, request, _ = _OWN_SCHEMAS[api_key]
        return request if api_version in versions else None
    try:
        schema: type[Payload] = load_request_schema(api_key, api_version)
    except (UnknownAPIKey, UnknownEntity):
        return None
    return schema


@functools.cache
def response_schema(api_key: int, api_version: int) -> type[Payload] | None:
    """The response body class of `api_key` at `api_version`, or None if no schema exists."""
    if api_key == ApiKey.PRODUCE and api_version in legacy_produce.LEGACY_VERSIONS:
        return legacy_produce.RESPONSE_SCHEMAS[api_version]
    if api_key in _OWN_SCHEMAS:
        versions, _, response = _OWN_SCHEMAS[api_key]
        return response if api_version in versions else None
    try:
        schema: type[Payload] = load_response_schema(api_key, api_version)
    except (UnknownAPIKey, UnknownEntity):
        return None
    return schema


@functools.cache
def schema_versions(api_key: int) -> tuple[int, ...]:
    """Every version of `api_key` with both a request and a response schema, ascending.

    Read from kio's index, which imports no schema: registering the APIs a node serves must
    not import every version of every message (about a second of CPU at each start); a
    version's classes are imported when a request of it is first decoded. Produce v0-2 are
    left out: their schemas exist only to refuse them.
    """
    if api_key in _OWN_SCHEMAS:
        return tuple(_OWN_SCHEMAS[api_key][0])
    name = api_key_map.get(api_key)
    if name is None:
        return ()
    return tuple(
        version
        for version, entities in sorted(schema_name_map[name].items())
        if EntityType.request in entities and EntityType.response in entities
    )


@functools.cache
def _request_header_version(api_key: int, api_version: int) -> int | None:
    schema = request_schema(api_key, api_version)
    if schema is not None:
        return 2 if schema.__flexible__ else 1
    # A client sends the newest ApiVersions it knows and the server must still answer it, so
    # versions newer than any schema get the header of the newest ones (flexible since v3).
    if api_key == ApiKey.API_VERSIONS and api_version > max(schema_versions(ApiKey.API_VERSIONS)):
        return 2
    return None


def response_header_version(api_key: int, api_version: int) -> int:
    """Response header version for a response of `api_key` at `api_version` (0 or 1)."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    schema = response_schema(api_key, api_version)
    return 1 if schema is not None and schema.__flexible__ else 0


def _skip_tagged_fields(frame: Buffer, offset: int) -> int:
    count, size = read_unsigned_varint(frame, offset)
    offset += size
    for _ in range(count):
        _tag, size = read_unsigned_varint(frame, offset)
        offset += size
        length, size = read_unsigned_varint(frame, offset)
        offset += size + length
    if offset > len(frame):
        raise InvalidRequestError("tagged fields run past the end of the frame")
    return offset


def read_request_header(frame: Buffer) -> RequestHeader:
    """Decode the header of a request frame (the bytes after the size prefix).

    Raises InvalidRequestError for a truncated or malformed header, and UnknownApiError when no
    schema knows the API key and version (its `correlation_id` is still set).
    """
    if len(frame) < REQUEST_HEADER_FIXED_SIZE + 2:
        if len(frame) >= REQUEST_HEADER_FIXED_SIZE:
            api_key, api_version, correlation_id = _REQUEST_FIXED.unpack_from(frame, 0)
            if _request_header_version(api_key, api_version) is None:
                raise UnknownApiError(api_key, api_version, correlation_id)
        raise InvalidRequestError(f"request of {len(frame)} bytes is shorter than its header")
    api_key, api_version, correlation_id, length = _REQUEST_FIXED_AND_CLIENT_ID.unpack_from(
        frame, 0
    )
    header_version = _request_header_version(api_key, api_version)
    if header_version is None:
        raise UnknownApiError(api_key, api_version, correlation_id)
    offset = REQUEST_HEADER_FIXED_SIZE + 2
    client_id: str | None = None
    if length >= 0:
        end = offset + length
        if end > len(frame):
            raise InvalidRequestError("client id runs past the end of the frame")
        try:
            client_id = str(frame[offset:end], "utf-8")
        except UnicodeDecodeError as error:
            raise InvalidRequestError("client id is not UTF-8") from error
        offset = end
    elif length != -1:
        raise InvalidRequestError(f"negative client id length {length}")
    if header_version == 2:
        if offset < len(frame) and frame[offset] == 0:
            offset += 1  # no tagged fields, the usual case
        else:
            try:
                offset = _skip_tagged_fields(frame, offset)
            except ProtocolError:
                raise
            except Exception as error:
                raise InvalidRequestError(f"malformed header tagged fields: {error}") from error
    return RequestHeader(api_key, api_version, correlation_id, client_id, offset)


def decode_request_body(header: RequestHeader, frame: Buffer) -> Payload:
    """Decode the body of a request frame whose header is `header`.

    Raises UnknownApiError when no schema exists and InvalidRequestError when the bytes do not
    decode. Bytes after the body are ignored, as Kafka does.
    """
    schema = request_schema(header.api_key, header.api_version)
    if schema is None:
        raise UnknownApiError(header.api_key, header.api_version, header.correlation_id)
    try:
        body, _size = entity_reader(schema)(frame, header.size)
    except Exception as error:
        # kio raises its own SerialError, but also KeyError (unknown tag), ValueError (unknown
        # error code, out-of-range time) and others for hostile bytes: all mean a bad request.
        raise InvalidRequestError(
            f"cannot decode api key {header.api_key} v{header.api_version}: "
            f"{type(error).__name__}: {error}"
        ) from error
    return body


def decode_request(frame: Buffer) -> tuple[RequestHeader, Payload]:
    """Decode a whole request frame (without its size prefix) into header and kio body."""
    header = read_request_header(frame)
    return header, decode_request_body(header, frame)


@functools.cache
def _has_records(entity_type: type) -> bool:
    """Whether `entity_type` or any entity nested in it has a `records` field."""
    for entity_field in dataclasses.fields(entity_type):
        if entity_field.metadata.get("kafka_type") == "records":
            return True
        if any(_has_records(nested) for nested in _nested_entities(entity_field.type)):
            return True
    return False


def _nested_entities(field_type: Any) -> list[type]:
    if dataclasses.is_dataclass(field_type) and isinstance(field_type, type):
        return [field_type]
    return [entity for arg in typing.get_args(field_type) for entity in _nested_entities(arg)]


def encode_body(entity: Payload) -> list[Buffer]:
    """Encode a kio message body; the result's concatenation is the body's wire form.

    Messages with records (Produce requests, Fetch responses) come back as several buffers, the
    record values among them as the very objects the message holds (bytes, memoryview of a
    segment...), so they can be written with `transport.writelines` without a copy. Others come
    back as a single bytes object.
    """
    if int(entity.__api_key__) == ApiKey.FETCH:
        if entity.__type__ is EntityType.response:
            return encode_fetch_response(entity)
        if entity.__version__ == FETCH_REQUEST_VERSION:
            return [encode_fetch_request(entity)]
    writer = entity_writer(type(entity))
    if _has_records(type(entity)):
        gatherer = BufferGatherer()
        writer(gatherer, entity)  # type: ignore[arg-type]
        return gatherer.buffers()
    with io.BytesIO() as buffer:
        writer(buffer, entity)
        return [buffer.getvalue()]


def _frame(header: bytes, body: Sequence[Buffer]) -> list[Buffer]:
    size = len(header) + sum(len(buffer) for buffer in body)
    if len(body) == 1 and size <= _JOIN_LIMIT:
        return [_SIZE.pack(size) + header + body[0]]
    return [_SIZE.pack(size) + header, *body]


def frame_response(
    correlation_id: int, api_key: int, api_version: int, body: Sequence[Buffer]
) -> list[Buffer]:
    """Frame an already encoded response body: size prefix, response header, then `body`."""
    if response_header_version(api_key, api_version) == 1:
        header = struct.pack(">i", correlation_id) + _NO_TAGGED_FIELDS
    else:
        header = struct.pack(">i", correlation_id)
    return _frame(header, body)


def encode_response(correlation_id: int, response: Payload) -> list[Buffer]:
    """Encode a response frame: size prefix, header chosen by the response version, body."""
    if int(response.__api_key__) != ApiKey.API_VERSIONS and response.__flexible__:
        header = struct.pack(">i", correlation_id) + _NO_TAGGED_FIELDS
    else:
        header = struct.pack(">i", correlation_id)
    return _frame(header, encode_body(response))


def encode_request(request: Payload, correlation_id: int, client_id: str | None) -> list[Buffer]:
    """Encode a request frame: size prefix, header v1 or v2 by the request's flexibility, body."""
    header = _REQUEST_FIXED.pack(request.__api_key__, request.__version__, correlation_id)
    if client_id is None:
        header += _INT16.pack(-1)
    else:
        encoded = client_id.encode()
        header += _INT16.pack(len(encoded)) + encoded
    if request.__flexible__:
        header += _NO_TAGGED_FIELDS
    return _frame(header, encode_body(request))


def response_correlation_id(frame: Buffer) -> int:
    """The correlation id of a response frame (the same field in both header versions)."""
    if len(frame) < 4:
        raise InvalidResponseError(f"response of {len(frame)} bytes is shorter than a header")
    correlation_id: int = _SIZE.unpack_from(frame, 0)[0]
    return correlation_id


def decode_response(frame: Buffer, api_key: int, api_version: int) -> Payload:
    """Decode a response frame (without size prefix) answering a request of `api_key`/version.

    An ApiVersions response carrying UNSUPPORTED_VERSION is decoded as v0, the format a server
    falls back to for versions it does not know (KIP-511). Raises InvalidResponseError when the
    bytes do not decode as that response.
    """
    if (
        api_key == ApiKey.API_VERSIONS
        and len(frame) >= 6
        and _INT16.unpack_from(frame, 4)[0] == ErrorCode.unsupported_version
    ):
        api_version = 0
    schema = response_schema(api_key, api_version)
    if schema is None:
        raise InvalidResponseError(f"no schema for api key {api_key} version {api_version}")
    try:
        offset = 4
        if response_header_version(api_key, api_version) == 1:
            offset = _skip_tagged_fields(frame, offset)
        body, _size = entity_reader(schema)(frame, offset)
    except Exception as error:
        # Same reasoning as for requests: any failure of kio's reader means bad bytes.
        raise InvalidResponseError(
            f"cannot decode response to api key {api_key} v{api_version}: "
            f"{type(error).__name__}: {error}"
        ) from error
    return body


def api_versions_error_frame(
    correlation_id: int, error_code: ErrorCode, ranges: Sequence[tuple[int, int, int]]
) -> list[Buffer]:
    """An ApiVersions v0-format error response frame, whatever version was asked for.

    KIP-511: a client that sent a newer ApiVersions than the server knows reads this v0 body
    (header v0) and retries with the highest version listed for key 18 in `ranges`, given as
    (api key, min version, max version).
    """
    body = _INT16.pack(error_code) + _SIZE.pack(len(ranges))
    body += b"".join(struct.pack(">hhh", *api_range) for api_range in ranges)
    return _frame(struct.pack(">i", correlation_id), [body])


def _placeholder(field_type: Any) -> object:
    """A neutral value for a required field of an error response."""
    origin = typing.get_origin(field_type)
    if origin in (types.UnionType, typing.Union) and type(None) in typing.get_args(field_type):
        return None
    if origin is tuple:
        return ()
    if dataclasses.is_dataclass(field_type) and isinstance(field_type, type):
        return _default_entity(field_type, ErrorCode.none)
    if field_type is ErrorCode:
        return ErrorCode.none
    if field_type in (i32Timedelta, i64Timedelta):
        return datetime.timedelta(0)
    if field_type in (TZAware, TZAwareMicros):
        return datetime.datetime.fromtimestamp(0, datetime.UTC)
    if field_type is uuid.UUID:
        return uuid.UUID(int=0)
    if field_type is f64:
        return 0.0
    if isinstance(field_type, type):
        for base, value in ((bool, False), (int, 0), (str, ""), (bytes, b"")):
            if issubclass(field_type, base):
                return value
    raise TypeError(f"no placeholder for field type {field_type!r}")


def _default_entity(entity_type: type, error_code: ErrorCode) -> Any:
    values: dict[str, object] = {}
    for entity_field in dataclasses.fields(entity_type):
        if entity_field.name == "error_code":
            values["error_code"] = error_code
        elif (
            entity_field.default is dataclasses.MISSING
            and entity_field.default_factory is dataclasses.MISSING
        ):
            values[entity_field.name] = _placeholder(entity_field.type)
    return entity_type(**values)


def error_response(api_key: int, api_version: int, error_code: ErrorCode) -> Payload | None:
    """A response of `api_key`/`api_version` whose top-level error code is `error_code`.

    Every other field holds its default or an empty value. None when that response has no
    top-level error code (Metadata, Produce...) or no schema: such a request cannot be refused
    by a response, only by closing the connection.
    """
    schema = response_schema(api_key, api_version)
    if schema is None:
        return None
    if "error_code" not in {entity_field.name for entity_field in dataclasses.fields(schema)}:
        return None
    response: Payload = _default_entity(schema, error_code)
    return response


def unsupported_version_response(header: RequestHeader, frame: Buffer) -> Payload | None:
    """The UNSUPPORTED_VERSION answer to a request whose version the server does not serve.

    Produce v0-2 get a ProduceResponse of their version failing every partition (unless
    acks=0, where no response is expected at all); other APIs get `error_response`. None
    means no response can express the refusal and the connection should be closed, which is
    what Kafka does for every unsupported version except ApiVersions.
    """
    if header.api_key == ApiKey.PRODUCE and header.api_version in legacy_produce.LEGACY_VERSIONS:
        request = decode_request_body(header, frame)
        assert isinstance(request, legacy_produce.ProduceRequestV0)
        if request.acks == 0:
            return None
        return legacy_produce.refusal(request, ErrorCode.unsupported_version)
    return error_response(header.api_key, header.api_version, ErrorCode.unsupported_version)


def can_refuse_version(api_key: int, api_version: int) -> bool:
    """Whether `unsupported_version_response` can answer this version with a response."""
    if api_key == ApiKey.PRODUCE and api_version in legacy_produce.LEGACY_VERSIONS:
        return True
    return error_response(api_key, api_version, ErrorCode.unsupported_version) is not None


def make_entity(entity_type: type[_Entity], **values: Any) -> _Entity:
    """Construct `entity_type` from `values`, dropping those its version has no field for.

    Lets version-spanning code build any version of a message from one set of values; fields
    left out take their schema defaults (and must have one).
    """
    names = _field_names(entity_type)  # type: ignore[arg-type]
    return entity_type(**{name: value for name, value in values.items() if name in names})


@functools.cache
def _field_names(entity_type: type) -> frozenset[str]:
    # make_entity runs for every entity of every response: the fields of a class never change.
    return frozenset(entity_field.name for entity_field in dataclasses.fields(entity_type))


def field_entity_type(entity_type: type, field_name: str) -> type:
    """The entity class of a nested (or array-of-entities) field of `entity_type`."""
    # Through a plain function: mypy takes the cache's arguments for Hashable, which it does not
    # see a union of kio message classes (as `net.messages` hands out) to be.
    return _field_entity_type(entity_type, field_name)


@functools.cache
def _field_entity_type(entity_type: type, field_name: str) -> type:
    for entity_field in dataclasses.fields(entity_type):
        if entity_field.name == field_name:
            nested = _nested_entities(entity_field.type)
            if len(nested) != 1:
                raise TypeError(f"{entity_type.__name__}.{field_name} holds no entity")
            return nested[0]
    raise TypeError(f"{entity_type.__name__} has no field {field_name}")
