"""KafkaServer on real sockets: dispatch, ordering, refusals, bad input, flow control, shutdown."""

from __future__ import annotations

import asyncio
import datetime
import os
import random
import socket
import struct
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvloop
from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32Timedelta

from net import legacy_produce
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, PreEncodedResponse, RequestContext
from net.protocol import (
    decode_response,
    encode_body,
    encode_request,
    field_entity_type,
    make_entity,
    request_schema,
    response_schema,
)
from net.server import ConnectionLimits, KafkaServer
from tests.net.fake_broker import RawConnection, fake_broker
from tests.net.schemas import WithErrorCode, request_type, response_type


@dataclass
class Behaviour:
    """What the test handlers do; Heartbeat's group id selects the behaviour per request."""

    started: list[str] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    produced: list[Any] = field(default_factory=list)
    fetch_records: bytes = b""
    fetches: int = 0


def heartbeat(version: int, group_id: str) -> Any:
    return make_entity(
        request_type(ApiKey.HEARTBEAT, version),
        group_id=group_id,
        generation_id=1,
        member_id="m",
    )


def registry_for(behaviour: Behaviour) -> ApiRegistry:
    registry = ApiRegistry()

    async def handle_heartbeat(context: RequestContext, request: Any) -> Any:
        behaviour.started.append(request.group_id)
        command, _, argument = request.group_id.partition(":")
        if command == "sleep":
            await asyncio.sleep(float(argument))
        elif command == "wait":
            await behaviour.release.wait()
        elif command == "raise":
            raise RuntimeError("handler bug")
        elif command == "wrong-version":
            return make_entity(
                response_type(ApiKey.HEARTBEAT, 0),
                error_code=ErrorCode.none,
            )
        return make_entity(
            response_type(ApiKey.HEARTBEAT, context.header.api_version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
        )

    async def handle_list_offsets(context: RequestContext, request: Any) -> Any:
        raise RuntimeError("ListOffsets responses have no top-level error code")

    async def handle_produce(context: RequestContext, request: Any) -> Any:
        behaviour.produced.append(request)
        return None  # acks=0 in these tests: no response

    def handle_fetch(context: RequestContext, request: Any) -> PreEncodedResponse:
        behaviour.fetches += 1
        schema: Any = response_schema(ApiKey.FETCH, context.header.api_version)
        topic = field_entity_type(schema, "responses")
        partition = field_entity_type(topic, "partitions")
        response = make_entity(
            schema,
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            responses=(
                make_entity(
                    topic,
                    topic="t",
                    partitions=(
                        make_entity(
                            partition,
                            partition_index=0,
                            error_code=ErrorCode.none,
                            high_watermark=1,
                            aborted_transactions=None,
                            records=memoryview(behaviour.fetch_records),
                        ),
                    ),
                ),
            ),
        )
        return PreEncodedResponse(encode_body(response))

    registry.register(ApiKey.HEARTBEAT, handle_heartbeat, min_version=0, max_version=3)
    registry.register(ApiKey.LIST_OFFSETS, handle_list_offsets, min_version=1, max_version=7)
    registry.register(
        ApiKey.PRODUCE, handle_produce, min_version=3, max_version=10, advertised_min_version=0
    )
    registry.register(ApiKey.FETCH, handle_fetch, min_version=4, max_version=12)
    return registry


@dataclass
class Harness:
    server: KafkaServer
    behaviour: Behaviour

    async def connect(self) -> RawConnection:
        return await RawConnection.open(self.server.port)


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    behaviour = Behaviour()
    async with fake_broker(registry=registry_for(behaviour)) as (server, _recorded):
        yield Harness(server, behaviour)


async def assert_serves(port: int) -> None:
    """A fresh connection still gets ApiVersions answered."""
    connection = await RawConnection.open(port)
    request = make_entity(
        request_type(ApiKey.API_VERSIONS, 3),
        client_software_name="probe",
        client_software_version="1",
    )
    _correlation_id, response = await connection.request(request)
    assert isinstance(response, WithErrorCode)
    assert response.error_code == ErrorCode.none
    await connection.close()


async def test_api_versions_in_every_version_lists_the_registry(harness: Harness) -> None:
    connection = await harness.connect()
    for version in range(5):
        request = make_entity(
            request_type(ApiKey.API_VERSIONS, version),
            client_software_name="probe",
            client_software_version="1",
        )
        correlation_id, response = await connection.request(request)
        assert correlation_id == version + 1
        listed: Any = response
        assert [(k.api_key, k.min_version, k.max_version) for k in listed.api_keys] == [
            (0, 0, 10),
            (1, 4, 12),
            (2, 1, 7),
            (3, 0, 12),
            (12, 0, 3),
            (18, 0, 4),
        ]
    await connection.close()


async def test_api_versions_of_an_unknown_version_gets_the_v0_fallback(harness: Harness) -> None:
    connection = await harness.connect()
    # ApiVersions v7 from a future client: header v2, body this server cannot know.
    await connection.send_bytes(
        struct.pack(">ihhih", 19, 18, 7, 31, 6) + b"future\x00" + b"\x01\x02\x03\x04"
    )
    frame = await connection.read_frame()
    assert frame == struct.pack(">ihihhh", 31, 35, 1, 18, 0, 4)
    assert not await connection.closed_by_peer(timeout=0.1)
    await connection.close()


async def test_pipelined_requests_are_answered_in_order_when_handlers_finish_out_of_order(
    harness: Harness,
) -> None:
    connection = await harness.connect()
    delays = [0.2, 0.0, 0.1, 0.05, 0.0, 0.15, 0.0, 0.01]
    sent = [await connection.send(heartbeat(3, f"sleep:{delay}")) for delay in delays]
    received = []
    for _ in sent:
        frame = await connection.read_frame()
        received.append(struct.unpack_from(">i", frame)[0])
        response: Any = decode_response(frame, ApiKey.HEARTBEAT, 3)
        assert response.error_code == ErrorCode.none
    assert received == sent
    # They ran concurrently: all started before the slowest finished.
    assert len(harness.behaviour.started) == len(delays)
    await connection.close()


async def test_many_pipelined_requests_in_one_write_are_all_answered(harness: Harness) -> None:
    connection = await harness.connect()
    frames = []
    for correlation_id in range(500):
        frames.extend(encode_request(heartbeat(3, "fast"), correlation_id, "bulk"))
    await connection.send_bytes(b"".join(frames))
    for correlation_id in range(500):
        frame = await connection.read_frame()
        assert struct.unpack_from(">i", frame)[0] == correlation_id
    await connection.close()


async def test_unknown_api_key_closes_only_that_connection(harness: Harness) -> None:
    bystander = await harness.connect()
    connection = await harness.connect()
    await connection.send_bytes(struct.pack(">ihhih", 10, 999, 0, 1, -1))
    assert await connection.closed_by_peer()
    await bystander.request(heartbeat(3, "still here"))
    await bystander.close()
    await assert_serves(harness.server.port)


async def test_unsupported_version_is_answered_with_the_api_error_where_the_schema_allows(
    harness: Harness,
) -> None:
    connection = await harness.connect()
    _correlation_id, response = await connection.request(heartbeat(4, "too new"))
    assert isinstance(response, WithErrorCode)
    assert response.error_code == ErrorCode.unsupported_version
    assert harness.behaviour.started == []
    # The connection stays usable.
    _correlation_id, response = await connection.request(heartbeat(3, "ok"))
    assert isinstance(response, WithErrorCode)
    assert response.error_code == ErrorCode.none
    await connection.close()


async def test_unsupported_version_without_a_top_level_error_code_closes(harness: Harness) -> None:
    connection = await harness.connect()
    # Produce v11 exists in kio but this server serves 3..10, and Produce responses carry
    # errors only per partition: like Kafka, the server closes the connection.
    request = make_entity(
        request_type(ApiKey.PRODUCE, 11),
        acks=1,
        timeout=datetime.timedelta(seconds=1),
        topic_data=(),
        transactional_id=None,
    )
    await connection.send(request)
    assert await connection.closed_by_peer()
    assert harness.behaviour.produced == []
    await assert_serves(harness.server.port)


async def test_metadata_v13_has_a_top_level_error_code_so_it_is_refused_by_response(
    harness: Harness,
) -> None:
    connection = await harness.connect()
    request = make_entity(
        request_type(ApiKey.METADATA, 13),
        topics=None,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    _correlation_id, response = await connection.request(request)
    assert isinstance(response, WithErrorCode)
    assert response.error_code == ErrorCode.unsupported_version
    await connection.close()


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_produce_v0_to_v2_is_advertised_but_refused_per_partition(
    harness: Harness, version: int
) -> None:
    schema = legacy_produce.REQUEST_SCHEMAS[version]
    # As a plain `type`: mypy reads a frozen dataclass's class object as unhashable (it takes
    # the instances' __hash__ for the class's own), so field_entity_type's cache refuses it.
    schema_type: type = schema
    topic = field_entity_type(schema_type, "topic_data")
    partition = field_entity_type(topic, "partition_data")
    request = schema(
        acks=i16(1),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
        topic_data=(
            make_entity(
                topic, name="t", partition_data=(make_entity(partition, index=2, records=b"x"),)
            ),
        ),
    )
    connection = await harness.connect()
    correlation_id = await connection.send(request)
    frame = await connection.read_frame()
    assert struct.unpack_from(">i", frame)[0] == correlation_id
    response: Any = decode_response(frame, ApiKey.PRODUCE, version)
    (topic_response,) = response.responses
    (partition_response,) = topic_response.partition_responses
    assert (topic_response.name, partition_response.index) == ("t", 2)
    assert partition_response.error_code == ErrorCode.unsupported_version
    assert harness.behaviour.produced == []
    assert not await connection.closed_by_peer(timeout=0.1)
    await connection.close()


async def test_produce_with_acks_0_gets_no_response_and_later_requests_still_do(
    harness: Harness,
) -> None:
    schema: Any = request_schema(ApiKey.PRODUCE, 9)
    request = make_entity(
        schema, acks=0, timeout=datetime.timedelta(seconds=1), topic_data=(), transactional_id=None
    )
    connection = await harness.connect()
    await connection.send(request)
    correlation_id, _response = await connection.request(heartbeat(3, "after"))
    assert correlation_id == 2
    assert len(harness.behaviour.produced) == 1
    await connection.close()


async def test_a_failing_handler_answers_unknown_server_error_where_possible(
    harness: Harness,
) -> None:
    connection = await harness.connect()
    _correlation_id, response = await connection.request(heartbeat(3, "raise"))
    assert isinstance(response, WithErrorCode)
    assert response.error_code == ErrorCode.unknown_server_error
    _correlation_id, response = await connection.request(heartbeat(3, "wrong-version"))
    assert isinstance(response, WithErrorCode)
    assert response.error_code == ErrorCode.unknown_server_error
    # ListOffsets has no top-level error code: the only honest refusal is closing.
    list_offsets = make_entity(
        request_type(ApiKey.LIST_OFFSETS, 7),
        replica_id=-1,
        isolation_level=0,
        topics=(),
    )
    await connection.send(list_offsets)
    assert await connection.closed_by_peer()
    await assert_serves(harness.server.port)


async def test_pre_encoded_fetch_response_arrives_intact(harness: Harness) -> None:
    harness.behaviour.fetch_records = os.urandom(3 * 1024 * 1024)
    connection = await harness.connect()
    request = make_entity(
        request_type(ApiKey.FETCH, 12),
        replica_id=-1,
        max_wait=datetime.timedelta(0),
        min_bytes=1,
        topics=(),
        forgotten_topics_data=(),
        rack_id="",
    )
    _correlation_id, response = await connection.request(request)
    fetched: Any = response
    assert fetched.responses[0].partitions[0].records == harness.behaviour.fetch_records
    await connection.close()


async def test_metrics_hook_sees_every_answered_request() -> None:
    observed: list[tuple[int, int, float, int, int]] = []

    class Metrics:
        def observe(
            self,
            api_key: int,
            api_version: int,
            latency_seconds: float,
            request_bytes: int,
            response_bytes: int,
        ) -> None:
            observed.append((api_key, api_version, latency_seconds, request_bytes, response_bytes))

    behaviour = Behaviour()
    async with fake_broker(registry=registry_for(behaviour), metrics=Metrics()) as (server, _):
        connection = await RawConnection.open(server.port)
        await connection.request(heartbeat(3, "sleep:0.05"))
        await connection.close()
    ((api_key, version, latency, request_bytes, response_bytes),) = observed
    assert (api_key, version) == (ApiKey.HEARTBEAT, 3)
    assert 0.04 < latency < 2.0
    assert request_bytes == len(b"".join(encode_request_frame(heartbeat(3, "sleep:0.05")))) - 4
    # Heartbeat v3 is not flexible: size, header v0 (correlation id), throttle time, error.
    assert response_bytes == 4 + 4 + 4 + 2


def encode_request_frame(request: Any) -> list[Any]:
    return encode_request(request, 1, "raw")


FRAMING_ABUSE = {
    "negative size": struct.pack(">i", -1),
    "size above max_request_size": struct.pack(">i", 2 * 1024 * 1024),
    "size 0": struct.pack(">i", 0),
    "header shorter than 8 bytes": struct.pack(">i", 3) + b"\x00\x03\x00",
    "body garbage": struct.pack(">ihhih", 12, 12, 3, 1, -1) + b"\xff\xff",
    "client id past the frame": struct.pack(">ihhih", 10, 3, 1, 1, 500),
}


@pytest.mark.parametrize("abuse", FRAMING_ABUSE.values(), ids=FRAMING_ABUSE.keys())
async def test_framing_abuse_closes_that_connection_and_nothing_else(abuse: bytes) -> None:
    behaviour = Behaviour()
    async with fake_broker(registry=registry_for(behaviour), max_request_size=1024 * 1024) as (
        server,
        _,
    ):
        bystander = await RawConnection.open(server.port)
        connection = await RawConnection.open(server.port)
        await connection.send_bytes(abuse)
        assert await connection.closed_by_peer()
        await bystander.request(heartbeat(3, "unaffected"))
        await bystander.close()
        await assert_serves(server.port)


async def test_random_bytes_and_truncated_frames_never_hurt_the_server(harness: Harness) -> None:
    rng = random.Random(1234)
    bystander = await harness.connect()
    for round_number in range(40):
        connection = await harness.connect()
        if round_number % 2:
            junk = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 300)))
        else:
            # A valid frame cut short, then the client goes away.
            frame = b"".join(encode_request_frame(heartbeat(3, "cut")))
            junk = frame[: rng.randrange(1, len(frame))]
        await connection.send_bytes(junk)
        await connection.close()
    await bystander.request(heartbeat(3, "still answered"))
    await bystander.close()
    await assert_serves(harness.server.port)


