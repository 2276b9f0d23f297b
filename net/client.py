"""Asyncio Kafka client: one pipelined connection per node, and a cluster view over them.

Used by brokers (replica fetchers, forwarding to the controller), controllers (Raft RPCs), the
Spark connector and tests. `NodeConnection` owns one TCP connection to one node: many requests
in flight matched to responses by correlation id, ApiVersions negotiation on connect, a timeout
per request, and reconnection with exponential backoff. `ClusterClient` bootstraps from a list
of addresses, learns the brokers from Metadata, and sends to a node id or to any node.

As in Kafka's own clients, a request that times out closes its connection: responses come back
in request order, so everything queued behind a stuck request is stuck too.
"""

import asyncio
import itertools
import random
import ssl
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import structlog
from kio.schema.errors import ErrorCode
from kio.static.protocol import Payload

from net.api_keys import ApiKey
from net.buffer_gatherer import Buffer
from net.protocol import (
    SIZE_PREFIX,
    ProtocolError,
    decode_response,
    encode_request,
    field_entity_type,
    make_entity,
    request_schema,
    response_correlation_id,
    schema_versions,
)
from net.sasl import SaslAuthenticationError, SaslClientCredentials

log = structlog.get_logger(__name__)

DEFAULT_CLIENT_ID = "kraft"
SOFTWARE_NAME = "kraft-broker"
SOFTWARE_VERSION = "0.1.0"
_MAX_CORRELATION_ID = 2**31 - 1


class KafkaConnectionError(ConnectionError):
    """The connection to a node could not be made, or closed with this request unanswered."""


class RequestTimedOutError(TimeoutError):
    """No response arrived within the request's timeout; its connection was closed."""


class UnsupportedVersionError(Exception):
    """The node supports no version of an API that this client can also speak."""


