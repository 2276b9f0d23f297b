"""Kafka's Envelope (API 58, KIP-590): a request a broker forwards to the controller with the
principal and address of the client that sent it, so that the controller authorizes it as the
client's.

`seal` wraps a request: its header and body as the client would have framed them (no size
prefix), the principal serialized as Kafka's DefaultKafkaPrincipalBuilder does
(DefaultPrincipalData behind its int16 version), and the client's IP address as raw bytes.
`open_envelope` takes one apart on the controller; `sealed_response` and `unseal_response`
carry the answer (its response header and body) back.
"""

from __future__ import annotations

import io
import ipaddress
import struct
from dataclasses import dataclass

from kio.schema.default_principal_data.v0.data import DefaultPrincipalData
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.protocol import Payload

from net.principal import KafkaPrincipal
from net.protocol import (
    ProtocolError,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)

_VERSION = struct.Struct(">h")
_PRINCIPAL_VERSION = 0
# The address of a client whose peer is not an IP address (never on TCP, but said plainly).
_UNKNOWN_HOST = ipaddress.IPv4Address("0.0.0.0")


class EnvelopeError(ValueError):
    """An envelope that does not hold a request, a principal and an address."""


@dataclass(frozen=True, slots=True)
class OpenedEnvelope:
    """What an envelope carries: the client's request with its header, who sent it, and from
    which address."""

    header: RequestHeader
    request: Payload
    principal: KafkaPrincipal
    host: str

    @property
    def peer(self) -> str:
        """The client as `host:port` (port unknown: 0), as request contexts name peers."""
        return f"[{self.host}]:0" if ":" in self.host else f"{self.host}:0"


def serialize_principal(principal: KafkaPrincipal) -> bytes:
    """`principal` as Kafka's DefaultKafkaPrincipalBuilder serializes it."""
    data = DefaultPrincipalData(
        type_=principal.principal_type, name=principal.name, token_authenticated=False
    )
    with io.BytesIO() as buffer:
        buffer.write(_VERSION.pack(_PRINCIPAL_VERSION))
        entity_writer(DefaultPrincipalData)(buffer, data)
        return buffer.getvalue()


def deserialize_principal(data: bytes) -> KafkaPrincipal:
    """The principal `serialize_principal` (or a Kafka broker) serialized; EnvelopeError."""
    if len(data) < _VERSION.size or _VERSION.unpack_from(data)[0] != _PRINCIPAL_VERSION:
        raise EnvelopeError("the principal is not DefaultPrincipalData v0")
    try:
        principal, _ = entity_reader(DefaultPrincipalData)(data, _VERSION.size)
    except Exception as error:
        # kio's reader fails in many ways on bad bytes; all mean the same here.
        raise EnvelopeError(f"malformed principal: {error}") from None
    return KafkaPrincipal(principal.type_, principal.name)


def seal(
    request: Payload, client_id: str | None, principal: KafkaPrincipal, host: str
) -> EnvelopeRequest:
    """The envelope of `request` sent by `principal` from `host` (an IP address)."""
    framed = b"".join(bytes(b) for b in encode_request(request, 0, client_id))
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = _UNKNOWN_HOST
    return EnvelopeRequest(
        request_data=framed[4:],
        request_principal=serialize_principal(principal),
        client_host_address=address.packed,
    )


def open_envelope(envelope: EnvelopeRequest) -> OpenedEnvelope:
    """The request, principal and address an envelope carries; EnvelopeError when one is
    missing or malformed."""
    if envelope.request_principal is None:
        raise EnvelopeError("the envelope names no principal")
    try:
        header, request = decode_request(envelope.request_data)
    except ProtocolError as error:
        raise EnvelopeError(f"malformed request: {error}") from None
    address = envelope.client_host_address
    if len(address) not in (4, 16):
        raise EnvelopeError(f"a client address of {len(address)} bytes")
    host = str(ipaddress.ip_address(address))
    return OpenedEnvelope(header, request, deserialize_principal(envelope.request_principal), host)


def sealed_response(header: RequestHeader, response: Payload) -> EnvelopeResponse:
    """The envelope of the response to an opened request."""
    framed = b"".join(bytes(b) for b in encode_response(header.correlation_id, response))
    return EnvelopeResponse(response_data=framed[4:], error_code=ErrorCode.none)


def envelope_error(error: ErrorCode) -> EnvelopeResponse:
    """An envelope refused whole (CLUSTER_AUTHORIZATION_FAILED, NOT_CONTROLLER, ...)."""
    return EnvelopeResponse(response_data=None, error_code=error)


def unseal_response(envelope: EnvelopeResponse, request: Payload) -> Payload:
    """The response to `request` an envelope's answer carries; EnvelopeError without one."""
    if envelope.response_data is None:
        raise EnvelopeError(f"the envelope was refused: {envelope.error_code.name}")
    try:
        return decode_response(envelope.response_data, request.__api_key__, request.__version__)
    except ProtocolError as error:
        raise EnvelopeError(f"malformed response: {error}") from None
