"""The asyncio server of the Kafka listener: framing, dispatch, ordering, flow control.

One `asyncio.Protocol` per connection (on uvloop, Protocol beats Streams by ~1.7x on
loopback). Each connection reads size-prefixed frames, decodes them, runs each request's async
handler as its own task (so pipelined requests are handled concurrently; plain-function handlers
run inline) and writes the responses in request order, as Kafka requires. What it does with bad
input, following Kafka's SocketServer:

* a size prefix that is negative or above `max_request_size` (`socket.request.max.bytes`), a
  frame whose header or body does not decode, or an API key no schema knows: log and close that
  connection; the process and other connections carry on;
* a known API at a version this node does not serve: ApiVersions gets its v0 fallback (error 35
  and the supported range); others get that API's response with UNSUPPORTED_VERSION where its
  schema can carry it (a top-level error code, or Produce v0-2's per-partition errors), otherwise
  the connection is closed, which is what Kafka does for every unsupported version;
* a handler that raises: UNKNOWN_SERVER_ERROR where the response has a top-level error code,
  otherwise the connection is closed.

A connection stops reading while too many request bytes or requests are in flight, or while its
transport's write buffer is above the high-water mark, and resumes when they drain. It is closed
after `connections_max_idle_ms` without traffic. `KafkaServer.close` stops accepting, lets
in-flight requests finish until a deadline, then closes every connection.

`ConnectionLimits` bound the listener as Kafka's SocketServer does with the same keys:
`max.connections` and `max.connections.per.ip` (with `max.connections.per.ip.overrides`) close
a new connection over the limit at once, as Kafka's acceptor closes one over the per-IP limit
(over `max.connections` Kafka's acceptor stops accepting instead, leaving connections waiting
in the listen backlog; closing them at once never leaves a client hanging); and
`queued.max.request.bytes` stops every connection of the listener from reading while that many
request bytes are in flight on the listener (Kafka's request memory pool), one request allowed
to overshoot so that a request larger than the bound is still served.

On a SASL listener (`ListenerSecurity.sasl`) each connection authenticates first: until its
`net.sasl.SaslAuthenticator` completes, ApiVersions is answered and the SASL APIs go to the
authenticator; any other request closes the connection. A failed authentication is answered
(or not) and the connection closed after `failed_authentication_delay_ms` (Kafka's
`connection.failed.authentication.delay.ms`), reading nothing more meanwhile. The connection's
principal is then User:<name>.
"""

import asyncio
import collections
import inspect
import itertools
import ssl
import time
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol, Self

import structlog
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, HandlerResult, PreEncodedResponse, RequestContext
from net.buffer_gatherer import Buffer
from net.principal import ANONYMOUS, KafkaPrincipal
from net.protocol import (
    SIZE_PREFIX,
    InvalidRequestError,
    ProtocolError,
    RequestHeader,
    UnknownApiError,
    decode_request_body,
    encode_response,
    error_response,
    frame_response,
    read_request_header,
    unsupported_version_response,
)
from net.sasl import SaslAuthenticator, SaslListenerConfig, SaslStep
from net.tls import principal_of

log = structlog.get_logger(__name__)

# Every listener's connections numbered from one count: an id names one connection in the
# process (a handler may key per-connection state on it, as the produce path's order does).
_CONNECTION_IDS = itertools.count(1)