class _ClientProtocol(asyncio.Protocol):
    """Frames responses and matches them to waiting requests by correlation id."""

    def __init__(self, peer: str, max_response_size: int) -> None:
        self._peer = peer
        self._max_response_size = max_response_size
        self._buffer = bytearray()
        self._waiting: dict[int, tuple[int, int, asyncio.Future[Payload]]] = {}
        self._transport: asyncio.Transport | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._outgoing: list[Buffer] = []
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self._transport = typing.cast(asyncio.Transport, transport)

    def expect(
        self, correlation_id: int, api_key: int, api_version: int
    ) -> asyncio.Future[Payload]:
        future: asyncio.Future[Payload] = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = (api_key, api_version, future)
        return future

    def forget(self, correlation_id: int) -> None:
        self._waiting.pop(correlation_id, None)

    async def wait_writable(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark."""
        await self._writable.wait()

    def write(self, frames: Sequence[Buffer]) -> None:
        """Send a request's `frames`: at once when it is the only request awaiting an answer
        (a replica fetcher's next Fetch), else with the others sent in this loop iteration."""
        if self._transport is None or self.closed:
            raise KafkaConnectionError(f"connection to {self._peer} is closed")
        if not self._outgoing and len(self._waiting) == 1:
            # Nothing to gather it with: waiting for the next loop iteration would only add
            # everything else queued on a busy node to the round trip.
            self._transport.writelines(frames)
            return
        # Requests sent in the same loop iteration leave in one write system call.
        if not self._outgoing:
            asyncio.get_running_loop().call_soon(self._flush)
        self._outgoing.extend(frames)

    @property
    def writable(self) -> bool:
        return self._writable.is_set()

    def _flush(self) -> None:
        outgoing, self._outgoing = self._outgoing, []
        if self._transport is None or self.closed:
            return
        self._transport.writelines(outgoing)

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        position = 0
        available = len(buffer)
        while available - position >= SIZE_PREFIX:
            size = int.from_bytes(buffer[position : position + SIZE_PREFIX], "big", signed=True)
            if size < 0 or size > self._max_response_size:
                self.close(KafkaConnectionError(f"response size {size} from {self._peer}"))
                return
            end = position + SIZE_PREFIX + size
            if end > available:
                break
            with (
                memoryview(buffer) as view,
                # kio's native reader accepts only read-only buffers.
                view.toreadonly() as readonly,
                readonly[position + SIZE_PREFIX : end] as frame,
            ):
                failure = self._deliver(frame)
            if failure is not None:
                self.close(failure)
                return
            position = end
        if position:
            del buffer[:position]

    def _deliver(self, frame: memoryview) -> Exception | None:
        try:
            correlation_id = response_correlation_id(frame)
        except ProtocolError as error:
            return error
        waiting = self._waiting.pop(correlation_id, None)
        if waiting is None:
            # The request timed out or its caller gave up; nobody wants the answer.
            log.debug("kafka_response_unclaimed", peer=self._peer, correlation_id=correlation_id)
            return None
        api_key, api_version, future = waiting
        try:
            response = decode_response(frame, api_key, api_version)
        except ProtocolError as error:
            if not future.done():
                future.set_exception(error)
            return error
        if not future.done():
            future.set_result(response)
        return None

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def close(self, error: Exception | None = None) -> None:
        if self._transport is not None and not self.closed:
            self.closed = True
            self._transport.close()
        self._fail_waiting(error)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._writable.set()
        self._fail_waiting(exc)

    def _fail_waiting(self, cause: Exception | None) -> None:
        waiting = list(self._waiting.values())
        self._waiting.clear()
        for _api_key, _api_version, future in waiting:
            if not future.done():
                error = KafkaConnectionError(f"connection to {self._peer} closed")
                error.__cause__ = cause
                future.set_exception(error)


class NodeConnection:
    """One connection to one Kafka node, reconnected on demand.

    `send` connects first if needed (waiting out the reconnect backoff after failed attempts),
    then pipelines: any number of requests may be in flight at once. On connecting, ApiVersions
    is exchanged; `version_for` then picks the highest version both sides support.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str | None = DEFAULT_CLIENT_ID,
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        reconnect_backoff: float = 0.05,
        reconnect_backoff_max: float = 1.0,
        max_response_size: int = 2**31 - 1,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslClientCredentials | None = None,
    ) -> None:
        self.host = host
        # TLS when given (a listener whose security protocol is SSL): see net.tls.client_context.
        self.ssl_context = ssl_context
        # SASL when set: each connection authenticates after ApiVersions.
        self.sasl = sasl
        self.port = port
        self.client_id = client_id
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self.reconnect_backoff = reconnect_backoff
        self.reconnect_backoff_max = reconnect_backoff_max
        self.max_response_size = max_response_size
        self._protocol: _ClientProtocol | None = None
        self._api_versions: dict[int, tuple[int, int]] = {}
        self._correlation_ids = itertools.count()
        self._connect_lock = asyncio.Lock()
        self._failed_attempts = 0
        self._next_attempt = 0.0
        self._closed = False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        return self._protocol is not None and not self._protocol.closed

    @property
    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        """API key -> (min, max) version the node advertised on the current connection."""
        return self._api_versions

    async def connect(self, timeout: float | None = None) -> None:
        """Connect and negotiate API versions, unless connected already.

        After failed attempts, waits until the backoff since the last one has passed
        (`reconnect_backoff` doubling per failure up to `reconnect_backoff_max`, ±20 % jitter,
        as Kafka's reconnect.backoff.ms / reconnect.backoff.max.ms). Raises
        KafkaConnectionError when the attempt fails, or when it cannot be made and finished
        within `timeout` seconds (None: `connect_timeout` for the attempt itself).
        """
        if self._closed:
            raise KafkaConnectionError(f"connection to {self.address} was closed by its owner")
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        try:
            async with asyncio.timeout_at(deadline):
                await self._connect_lock.acquire()
        except TimeoutError:
            raise KafkaConnectionError(
                f"not connected to {self.address} within {timeout} s"
            ) from None
        try:
            if self.connected:
                return
            delay = self._next_attempt - loop.time()
            if delay > 0:
                if deadline is not None and loop.time() + delay >= deadline:
                    raise KafkaConnectionError(
                        f"{self.address} is backed off for {delay:.3f} s, past the deadline"
                    )
                await asyncio.sleep(delay)
            attempt_timeout = self.connect_timeout
            if deadline is not None:
                attempt_timeout = min(attempt_timeout, max(0.0, deadline - loop.time()))
            try:
                async with asyncio.timeout(attempt_timeout):
                    await self._open()
            except (
                OSError,
                TimeoutError,
                ProtocolError,
                UnsupportedVersionError,
                SaslAuthenticationError,
            ) as error:
                self._failed_attempts += 1
                backoff = min(
                    self.reconnect_backoff * 2 ** (self._failed_attempts - 1),
                    self.reconnect_backoff_max,
                ) * random.uniform(0.8, 1.2)
                self._next_attempt = loop.time() + backoff
                log.info(
                    "kafka_node_connect_failed",
                    address=self.address,
                    attempts=self._failed_attempts,
                    retry_in=round(backoff, 3),
                    error=f"{type(error).__name__}: {error}",
                )
                if self._protocol is not None:
                    self._protocol.close()
                    self._protocol = None
                raise KafkaConnectionError(f"cannot connect to {self.address}: {error}") from error
            self._failed_attempts = 0
            log.debug("kafka_node_connected", address=self.address)
        finally:
            self._connect_lock.release()

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        _transport, protocol = await loop.create_connection(
            lambda: _ClientProtocol(self.address, self.max_response_size),
            self.host,
            self.port,
            ssl=self.ssl_context,
        )
        self._protocol = protocol
        self._api_versions = {}
        self._api_versions = await self._negotiate(protocol)
        if self.sasl is not None:
            await self._authenticate(protocol, self.sasl)

    async def _authenticate(self, protocol: _ClientProtocol, sasl: SaslClientCredentials) -> None:
        """SaslHandshake v1, then SaslAuthenticate until the mechanism completes."""
        handshake_schema = request_schema(ApiKey.SASL_HANDSHAKE, 1)
        assert handshake_schema is not None
        handshake: Any = await self._exchange(
            protocol, make_entity(handshake_schema, mechanism=sasl.mechanism), self.connect_timeout
        )
        if handshake.error_code != ErrorCode.none:
            raise SaslAuthenticationError(
                f"{self.address} does not take SASL mechanism {sasl.mechanism} "
                f"({handshake.error_code.name}; it takes {', '.join(handshake.mechanisms)})"
            )
        version = self.version_for(ApiKey.SASL_AUTHENTICATE, 0, 2)
        authenticate_schema = request_schema(ApiKey.SASL_AUTHENTICATE, version)
        assert authenticate_schema is not None
        exchange = sasl.exchange()
        token: bytes | None = exchange.first()
        while token is not None:
            response: Any = await self._exchange(
                protocol, make_entity(authenticate_schema, auth_bytes=token), self.connect_timeout
            )
            if response.error_code != ErrorCode.none:
                raise SaslAuthenticationError(
                    f"{self.address} refused {sasl.username!r}: {response.error_message}"
                )
            token = exchange.next(response.auth_bytes)

    async def _negotiate(self, protocol: _ClientProtocol) -> dict[int, tuple[int, int]]:
        version = max(schema_versions(ApiKey.API_VERSIONS))
        while True:
            schema = request_schema(ApiKey.API_VERSIONS, version)
            assert schema is not None
            request = make_entity(
                schema,
                client_software_name=SOFTWARE_NAME,
                client_software_version=SOFTWARE_VERSION,
            )
            response: Any = await self._exchange(protocol, request, self.connect_timeout)
            ranges = {
                entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys
            }
            if response.error_code == ErrorCode.none:
                return ranges
            if response.error_code != ErrorCode.unsupported_version or version == 0:
                raise UnsupportedVersionError(
                    f"ApiVersions v{version} to {self.address} failed: {response.error_code!r}"
                )
            # KIP-511: retry with the highest version the node listed for ApiVersions itself.
            version = min(version - 1, ranges.get(ApiKey.API_VERSIONS, (0, 0))[1])

    def version_for(
        self, api_key: int, min_version: int = 0, max_version: int | None = None
    ) -> int:
        """The highest version of `api_key` in [min_version, max_version] that both this
        client (kio's schemas) and the connected node support.

        Raises UnsupportedVersionError when there is none (or before a connection exists).
        """
        advertised = self._api_versions.get(api_key)
        if advertised is None:
            raise UnsupportedVersionError(f"{self.address} does not advertise api key {api_key}")
        low = max(min_version, advertised[0])
        high = advertised[1] if max_version is None else min(max_version, advertised[1])
        candidates = [v for v in schema_versions(api_key) if low <= v <= high]
        if not candidates:
            raise UnsupportedVersionError(
                f"no common version of api key {api_key}: {self.address} advertises "
                f"{advertised[0]}..{advertised[1]}, wanted {min_version}..{max_version}"
            )
        return candidates[-1]

    async def send(self, request: Payload, *, timeout: float | None = None) -> Payload | None:
        """Send `request` (a kio request of a version the node supports) and await its response.

        Returns None without waiting for Produce with acks=0, which gets no response. Raises
        KafkaConnectionError if the connection fails or closes first, RequestTimedOutError
        after `timeout` (default `request_timeout`) seconds, and ProtocolError if the response
        does not decode.
        """
        protocol = self._protocol
        if protocol is None or protocol.closed:
            # The request's timeout bounds the connection it needs, as it bounds the answer.
            await self.connect(self.request_timeout if timeout is None else timeout)
            protocol = self._protocol
        assert protocol is not None
        if int(request.__api_key__) == ApiKey.PRODUCE and getattr(request, "acks", None) == 0:
            if not protocol.writable:
                await protocol.wait_writable()
            protocol.write(encode_request(request, self._next_correlation_id(), self.client_id))
            return None
        return await self._exchange(
            protocol, request, self.request_timeout if timeout is None else timeout
        )

    async def _exchange(
        self, protocol: _ClientProtocol, request: Payload, timeout: float
    ) -> Payload:
        correlation_id = self._next_correlation_id()
        frames = encode_request(request, correlation_id, self.client_id)
        future = protocol.expect(correlation_id, request.__api_key__, request.__version__)
        loop = asyncio.get_running_loop()
        timer = loop.call_later(timeout, self._expire, protocol, future, correlation_id, timeout)
        try:
            if not protocol.writable:
                await protocol.wait_writable()
            protocol.write(frames)
            return await future
        finally:
            timer.cancel()
            protocol.forget(correlation_id)

    def _expire(
        self,
        protocol: _ClientProtocol,
        future: "asyncio.Future[Payload]",
        correlation_id: int,
        timeout: float,
    ) -> None:
        if future.done():
            return
        future.set_exception(
            RequestTimedOutError(
                f"request {correlation_id} to {self.address} timed out after {timeout} s"
            )
        )
        log.info("kafka_request_timed_out", address=self.address, correlation_id=correlation_id)
        protocol.close()

    def _next_correlation_id(self) -> int:
        correlation_id = next(self._correlation_ids)
        if correlation_id >= _MAX_CORRELATION_ID:
            self._correlation_ids = itertools.count(1)
            return 0
        return correlation_id

    def disconnect(self) -> None:
        """Close the current connection (requests in flight fail); `send` will reconnect."""
        if self._protocol is not None:
            self._protocol.close()
            self._protocol = None

    async def close(self) -> None:
        """Close for good: in-flight requests fail and later sends raise."""
        self._closed = True
        self.disconnect()

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    """A broker as Metadata describes it."""

    node_id: int
    host: str
    port: int
    rack: str | None


def parse_bootstrap_servers(servers: str | Sequence[str]) -> list[tuple[str, int]]:
    """`"host:port,host:port"` (or a list of "host:port") as (host, port) pairs."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    addresses = []
    for item in items:
        host, separator, port = item.strip().rpartition(":")
        if not separator or not host or not port.isdigit():
            raise ValueError(f"bad bootstrap server {item!r}: expected host:port")
        addresses.append((host.strip("[]"), int(port)))
    if not addresses:
        raise ValueError("no bootstrap servers")
    return addresses


class ClusterClient:
    """Connections to the nodes of one cluster, found through Metadata.

    `bootstrap` asks the bootstrap addresses (in order, until one answers) for Metadata and
    learns node id -> address; `refresh_metadata` does it again through any reachable node.
    Connections are opened lazily and kept, one per node.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        client_id: str | None = DEFAULT_CLIENT_ID,
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        reconnect_backoff: float = 0.05,
        reconnect_backoff_max: float = 1.0,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslClientCredentials | None = None,
    ) -> None:
        self._bootstrap = parse_bootstrap_servers(bootstrap_servers)
        self._connection_options: dict[str, Any] = {
            "sasl": sasl,
            "client_id": client_id,
            "request_timeout": request_timeout,
            "connect_timeout": connect_timeout,
            "reconnect_backoff": reconnect_backoff,
            "reconnect_backoff_max": reconnect_backoff_max,
            "ssl_context": ssl_context,
        }
        self._brokers: dict[int, BrokerAddress] = {}
        self._connections: dict[tuple[str, int], NodeConnection] = {}
        self.cluster_id: str | None = None
        self.controller_id: int | None = None

    @property
    def brokers(self) -> Mapping[int, BrokerAddress]:
        """Node id -> address, from the last Metadata response."""
        return self._brokers

    def _connection_to(self, host: str, port: int) -> NodeConnection:
        connection = self._connections.get((host, port))
        if connection is None:
            connection = NodeConnection(host, port, **self._connection_options)
            self._connections[(host, port)] = connection
        return connection

    def connection(self, node_id: int) -> NodeConnection:
        """The connection to broker `node_id` (KeyError if Metadata never named it)."""
        broker = self._brokers[node_id]
        return self._connection_to(broker.host, broker.port)

    async def bootstrap(self) -> Payload:
        """Fetch Metadata from the first bootstrap address that answers; returns it."""
        errors = []
        for host, port in self._bootstrap:
            try:
                return await self._refresh_from(self._connection_to(host, port), ())
            except (KafkaConnectionError, RequestTimedOutError, UnsupportedVersionError) as error:
                errors.append(f"{host}:{port}: {error}")
        raise KafkaConnectionError("no bootstrap server answered: " + "; ".join(errors))

    async def refresh_metadata(self, topics: Sequence[str] | None = ()) -> Payload:
        """Fetch Metadata through any reachable node and update the broker map; returns it.

        `topics` () asks for no topic (brokers only, on Metadata v1+), None for all topics.
        """
        last_error: Exception | None = None
        for connection in self._candidates():
            try:
                return await self._refresh_from(connection, topics)
            except (KafkaConnectionError, RequestTimedOutError, UnsupportedVersionError) as error:
                last_error = error
        raise KafkaConnectionError(f"no node answered Metadata: {last_error}")

    async def _refresh_from(
        self, connection: NodeConnection, topics: Sequence[str] | None
    ) -> Payload:
        await connection.connect()
        version = connection.version_for(ApiKey.METADATA)
        response: Any = await connection.send(_metadata_request(version, topics))
        self._brokers = {
            broker.node_id: BrokerAddress(
                broker.node_id, broker.host, broker.port, getattr(broker, "rack", None)
            )
            for broker in response.brokers
        }
        self.cluster_id = getattr(response, "cluster_id", None)
        self.controller_id = getattr(response, "controller_id", None)
        log.debug(
            "kafka_metadata_refreshed",
            via=connection.address,
            brokers=sorted(self._brokers),
            controller_id=self.controller_id,
        )
        result: Payload = response
        return result

    def _candidates(self) -> list[NodeConnection]:
        """Connected nodes first, then the other known brokers, then the bootstrap list."""
        known = [self._connection_to(b.host, b.port) for b in self._brokers.values()]
        random.shuffle(known)
        bootstrap = [self._connection_to(host, port) for host, port in self._bootstrap]
        ordered = [c for c in known if c.connected] + [c for c in known if not c.connected]
        return list(dict.fromkeys(ordered + bootstrap))

    async def send(
        self, node_id: int, request: Payload, *, timeout: float | None = None
    ) -> Payload | None:
        """Send `request` to broker `node_id`; see NodeConnection.send."""
        return await self.connection(node_id).send(request, timeout=timeout)

    async def send_any(self, request: Payload, *, timeout: float | None = None) -> Payload | None:
        """Send `request` to some reachable node, trying the next one if a connection fails."""
        last_error: Exception | None = None
        for connection in self._candidates():
            try:
                await connection.connect()
            except KafkaConnectionError as error:
                last_error = error
                continue
            return await connection.send(request, timeout=timeout)
        raise KafkaConnectionError(f"no node reachable: {last_error}")

    async def close(self) -> None:
        """Close every connection."""
        for connection in self._connections.values():
            await connection.close()
        self._connections.clear()

    async def __aenter__(self) -> Self:
        await self.bootstrap()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()


def _metadata_request(version: int, topics: Sequence[str] | None) -> Payload:
    schema = request_schema(ApiKey.METADATA, version)
    assert schema is not None
    topic_type = field_entity_type(schema, "topics")
    if topics is None:
        # v0 has no null topic list: there, an empty list means all topics.
        requested: tuple[Any, ...] | None = None if version >= 1 else ()
    else:
        requested = tuple(make_entity(topic_type, name=name, topic_id=None) for name in topics)
    request: Payload = make_entity(
        schema,
        topics=requested,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    return request
