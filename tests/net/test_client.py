"""NodeConnection and ClusterClient against real servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import itertools
import random
import socket
import struct
import time
import typing
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3.response import FindCoordinatorResponse

from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.client import (
    ClusterClient,
    KafkaConnectionError,
    NodeConnection,
    RequestTimedOutError,
    UnsupportedVersionError,
    _ClientProtocol,
    parse_bootstrap_servers,
)
from net.protocol import (
    api_versions_error_frame,
    encode_response,
    make_entity,
    read_request_header,
    response_schema,
)
from net.server import KafkaServer
from tests.net.fake_broker import CLUSTER_ID, fake_broker
from tests.net.schemas import request_type, response_type


def echo_registry(produced: list[Any] | None = None) -> ApiRegistry:
    """FindCoordinator v0-3 answers with host = the request's key, after `sleep:<s>` if asked;
    Produce v3-10 records the request and answers nothing (acks=0)."""
    registry = ApiRegistry()

    async def find_coordinator(context: RequestContext, request: Any) -> Any:
        command, _, argument = request.key.partition(":")
        if command == "sleep":
            await asyncio.sleep(float(argument.partition("#")[0]))
        return make_entity(
            response_type(ApiKey.FIND_COORDINATOR, context.header.api_version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            error_message=None,
            node_id=1,
            host=request.key,
            port=9092,
        )

    async def produce(context: RequestContext, request: Any) -> None:
        if produced is not None:
            produced.append(request)

    registry.register(ApiKey.FIND_COORDINATOR, find_coordinator, min_version=0, max_version=3)
    registry.register(ApiKey.PRODUCE, produce, min_version=3, max_version=10)
    return registry


def find_coordinator(connection: NodeConnection, key: str) -> Any:
    version = connection.version_for(ApiKey.FIND_COORDINATOR)
    return make_entity(
        request_type(ApiKey.FIND_COORDINATOR, version),
        key=key,
        key_type=0,
    )


@pytest.fixture
async def echo_server() -> AsyncIterator[KafkaServer]:
    async with fake_broker(registry=echo_registry()) as (server, _recorded):
        yield server


def reserve_port() -> int:
    """A port nothing listens on (for a moment): bound, read, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_connect_negotiates_versions_and_picks_the_highest_common_one(
    echo_server: KafkaServer,
) -> None:
    async with NodeConnection("127.0.0.1", echo_server.port) as connection:
        assert connection.api_versions == {0: (3, 10), 3: (0, 12), 10: (0, 3), 18: (0, 4)}
        assert connection.version_for(ApiKey.METADATA) == 12
        assert connection.version_for(ApiKey.METADATA, max_version=5) == 5
        assert connection.version_for(ApiKey.FIND_COORDINATOR) == 3
        assert connection.version_for(ApiKey.PRODUCE, min_version=2, max_version=7) == 7
        with pytest.raises(UnsupportedVersionError):
            connection.version_for(ApiKey.PRODUCE, max_version=2)
        with pytest.raises(UnsupportedVersionError):
            connection.version_for(ApiKey.FETCH)
        response: Any = await connection.send(find_coordinator(connection, "hello"))
        assert response.host == "hello"


async def test_pipelined_requests_are_matched_to_their_responses(
    echo_server: KafkaServer,
) -> None:
    rng = random.Random(7)
    async with NodeConnection("127.0.0.1", echo_server.port) as connection:
        keys = [f"sleep:{rng.choice([0, 0.001, 0.01, 0.03])}#{n}" for n in range(200)]
        responses = await asyncio.gather(
            *(connection.send(find_coordinator(connection, key)) for key in keys)
        )
        # FindCoordinator v3, the highest the echo registry serves.
        hosts = [r.host for r in responses if isinstance(r, FindCoordinatorResponse)]
        assert hosts == keys


async def test_a_timed_out_request_fails_and_the_next_one_reconnects(
    echo_server: KafkaServer,
) -> None:
    async with NodeConnection("127.0.0.1", echo_server.port) as connection:
        waiting = asyncio.create_task(connection.send(find_coordinator(connection, "sleep:0.1")))
        start = time.monotonic()
        with pytest.raises(RequestTimedOutError):
            await connection.send(find_coordinator(connection, "sleep:5"), timeout=0.2)
        assert time.monotonic() - start < 1.0
        # Responses come in order, so the connection behind a stuck request is given up.
        assert not connection.connected
        with pytest.raises(KafkaConnectionError):
            await waiting
        response: Any = await connection.send(find_coordinator(connection, "again"))
        assert response.host == "again"