DEFAULT_MAX_REQUEST_SIZE = 104_857_600  # Kafka's socket.request.max.bytes
DEFAULT_CONNECTIONS_MAX_IDLE_MS = 600_000  # Kafka's connections.max.idle.ms
DEFAULT_MAX_IN_FLIGHT_REQUEST_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_IN_FLIGHT_REQUESTS = 256
DEFAULT_WRITE_BUFFER_HIGH_WATER = 4 * 1024 * 1024
# What a client may send on a SASL listener before it authenticated.
_BEFORE_AUTHENTICATION = frozenset(
    (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)
)


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What one listener admits; None is no limit. Kafka's `max.connections`,
    `max.connections.per.ip`, `max.connections.per.ip.overrides` (by IP address) and
    `queued.max.request.bytes`."""

    max_connections: int | None = None
    max_connections_per_ip: int | None = None
    max_connections_per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    queued_max_request_bytes: int | None = None

    def per_ip(self, address: str) -> int | None:
        """The most connections `address` may hold."""
        return self.max_connections_per_ip_overrides.get(address, self.max_connections_per_ip)


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """Who a listener is and how its connections are secured."""

    # The listener's name (Kafka's `listeners=NAME://...`); Kafka's default is PLAINTEXT.
    name: str = "PLAINTEXT"
    # TLS on every connection when given (net.tls.server_context); plain TCP otherwise.
    ssl_context: ssl.SSLContext | None = None
    # SASL when given (SASL_PLAINTEXT, or SASL_SSL with `ssl_context`): each connection
    # authenticates before anything but ApiVersions is served.
    sasl: SaslListenerConfig | None = None
    # How long a new TLS connection may take to complete its handshake before it is dropped
    # (a peer that opens the port and says nothing holds no connection for long).
    ssl_handshake_timeout: float = 10.0


class RequestMetrics(Protocol):
    """Receives one observation per request answered (or completed without a response)."""

    def observe(
        self,
        api_key: int,
        api_version: int,
        latency_seconds: float,
        request_bytes: int,
        response_bytes: int,
    ) -> None:
        """`latency_seconds` runs from the request's last byte read to its response written to
        the transport; byte counts exclude the 4-byte size prefix of the request and include it
        for the response (0 when no response is sent)."""


class _InFlight:
    """A request between its arrival and the write of its response, in arrival order."""

    __slots__ = (
        "api_key",
        "api_version",
        "authentication_failed",
        "close",
        "done",
        "frames",
        "received",
        "request_bytes",
    )

    def __init__(self, header: RequestHeader, request_bytes: int) -> None:
        self.api_key = header.api_key
        self.api_version = header.api_version
        self.request_bytes = request_bytes
        self.received = time.perf_counter()
        self.done = False
        # Set when the request can only be refused by closing the connection.
        self.close = False
        # Set when authentication failed: its frames are written, after the failed
        # authentication delay, and the connection closed.
        self.authentication_failed = False
        self.frames: Sequence[Buffer] = ()

    def complete(self, frames: Sequence[Buffer]) -> None:
        self.frames = frames
        self.done = True


class _Connection(asyncio.Protocol):
    """One client connection of a KafkaServer."""

    def __init__(self, server: "KafkaServer", connection_id: int) -> None:
        self._server = server
        self._loop = asyncio.get_running_loop()
        self._id = connection_id
        self._transport: asyncio.Transport | None = None
        self._peer = "?"
        self._address = "?"
        # Who the requests of this connection come from: the TLS client certificate's subject
        # once the handshake verified one; authentication (SASL) may set it later.
        self.principal: KafkaPrincipal = ANONYMOUS
        # The name of the listener the connection came in on ("" where listeners have none).
        self.listener = server.listener.name
        # Counted in the server's connections (per IP too): refused connections never are.
        self._admitted = False
        self._buffer = bytearray()
        self._in_flight: collections.deque[_InFlight] = collections.deque()
        self._in_flight_bytes = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._reading_paused = False
        self._writing_paused = False
        self._draining = False
        self._closing = False
        # True while _process_buffer runs; responses completed meanwhile must not re-enter it.
        self._processing = False
        self._flush_scheduled = False
        self._last_activity = self._loop.time()
        self._idle_timer: asyncio.TimerHandle | None = None
        self.closed: asyncio.Future[None] = self._loop.create_future()
        sasl = server.listener.sasl
        self._sasl: SaslAuthenticator | None = None if sasl is None else sasl.authenticator()

    # asyncio.Protocol callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self._transport = tcp = typing.cast(asyncio.Transport, transport)
        peer = tcp.get_extra_info("peername")
        if isinstance(peer, tuple):
            self._address = str(peer[0])
            self._peer = f"{peer[0]}:{peer[1]}"
        refusal = self._server.admit(self, self._address)
        if refusal is not None:
            log.info("kafka_connection_refused", peer=self._peer, reason=refusal)
            self._closing = True
            tcp.close()
            return
        self._admitted = True
        # asyncio calls connection_made once the TLS handshake is done (a client that fails it
        # never gets here), so the peer certificate is known and verified.
        self.principal = principal_of(tcp.get_extra_info("ssl_object"))
        high = self._server.write_buffer_high_water
        tcp.set_write_buffer_limits(high=high, low=high // 4)
        self._arm_idle_timer(self._server.idle_timeout)
        log.debug(
            "kafka_connection_opened",
            peer=self._peer,
            connection_id=self._id,
            listener=self.listener,
            principal=str(self.principal),
        )

    def data_received(self, data: bytes) -> None:
        self._last_activity = self._loop.time()
        if self._draining or self._closing:
            return
        self._buffer += data
        self._process_buffer()

    def eof_received(self) -> bool:
        # As Kafka does: a client that closes its side is gone; answers still owed are dropped.
        self._close("client closed the connection")
        return False

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._process_buffer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        for task in self._tasks:
            task.cancel()
        self._in_flight.clear()
        self._release(self._in_flight_bytes)
        if not self._admitted:
            return
        self._server.leave(self, self._address)
        log.debug(
            "kafka_connection_closed",
            peer=self._peer,
            connection_id=self._id,
            error=str(exc) if exc else None,
        )
        if not self.closed.done():
            self.closed.set_result(None)

    # framing and dispatch

    def _process_buffer(self) -> None:
        if self._processing:
            return
        self._processing = True
        try:
            self._process_frames()
        finally:
            self._processing = False
        self._update_reading()

    def _process_frames(self) -> None:
        buffer = self._buffer
        position = 0
        available = len(buffer)
        max_request_size = self._server.max_request_size
        while not self._closing and not self._draining and not self._over_limits():
            if available - position < SIZE_PREFIX:
                break
            size = int.from_bytes(buffer[position : position + SIZE_PREFIX], "big", signed=True)
            if size < 0 or size > max_request_size:
                self._reject(
                    "request size out of range",
                    size=size,
                    max_request_size=max_request_size,
                )
                return
            end = position + SIZE_PREFIX + size
            if end > available:
                break
            # The frame is a view of the buffer; everything decoded from it is copied out, so
            # the view is released before the buffer is trimmed below.
            with (
                memoryview(buffer) as view,
                # kio's native reader accepts only read-only buffers.
                view.toreadonly() as readonly,
                readonly[position + SIZE_PREFIX : end] as frame,
            ):
                self._dispatch(frame)
            position = end
        if position:
            del buffer[:position]

    def _dispatch(self, frame: memoryview) -> None:
        try:
            header = read_request_header(frame)
        except UnknownApiError as error:
            self._reject(
                "unknown api key or version",
                api_key=error.api_key,
                api_version=error.api_version,
            )
            return
        except InvalidRequestError as error:
            self._reject("malformed request header", detail=str(error))
            return
        sasl = self._sasl
        authenticating = sasl is not None and not sasl.complete
        if authenticating and header.api_key not in _BEFORE_AUTHENTICATION:
            assert sasl is not None
            log.info(
                "kafka_request_before_authentication",
                peer=self._peer,
                api_key=header.api_key,
                api_version=header.api_version,
            )
            in_flight = _InFlight(header, len(frame))
            self._in_flight.append(in_flight)
            self._hold(in_flight.request_bytes)
            self._sasl_step(in_flight, header, sasl.unexpected_request())
            return
        registration = self._server.registry.lookup(header.api_key, header.api_version)
        if registration is None:
            self._refuse_version(header, frame)
            return
        try:
            request = decode_request_body(header, frame)
        except ProtocolError as error:
            self._reject(
                "malformed request body",
                api_key=header.api_key,
                api_version=header.api_version,
                detail=str(error),
            )
            return
        if authenticating and header.api_key != ApiKey.API_VERSIONS:
            assert sasl is not None
            if header.api_key == ApiKey.SASL_HANDSHAKE:
                step = sasl.handshake(typing.cast(SaslHandshakeRequest, request).mechanism)
            else:
                token = typing.cast(SaslAuthenticateRequest, request).auth_bytes
                step = sasl.authenticate(header.api_version, token)
            in_flight = _InFlight(header, len(frame))
            self._in_flight.append(in_flight)
            self._hold(in_flight.request_bytes)
            if step.password_check is not None:
                task = self._loop.create_task(
                    self._check_password(in_flight, header, sasl, step.password_check)
                )
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            else:
                self._sasl_step(in_flight, header, step)
            return
        in_flight = _InFlight(header, len(frame))
        self._in_flight.append(in_flight)
        self._hold(in_flight.request_bytes)
        context = RequestContext(
            header=header,
            peer=self._peer,
            connection_id=self._id,
            received_at=self._loop.time(),
            request_bytes=len(frame),
            principal=self.principal,
            listener=self.listener,
        )
        try:
            outcome = registration.handler(context, request)
        except Exception:
            self._answer_failure(in_flight, header)
            return
        if inspect.isawaitable(outcome):
            task = self._loop.create_task(self._await(in_flight, header, outcome))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            self._answer(in_flight, header, outcome)

    async def _check_password(
        self,
        in_flight: _InFlight,
        header: RequestHeader,
        sasl: SaslAuthenticator,
        check: Callable[[], bool],
    ) -> None:
        """Runs a PLAIN password check in a thread (a PBKDF2 would stall every connection of
        the loop), then answers as the authenticator says."""
        matches = await asyncio.to_thread(check)
        self._sasl_step(in_flight, header, sasl.password_checked(matches))

    def _sasl_step(self, in_flight: _InFlight, header: RequestHeader, step: SaslStep) -> None:
        """Answers a request (queued in arrival order) as the authenticator said; after a
        failure, reads no more."""
        frames = (
            () if step.response is None else encode_response(header.correlation_id, step.response)
        )
        if step.user is not None:
            self.principal = KafkaPrincipal.user(step.user)
            log.info(
                "kafka_connection_authenticated",
                peer=self._peer,
                connection_id=self._id,
                principal=str(self.principal),
                mechanism=self._sasl.mechanism if self._sasl is not None else None,
            )
        if step.close:
            log.info(
                "kafka_authentication_failed",
                peer=self._peer,
                connection_id=self._id,
                api_key=header.api_key,
                mechanism=self._sasl.mechanism if self._sasl is not None else None,
                reason=step.reason,
            )
            in_flight.authentication_failed = True
            self._draining = True
        in_flight.complete(frames)
        self._schedule_flush()

    def _refuse_version(self, header: RequestHeader, frame: memoryview) -> None:
        in_flight = _InFlight(header, len(frame))
        if header.api_key == ApiKey.API_VERSIONS:
            frames = self._server.registry.api_versions_refusal(header.correlation_id)
        else:
            try:
                response = unsupported_version_response(header, frame)
            except ProtocolError as error:
                self._reject("malformed request body", detail=str(error))
                return
            if response is None:
                self._reject(
                    "unsupported api version",
                    api_key=header.api_key,
                    api_version=header.api_version,
                )
                return
            frames = encode_response(header.correlation_id, response)
        log.info(
            "kafka_request_version_refused",
            peer=self._peer,
            api_key=header.api_key,
            api_version=header.api_version,
        )
        in_flight.complete(frames)
        self._in_flight.append(in_flight)
        self._hold(in_flight.request_bytes)
        self._schedule_flush()

    async def _await(
        self, in_flight: _InFlight, header: RequestHeader, outcome: Awaitable[HandlerResult]
    ) -> None:
        try:
            result = await outcome
        except Exception:
            self._answer_failure(in_flight, header)
            return
        self._answer(in_flight, header, result)

    def _answer(self, in_flight: _InFlight, header: RequestHeader, result: HandlerResult) -> None:
        try:
            if result is None:
                frames: Sequence[Buffer] = ()
            elif isinstance(result, PreEncodedResponse):
                frames = frame_response(
                    header.correlation_id, header.api_key, header.api_version, result.buffers
                )
            elif (result.__api_key__, result.__version__) != (header.api_key, header.api_version):
                raise TypeError(
                    f"handler answered api key {header.api_key} v{header.api_version} with "
                    f"{type(result).__name__} (api key {result.__api_key__} "
                    f"v{result.__version__})"
                )
            else:
                frames = encode_response(header.correlation_id, result)
        except Exception:
            self._answer_failure(in_flight, header)
            return
        in_flight.complete(frames)
        if len(self._in_flight) == 1 and not self._processing:
            # The only request in flight (a follower's fetch, a producer sending one request
            # at a time): written now rather than on the next loop iteration, which on a busy
            # node is a wait as long as everything else queued for it. With more in flight,
            # responses that complete together still leave in one write.
            self._flush()
        else:
            self._schedule_flush()

    def _answer_failure(self, in_flight: _InFlight, header: RequestHeader) -> None:
        """Log the handler's exception; answer UNKNOWN_SERVER_ERROR, or close if impossible."""
        log.exception(
            "kafka_request_handler_failed",
            peer=self._peer,
            api_key=header.api_key,
            api_version=header.api_version,
        )
        fallback = error_response(
            header.api_key, header.api_version, ErrorCode.unknown_server_error
        )
        if fallback is None:
            in_flight.close = True
            in_flight.complete(())
        else:
            in_flight.complete(encode_response(header.correlation_id, fallback))
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        # One flush per loop iteration: responses that complete together leave in one write
        # system call instead of one each.
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Write every finished response at the head of the queue, in request order."""
        self._flush_scheduled = False
        transport = self._transport
        if transport is None or self._closing:
            return
        metrics = self._server.metrics
        out: list[Buffer] = []
        close = False
        refusal: Sequence[Buffer] | None = None
        while self._in_flight and self._in_flight[0].done:
            in_flight = self._in_flight.popleft()
            self._release(in_flight.request_bytes)
            if in_flight.close:
                close = True
                break
            if in_flight.authentication_failed:
                refusal = in_flight.frames
                break
            frames = in_flight.frames
            out.extend(frames)
            if metrics is not None:
                metrics.observe(
                    in_flight.api_key,
                    in_flight.api_version,
                    time.perf_counter() - in_flight.received,
                    in_flight.request_bytes,
                    sum(len(frame) for frame in frames),
                )
        if out:
            self._last_activity = self._loop.time()
            if len(out) == 1:
                transport.write(out[0])
            elif self._server.tls:
                # One buffer, so that TLS encrypts full records rather than one (or more) per
                # frame piece; the copy costs less than the small records.
                transport.write(b"".join(out))
            else:
                transport.writelines(out)
        if close:
            self._close("request could not be answered")
            return
        if refusal is not None:
            self._close_after_failed_authentication(transport, refusal)
            return
        if not self._in_flight and self._draining:
            self._close("drained")
            return
        self._process_buffer()

    def _close_after_failed_authentication(
        self, transport: asyncio.Transport, frames: Sequence[Buffer]
    ) -> None:
        # As Kafka's Selector: the answer waits out the delay too, so a client guessing
        # passwords gets one answer per delay; nothing is read meanwhile.
        self._closing = True

        def finish() -> None:
            if not transport.is_closing():
                transport.writelines(frames)
                transport.close()

        sasl = self._server.listener.sasl
        delay_ms = 0 if sasl is None else sasl.failed_authentication_delay_ms
        self._loop.call_later(delay_ms / 1000, finish)

    # flow control and lifecycle

    def _hold(self, request_bytes: int) -> None:
        self._in_flight_bytes += request_bytes
        self._server.queued_bytes += request_bytes

    def _release(self, request_bytes: int) -> None:
        self._in_flight_bytes -= request_bytes
        self._server.release(request_bytes)

    def resume(self) -> None:
        """The listener's queued request bytes went below its bound: read again."""
        if not self._closing:
            self._process_buffer()

    def _over_limits(self) -> bool:
        if self._writing_paused:
            return True
        server = self._server
        if server.queue_full():
            server.starved.add(self)
            return True
        if not self._in_flight:
            return False
        return (
            self._in_flight_bytes >= server.max_in_flight_request_bytes
            or len(self._in_flight) >= server.max_in_flight_requests
        )

    def _update_reading(self) -> None:
        transport = self._transport
        if transport is None or self._closing:
            return
        pause = self._draining or self._over_limits()
        if pause and not self._reading_paused:
            transport.pause_reading()
            self._reading_paused = True
        elif not pause and self._reading_paused:
            transport.resume_reading()
            self._reading_paused = False

    def _arm_idle_timer(self, delay: float) -> None:
        self._idle_timer = self._loop.call_later(delay, self._check_idle)

    def _check_idle(self) -> None:
        idle_timeout = self._server.idle_timeout
        idle_for = self._loop.time() - self._last_activity
        if self._in_flight or idle_for < idle_timeout:
            self._arm_idle_timer(max(idle_timeout - idle_for, 0.001))
            return
        log.info("kafka_connection_idle", peer=self._peer, idle_seconds=round(idle_for, 3))
        self._close("idle")

    def _reject(self, reason: str, **fields: object) -> None:
        log.warning("kafka_request_rejected", peer=self._peer, reason=reason, **fields)
        self._close(reason)

    def _close(self, reason: str) -> None:
        if self._closing:
            return
        self._closing = True
        log.debug("kafka_connection_closing", peer=self._peer, reason=reason)
        if self._transport is not None:
            self._transport.close()

    def drain(self) -> None:
        """Read no more requests; close once the ones in flight are answered."""
        self._draining = True
        self._update_reading()
        if not self._in_flight:
            self._close("server shutting down")

    def abort(self) -> None:
        """Close at once, dropping unanswered requests."""
        self._closing = True
        if self._transport is not None:
            self._transport.abort()