async def test_a_slowloris_client_does_not_hold_up_other_connections(harness: Harness) -> None:
    slow = await harness.connect()
    frame = b"".join(encode_request_frame(heartbeat(3, "slow")))

    async def dribble() -> None:
        for byte in frame:
            await slow.send_bytes(bytes([byte]))
            await asyncio.sleep(0.01)

    dribbling = asyncio.create_task(dribble())
    fast = await harness.connect()
    start = time.monotonic()
    for _ in range(50):
        await fast.request(heartbeat(3, "fast"))
    assert time.monotonic() - start < 2.0
    assert not dribbling.done()
    await dribbling
    # The slow request is eventually whole and answered.
    correlation_id = struct.unpack_from(">i", await slow.read_frame())[0]
    assert correlation_id == 1
    await slow.close()
    await fast.close()


async def test_idle_connections_are_closed_and_busy_ones_are_not() -> None:
    behaviour = Behaviour()
    async with fake_broker(registry=registry_for(behaviour), connections_max_idle_ms=300) as (
        server,
        _,
    ):
        idle = await RawConnection.open(server.port)
        busy = await RawConnection.open(server.port)
        # A request in flight for longer than the idle timeout does not count as idle either.
        slow = asyncio.create_task(busy.request(heartbeat(3, "sleep:0.5")))
        start = time.monotonic()
        assert await idle.closed_by_peer(timeout=3.0)
        assert 0.25 < time.monotonic() - start < 2.0
        await slow
        for _ in range(3):
            await asyncio.sleep(0.1)
            await busy.request(heartbeat(3, "keepalive"))
        assert not await busy.closed_by_peer(timeout=0.05)
        await busy.close()