async def test_a_dropped_connection_fails_in_flight_requests_then_reconnects() -> None:
    port = reserve_port()
    registry = echo_registry()
    server = KafkaServer(registry, port=port)
    await server.start()
    connection = NodeConnection("127.0.0.1", port, reconnect_backoff=0.01)
    try:
        pending = asyncio.create_task(connection.send(find_coordinator_v3("sleep:5")))
        await asyncio.sleep(0.1)
        await server.close(timeout=0.1)
        with pytest.raises(KafkaConnectionError):
            await pending
        server = KafkaServer(registry, port=port)
        await server.start()
        response: Any = await connection.send(find_coordinator_v3("back"))
        assert response.host == "back"
    finally:
        await connection.close()
        await server.close(timeout=0.1)


def find_coordinator_v3(key: str) -> Any:
    return make_entity(
        request_type(ApiKey.FIND_COORDINATOR, 3),
        key=key,
        key_type=0,
    )


async def test_reconnect_attempts_back_off_exponentially_until_the_node_is_up() -> None:
    port = reserve_port()
    connection = NodeConnection("127.0.0.1", port, reconnect_backoff=0.1, reconnect_backoff_max=0.3)
    attempts = []
    for _ in range(4):
        with pytest.raises(KafkaConnectionError):
            await connection.connect()
        attempts.append(time.monotonic())
    gaps = [later - earlier for earlier, later in itertools.pairwise(attempts)]
    # 0.1, 0.2, then capped at 0.3, each with up to 20 % jitter.
    assert 0.08 <= gaps[0] < 0.2
    assert 0.16 <= gaps[1] < 0.35
    assert 0.24 <= gaps[2] < 0.45
    async with fake_broker(registry=echo_registry(), port=port) as (server, _):
        assert server.port == port
        await connection.connect()
        assert connection.connected
        await connection.close()
    with pytest.raises(KafkaConnectionError):
        await connection.send(find_coordinator_v3("closed for good"))


async def test_a_request_s_timeout_bounds_the_connection_it_needs() -> None:
    # A peer that accepts connections and never answers ApiVersions (a stalled node).
    accepted: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    silent = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    connection = NodeConnection("127.0.0.1", port, connect_timeout=10.0, reconnect_backoff=2.0)
    try:
        start = time.monotonic()
        with pytest.raises(KafkaConnectionError):
            await connection.send(find_coordinator_v3("stalled"), timeout=0.3)
        assert time.monotonic() - start < 1.0  # not the 10 s connect_timeout
        # Backed off for longer than the next request may wait: it fails at once.
        start = time.monotonic()
        with pytest.raises(KafkaConnectionError, match="backed off"):
            await connection.send(find_coordinator_v3("still stalled"), timeout=0.3)
        assert time.monotonic() - start < 0.1
    finally:
        await connection.close()
        for writer in accepted:
            writer.close()
        silent.close()
        await silent.wait_closed()


async def test_produce_with_acks_0_returns_at_once_without_a_response() -> None:
    produced: list[Any] = []
    async with (
        fake_broker(registry=echo_registry(produced)) as (server, _),
        NodeConnection("127.0.0.1", server.port) as connection,
    ):
        request = make_entity(
            request_type(ApiKey.PRODUCE, connection.version_for(ApiKey.PRODUCE)),
            acks=0,
            timeout=datetime.timedelta(seconds=1),
            topic_data=(),
            transactional_id=None,
        )
        assert await connection.send(request) is None
        # The next request's answer proves the first one was read and handled.
        response: Any = await connection.send(find_coordinator(connection, "after"))
        assert response.host == "after"
        assert len(produced) == 1