class KafkaServer:
    """Serves the Kafka protocol on one listener, dispatching requests through `registry`."""

    # One keyword argument per listener setting, each with Kafka's default.
    def __init__(
        self,
        registry: ApiRegistry,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_request_size: int = DEFAULT_MAX_REQUEST_SIZE,
        connections_max_idle_ms: int = DEFAULT_CONNECTIONS_MAX_IDLE_MS,
        max_in_flight_request_bytes: int = DEFAULT_MAX_IN_FLIGHT_REQUEST_BYTES,
        max_in_flight_requests: int = DEFAULT_MAX_IN_FLIGHT_REQUESTS,
        write_buffer_high_water: int = DEFAULT_WRITE_BUFFER_HIGH_WATER,
        limits: ConnectionLimits = ConnectionLimits(),
        metrics: RequestMetrics | None = None,
        listener: ListenerSecurity = ListenerSecurity(),
    ) -> None:
        self.registry = registry
        self.listener = listener
        self.host = host
        self._requested_port = port
        self.max_request_size = max_request_size
        self.idle_timeout = connections_max_idle_ms / 1000
        self.max_in_flight_request_bytes = max_in_flight_request_bytes
        self.max_in_flight_requests = max_in_flight_requests
        self.write_buffer_high_water = write_buffer_high_water
        self.limits = limits
        self.metrics = metrics
        self.connections: set[_Connection] = set()
        self.connections_per_ip: collections.Counter[str] = collections.Counter()
        # Request bytes in flight over every connection, and the connections that stopped
        # reading because they reached `queued_max_request_bytes`.
        self.queued_bytes = 0
        self.starved: set[_Connection] = set()
        self._server: asyncio.Server | None = None

    def admit(self, connection: _Connection, address: str) -> str | None:
        """Counts a new connection from `address` in, or says why it is refused."""
        limits = self.limits
        if limits.max_connections is not None and len(self.connections) >= limits.max_connections:
            return (
                f"the listener has the configured maximum of {limits.max_connections} connections"
            )
        per_ip = limits.per_ip(address)
        if per_ip is not None and self.connections_per_ip[address] >= per_ip:
            return f"{address} already has the configured maximum of {per_ip} connections"
        self.connections.add(connection)
        self.connections_per_ip[address] += 1
        return None

    def leave(self, connection: _Connection, address: str) -> None:
        """Counts an admitted connection out."""
        self.connections.discard(connection)
        self.starved.discard(connection)
        self.connections_per_ip[address] -= 1
        if not self.connections_per_ip[address]:
            del self.connections_per_ip[address]

    def queue_full(self) -> bool:
        bound = self.limits.queued_max_request_bytes
        return bound is not None and self.queued_bytes >= bound

    def release(self, request_bytes: int) -> None:
        """`request_bytes` are no longer in flight: connections that stopped reading for the
        listener's bound read again once it is no longer reached."""
        self.queued_bytes -= request_bytes
        if self.starved and not self.queue_full():
            starved, self.starved = self.starved, set()
            loop = asyncio.get_running_loop()
            for connection in starved:
                # Later, not here: the releasing connection may be in the middle of its own
                # buffer processing.
                loop.call_soon(connection.resume)

    @property
    def tls(self) -> bool:
        return self.listener.ssl_context is not None

    @property
    def port(self) -> int:
        """The bound port (useful when constructed with port 0). Valid after `start`."""
        if self._server is None:
            raise RuntimeError("server not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self, *, serving: bool = True) -> None:
        """Bind and start accepting connections; with `serving` False, bind only (an address
        in use fails now) and accept once `start_serving` is called: connections wait in the
        listen backlog meanwhile, as they do on a Kafka broker that is not ready to process
        requests yet."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self, next(_CONNECTION_IDS)),
            self.host,
            self._requested_port,
            reuse_address=True,
            start_serving=serving,
            ssl=self.listener.ssl_context,
            ssl_handshake_timeout=self.listener.ssl_handshake_timeout
            if self.listener.ssl_context is not None
            else None,
        )
        if serving:
            self._log_listening()

    async def start_serving(self) -> None:
        """Accept connections on the address `start(serving=False)` bound."""
        if self._server is None:
            raise RuntimeError("server not started")
        await self._server.start_serving()
        self._log_listening()

    def _log_listening(self) -> None:
        log.info(
            "kafka_server_listening",
            listener=self.listener.name,
            host=self.host,
            port=self.port,
            tls=self.tls,
            sasl=self.listener.sasl is not None,
        )

    async def close(self, timeout: float = 30.0) -> None:
        """Stop accepting, let in-flight requests finish for up to `timeout` seconds, close all.

        Requests still unanswered at the deadline are dropped with their connections.
        """
        if self._server is None:
            return
        self._server.close()
        connections = list(self.connections)
        for connection in connections:
            connection.drain()
        waiting = [connection.closed for connection in connections]
        if waiting:
            _done, pending = await asyncio.wait(waiting, timeout=timeout)
            if pending:
                log.warning("kafka_server_close_deadline", connections=len(pending))
                for connection in connections:
                    if not connection.closed.done():
                        connection.abort()
                await asyncio.wait(pending, timeout=1.0)
        await self._server.wait_closed()
        self._server = None
        log.info("kafka_server_closed", host=self.host)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()