async def test_reading_pauses_while_too_many_requests_are_in_flight() -> None:
    behaviour = Behaviour()
    async with fake_broker(registry=registry_for(behaviour), max_in_flight_requests=3) as (
        server,
        _,
    ):
        connection = await RawConnection.open(server.port)
        for _ in range(10):
            await connection.send(heartbeat(3, "wait"))
        await asyncio.sleep(0.2)
        assert len(behaviour.started) == 3
        behaviour.release.set()
        received = [struct.unpack_from(">i", await connection.read_frame())[0] for _ in range(10)]
        assert received == list(range(1, 11))
        assert len(behaviour.started) == 10
        await connection.close()


async def test_reading_pauses_while_the_client_does_not_read_its_responses() -> None:
    behaviour = Behaviour(fetch_records=b"r" * (1024 * 1024))
    async with fake_broker(
        registry=registry_for(behaviour), write_buffer_high_water=256 * 1024
    ) as (server, _):
        connection = await RawConnection.open(server.port)
        request = make_entity(
            request_type(ApiKey.FETCH, 12),
            replica_id=-1,
            max_wait=datetime.timedelta(0),
            min_bytes=1,
            topics=(),
            forgotten_topics_data=(),
            rack_id="",
        )
        for _ in range(60):
            await connection.send(request)
        await asyncio.sleep(0.5)
        # 60 MiB of answers would be due; the kernel buffers and the write buffer hold a few.
        assert behaviour.fetches < 40
        for _ in range(60):
            frame = await connection.read_frame(timeout=10)
            assert len(frame) > 1024 * 1024
        assert behaviour.fetches == 60
        await connection.close()