@contextlib.asynccontextmanager
async def old_api_versions_server(sent_versions: list[int]) -> AsyncIterator[int]:
    """A server knowing ApiVersions 0-2 only: newer versions get the v0 UNSUPPORTED_VERSION
    fallback, as a Kafka 2.3 broker would answer."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                _api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
                sent_versions.append(version)
                if version > 2:
                    frames = api_versions_error_frame(
                        correlation_id, ErrorCode.unsupported_version, [(18, 0, 2)]
                    )
                else:
                    assert read_request_header(frame).api_key == ApiKey.API_VERSIONS
                    schema: Any = response_schema(ApiKey.API_VERSIONS, version)
                    entry = schema.__dataclass_fields__["api_keys"].type.__args__[0]
                    response = make_entity(
                        schema,
                        error_code=ErrorCode.none,
                        api_keys=(
                            entry(api_key=ApiKey.METADATA, min_version=0, max_version=5),
                            entry(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=2),
                        ),
                        throttle_time=datetime.timedelta(0),
                    )
                    frames = encode_response(correlation_id, response)
                writer.write(b"".join(frames))
                await writer.drain()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def test_api_versions_falls_back_to_the_version_the_node_lists() -> None:
    sent: list[int] = []
    async with (
        old_api_versions_server(sent) as port,
        NodeConnection("127.0.0.1", port) as connection,
    ):
        assert sent == [4, 2]
        assert connection.api_versions == {3: (0, 5), 18: (0, 2)}
        assert connection.version_for(ApiKey.METADATA) == 5


async def test_cluster_client_bootstraps_past_dead_addresses_and_routes_by_node_id() -> None:
    async with (
        fake_broker(node_id=2) as (second, second_requests),
        fake_broker(node_id=1, peers=[(2, "127.0.0.1", second.port)]) as (first, _),
    ):
        dead = reserve_port()
        client = ClusterClient(
            f"127.0.0.1:{dead}, 127.0.0.1:{first.port}",
            client_id="cluster-test",
            reconnect_backoff=0.01,
        )
        async with client:
            assert sorted(client.brokers) == [1, 2]
            assert client.brokers[2].port == second.port
            assert client.cluster_id == CLUSTER_ID
            assert client.controller_id == 1
            connection = client.connection(2)
            await connection.connect()
            request = make_entity(
                request_type(ApiKey.METADATA, connection.version_for(ApiKey.METADATA)),
                topics=(),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
            response: Any = await client.send(2, request)
            assert [broker.node_id for broker in response.brokers] == [2]
            (context, _request) = second_requests.requests[-1]
            assert context.header.client_id == "cluster-test"
            assert await client.send_any(request) is not None
            refreshed: Any = await client.refresh_metadata()
            assert {broker.node_id for broker in refreshed.brokers} <= {1, 2}
            with pytest.raises(KeyError):
                client.connection(3)


async def test_cluster_client_reports_when_no_bootstrap_server_answers() -> None:
    client = ClusterClient([f"127.0.0.1:{reserve_port()}"], connect_timeout=1.0)
    with pytest.raises(KafkaConnectionError, match="no bootstrap server answered"):
        await client.bootstrap()
    await client.close()


def test_bootstrap_servers_parse() -> None:
    assert parse_bootstrap_servers("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_bootstrap_servers(["[::1]:9092"]) == [("::1", 9092)]
    for bad in ("", "nohost", "a:b", ":1"):
        with pytest.raises(ValueError):
            parse_bootstrap_servers(bad)


class _RecordingTransport:
    """A real loopback transport that also records each write call, in order."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self.writes: list[bytes] = []

    def writelines(self, frames: Any) -> None:
        self.writes.append(b"".join(frames))
        self._transport.writelines(frames)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


async def test_a_lone_request_is_written_at_once_and_concurrent_ones_together() -> None:
    received = bytearray()

    async def read_all(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            received.extend(data)
        writer.close()

    server = await asyncio.start_server(read_all, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    protocol = _ClientProtocol("test", 1 << 20)
    transport, _ = await asyncio.get_running_loop().create_connection(
        lambda: protocol, "127.0.0.1", port
    )
    recording = _RecordingTransport(transport)
    protocol._transport = typing.cast(asyncio.Transport, recording)
    try:
        # The only request awaiting an answer (a replica fetcher's Fetch): no loop turn first.
        protocol.expect(1, ApiKey.FETCH, 12)
        protocol.write([b"one-", b"request"])
        assert recording.writes == [b"one-request"]
        # Two awaiting answers: gathered into one write on the next loop iteration.
        protocol.expect(2, ApiKey.FETCH, 12)
        protocol.write([b"second"])
        protocol.expect(3, ApiKey.FETCH, 12)
        protocol.write([b"third"])
        assert recording.writes == [b"one-request"]
        await asyncio.sleep(0)
        assert recording.writes == [b"one-request", b"secondthird"]
        deadline = time.monotonic() + 10
        while len(received) < len(b"one-requestsecondthird") and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert bytes(received) == b"one-requestsecondthird"
    finally:
        transport.close()
        server.close()
        await server.wait_closed()