async def test_close_lets_in_flight_requests_finish_and_refuses_new_connections() -> None:
    behaviour = Behaviour()
    async with fake_broker(registry=registry_for(behaviour)) as (server, _):
        port = server.port
        connection = await RawConnection.open(port)
        await connection.send(heartbeat(3, "sleep:0.3"))
        await asyncio.sleep(0.05)
        closing = asyncio.create_task(server.close(timeout=5.0))
        frame = await connection.read_frame()
        response: Any = decode_response(frame, ApiKey.HEARTBEAT, 3)
        assert response.error_code == ErrorCode.none
        assert await connection.closed_by_peer()
        await closing
        with pytest.raises(OSError):
            await RawConnection.open(port)


async def test_close_gives_up_on_requests_that_outlive_the_deadline() -> None:
    behaviour = Behaviour()
    async with fake_broker(registry=registry_for(behaviour)) as (server, _):
        connection = await RawConnection.open(server.port)
        await connection.send(heartbeat(3, "wait"))
        await asyncio.sleep(0.05)
        start = time.monotonic()
        await server.close(timeout=0.3)
        assert time.monotonic() - start < 2.0
        assert await connection.closed_by_peer()
        assert not server.connections


async def open_from(port: int, local_address: str) -> RawConnection:
    """A connection to 127.0.0.1 whose source address is `local_address` (any of 127/8)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(local_address, 0))
    return RawConnection(reader, writer)


async def test_connections_over_max_connections_are_closed_until_one_leaves() -> None:
    behaviour = Behaviour()
    limits = ConnectionLimits(max_connections=2)
    async with fake_broker(registry=registry_for(behaviour), limits=limits) as (server, _):
        first = await RawConnection.open(server.port)
        second = await open_from(server.port, "127.0.0.2")
        refused = await RawConnection.open(server.port)
        assert await refused.closed_by_peer(timeout=2.0)
        for connection in (first, second):
            await connection.request(heartbeat(3, "still served"))
        await first.close()
        await asyncio.sleep(0.1)
        await assert_serves(server.port)
        await second.close()


async def test_connections_over_max_connections_per_ip_are_closed_other_ips_are_not() -> None:
    behaviour = Behaviour()
    limits = ConnectionLimits(max_connections_per_ip=2)
    async with fake_broker(registry=registry_for(behaviour), limits=limits) as (server, _):
        held = [await RawConnection.open(server.port) for _ in range(2)]
        refused = await RawConnection.open(server.port)
        assert await refused.closed_by_peer(timeout=2.0)
        other = await open_from(server.port, "127.0.0.2")
        await other.request(heartbeat(3, "another address"))
        for connection in held:
            await connection.request(heartbeat(3, "still served"))
        assert dict(server.connections_per_ip) == {"127.0.0.1": 2, "127.0.0.2": 1}
        await held[0].close()
        await asyncio.sleep(0.1)
        await assert_serves(server.port)
        for connection in (held[1], other):
            await connection.close()


async def test_max_connections_per_ip_overrides_name_addresses() -> None:
    behaviour = Behaviour()
    limits = ConnectionLimits(
        max_connections_per_ip=1, max_connections_per_ip_overrides={"127.0.0.2": 3}
    )
    async with fake_broker(registry=registry_for(behaviour), limits=limits) as (server, _):
        overridden = [await open_from(server.port, "127.0.0.2") for _ in range(3)]
        for connection in overridden:
            await connection.request(heartbeat(3, "overridden"))
        refused = await open_from(server.port, "127.0.0.2")
        assert await refused.closed_by_peer(timeout=2.0)
        default = await RawConnection.open(server.port)
        await default.request(heartbeat(3, "default"))
        refused = await RawConnection.open(server.port)
        assert await refused.closed_by_peer(timeout=2.0)
        for connection in [*overridden, default]:
            await connection.close()


async def test_reading_pauses_on_every_connection_while_the_listener_queues_too_many_bytes() -> (
    None
):
    behaviour = Behaviour()
    # Below one heartbeat request: one request at a time on the whole listener.
    limits = ConnectionLimits(queued_max_request_bytes=10)
    async with fake_broker(registry=registry_for(behaviour), limits=limits) as (server, _):
        connections = [await RawConnection.open(server.port) for _ in range(3)]
        for connection in connections:
            await connection.send(heartbeat(3, "wait"))
        await asyncio.sleep(0.3)
        assert behaviour.started == ["wait"]
        assert server.queued_bytes > 10
        behaviour.release.set()
        for connection in connections:
            response: Any = decode_response(await connection.read_frame(), ApiKey.HEARTBEAT, 3)
            assert response.error_code == ErrorCode.none
        assert len(behaviour.started) == 3
        assert server.queued_bytes == 0
        for connection in connections:
            await connection.close()


def test_the_server_works_the_same_on_uvloop() -> None:
    async def scenario() -> None:
        behaviour = Behaviour()
        async with fake_broker(registry=registry_for(behaviour)) as (server, _):
            connection = await RawConnection.open(server.port)
            sent = [await connection.send(heartbeat(3, f"sleep:{d}")) for d in (0.1, 0, 0.05)]
            received = [struct.unpack_from(">i", await connection.read_frame())[0] for _ in sent]
            assert received == sent
            await connection.send_bytes(struct.pack(">i", -7))
            assert await connection.closed_by_peer()
            await assert_serves(server.port)

    uvloop.run(scenario())


async def test_the_answer_to_the_only_request_in_flight_is_written_when_its_handler_returns(
    harness: Harness,
) -> None:
    # A blocking socket read without the event loop: the test sees what reached the kernel.
    with socket.create_connection(("127.0.0.1", harness.server.port)) as client:
        client.sendall(b"".join(encode_request(heartbeat(3, "wait"), 1, "raw")))
        while not harness.behaviour.started:
            await asyncio.sleep(0.001)
        harness.behaviour.release.set()
        # The handler runs on the next iteration (before this test does) and its answer goes
        # out then: a follower's fetch or an acks=all produce waits for no further iteration.
        await asyncio.sleep(0)
        size = struct.unpack(">i", client.recv(4, socket.MSG_DONTWAIT))[0]
        frame = client.recv(size, socket.MSG_DONTWAIT)
    assert struct.unpack_from(">i", frame)[0] == 1
    response: Any = decode_response(frame, ApiKey.HEARTBEAT, 3)
    assert response.error_code == ErrorCode.none


async def test_connection_ids_are_unique_across_every_listener_of_the_process() -> None:
    # A handler may key per-connection state on the id (the produce path keeps a
    # connection's appends in order by it): two listeners' connections never share one.
    request = make_entity(request_type(ApiKey.METADATA, 1), topics=None)
    async with fake_broker() as (first, first_seen), fake_broker() as (second, second_seen):
        connections = [
            await RawConnection.open(port)
            for port in (first.port, second.port, first.port, second.port)
        ]
        for connection in connections:
            await connection.request(request)
            await connection.close()
    ids = [context.connection_id for context, _ in first_seen.requests + second_seen.requests]
    assert len(ids) == 4
    assert len(set(ids)) == 4
