"""Wire-protocol benchmarks; prints one JSON line per measurement.

Run from the repository root: `.venv/bin/python -m bench.protocol [--quick]`.

* `round_trips`: small requests (ApiVersions v3, Metadata v12 of an empty one-broker cluster)
  answered per second on ONE connection, with 1 and 16 requests in flight, by a KafkaServer
  running in a separate process (uvloop on both sides). Target: >= 20,000/s pipelined.
* `produce_parse`: the server's decode of a 1 MiB Produce v9 request frame (one partition),
  next to the cost of copying 1 MiB, the floor for anything that yields the records as bytes.
* `fetch_build`: encoding a FetchResponse v12 holding 1 MiB of records into a list of buffers
  (small fields encoded, record bytes kept as-is), for 1 x 1 MiB, 16 x 64 KiB, 256 x 4 KiB
  partitions. Target for both: < 200 µs beyond the copy of the bytes.

Every figure is the median of several runs. The server process is stopped at the end, also when
the benchmark fails.
"""

import argparse
import asyncio
import datetime
import functools
import json
import logging
import os
import statistics
import subprocess
import sys
import time
import typing
from collections.abc import Callable
from typing import Any

import structlog
import uvloop
from kio.schema.errors import ErrorCode

from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.client import NodeConnection
from net.protocol import (
    decode_request,
    encode_request,
    encode_response,
    field_entity_type,
    make_entity,
    request_schema,
    response_schema,
)
from net.server import KafkaServer

MIB = 1024 * 1024


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def metadata_response(version: int, port: int) -> Any:
    schema: Any = response_schema(ApiKey.METADATA, version)
    broker = field_entity_type(schema, "brokers")
    return make_entity(
        schema,
        throttle_time=datetime.timedelta(0),
        brokers=(make_entity(broker, node_id=1, host="127.0.0.1", port=port, rack=None),),
        cluster_id="bench",
        controller_id=1,
        topics=(),
    )


async def serve() -> None:
    """The server process: answers ApiVersions and Metadata until stdin closes."""
    # Logs go to stderr so stdout carries only the port line.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    registry = ApiRegistry()
    server = KafkaServer(registry)

    # A plain function, as a broker answers Metadata from its metadata cache without waiting.
    def handle_metadata(context: RequestContext, request: Any) -> Any:
        return metadata_response(context.header.api_version, server.port)

    registry.register(ApiKey.METADATA, handle_metadata, min_version=0, max_version=12)
    await server.start()
    print(server.port, flush=True)
    loop = asyncio.get_running_loop()
    # The parent closes our stdin when done (or dies): that is the signal to stop.
    await loop.run_in_executor(None, sys.stdin.read)
    await server.close(timeout=1.0)


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def round_trips(port: int, request: Any, in_flight: int, seconds: float) -> float:
    async with NodeConnection("127.0.0.1", port) as connection:
        for _ in range(200):  # warm up
            await connection.send(request)
        done = 0
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal done
            while time.perf_counter() < deadline:
                await connection.send(request)
                done += 1

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        return done / (time.perf_counter() - start)


class PipelinedLoad(asyncio.Protocol):
    """A load generator as cheap as it gets: keeps `in_flight` copies of one pre-encoded
    request frame outstanding and only counts response frames, so the rate measured is the
    server's, not the client's."""

    def __init__(self, frame: bytes, in_flight: int, seconds: float) -> None:
        self.frame = frame
        self.in_flight = in_flight
        self.seconds = seconds
        self.buffer = bytearray()
        self.answered = 0
        self.outstanding = 0
        self.finished: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        self.started = self.deadline = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = typing.cast(asyncio.Transport, transport)
        self.started = time.perf_counter()
        self.deadline = self.started + self.seconds
        self.outstanding = self.in_flight
        self.transport.write(self.frame * self.in_flight)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        replies = 0
        while len(self.buffer) >= 4:
            size = int.from_bytes(self.buffer[:4], "big")
            if len(self.buffer) < 4 + size:
                break
            del self.buffer[: 4 + size]
            replies += 1
        self.answered += replies
        self.outstanding -= replies
        assert self.transport is not None
        if time.perf_counter() < self.deadline:
            self.outstanding += replies
            self.transport.write(self.frame * replies)
        elif self.outstanding == 0 and not self.finished.done():
            self.finished.set_result(self.answered / (time.perf_counter() - self.started))
            self.transport.close()


async def pipelined_load(port: int, request: Any, in_flight: int, seconds: float) -> float:
    frame = b"".join(encode_request(request, 1, "bench"))
    loop = asyncio.get_running_loop()
    _, load = await loop.create_connection(
        lambda: PipelinedLoad(frame, in_flight, seconds), "127.0.0.1", port
    )
    return await load.finished


def bench_round_trips(runs: int, seconds: float) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.protocol", "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=os.getcwd(),
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        api_versions_v3 = request_schema(ApiKey.API_VERSIONS, 3)
        metadata_v12 = request_schema(ApiKey.METADATA, 12)
        assert api_versions_v3 is not None and metadata_v12 is not None
        requests = {
            "ApiVersions v3": make_entity(
                api_versions_v3,
                client_software_name="bench",
                client_software_version="1",
            ),
            "Metadata v12": make_entity(
                metadata_v12,
                topics=(),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        }
        cases = [
            (name, request, in_flight, client)
            for name, request in requests.items()
            for in_flight in (1, 16)
            for client in ("NodeConnection", "raw_pipelined")
            if client == "NodeConnection" or in_flight > 1
        ]
        for name, request, in_flight, client in cases:
            load = round_trips if client == "NodeConnection" else pipelined_load
            rates, server_cpu, client_cpu = [], [], []
            for _ in range(runs):
                server_before = process_cpu_seconds(server.pid)
                client_before = time.process_time()
                start = time.perf_counter()
                rate = uvloop.run(load(port, request, in_flight, seconds))
                requests_done = rate * (time.perf_counter() - start)
                rates.append(rate)
                server_cpu.append((process_cpu_seconds(server.pid) - server_before) / requests_done)
                client_cpu.append((time.process_time() - client_before) / requests_done)
            emit(
                bench="round_trips",
                request=name,
                client=client,
                in_flight=in_flight,
                connections=1,
                requests_per_second=round(statistics.median(rates)),
                runs=[round(rate) for rate in rates],
                server_cpu_us_per_request=round(statistics.median(server_cpu) * 1e6, 1),
                client_cpu_us_per_request=round(statistics.median(client_cpu) * 1e6, 1),
            )
    finally:
        if server.stdin is not None:
            server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def produce_frame(record_bytes: int) -> bytes:
    schema: Any = request_schema(ApiKey.PRODUCE, 9)
    topic = field_entity_type(schema, "topic_data")
    partition = field_entity_type(topic, "partition_data")
    request = make_entity(
        schema,
        transactional_id=None,
        acks=-1,
        timeout=datetime.timedelta(seconds=30),
        topic_data=(
            make_entity(
                topic,
                name="bench",
                partition_data=(make_entity(partition, index=0, records=os.urandom(record_bytes)),),
            ),
        ),
    )
    return b"".join(encode_request(request, 1, "bench"))[4:]


def bench_produce_parse(repeat: int) -> None:
    frame = produce_frame(MIB)
    parse = median_seconds(lambda: decode_request(frame), repeat)
    view = memoryview(frame)
    copy = median_seconds(lambda: bytes(view), repeat)
    emit(
        bench="produce_parse",
        request_bytes=len(frame),
        parse_us=round(parse * 1e6, 1),
        copy_us=round(copy * 1e6, 1),
        beyond_copy_us=round((parse - copy) * 1e6, 1),
    )


def fetch_response(partitions: int, records: memoryview) -> Any:
    schema: Any = response_schema(ApiKey.FETCH, 12)
    topic = field_entity_type(schema, "responses")
    partition = field_entity_type(topic, "partitions")
    size = len(records) // partitions
    return make_entity(
        schema,
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        session_id=0,
        responses=(
            make_entity(
                topic,
                topic="bench",
                partitions=tuple(
                    make_entity(
                        partition,
                        partition_index=index,
                        error_code=ErrorCode.none,
                        high_watermark=1000,
                        last_stable_offset=1000,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=records[index * size : (index + 1) * size],
                    )
                    for index in range(partitions)
                ),
            ),
        ),
    )


def bench_fetch_build(repeat: int) -> None:
    records = memoryview(os.urandom(MIB))
    copy = median_seconds(lambda: bytes(records), repeat)
    for partitions in (1, 16, 256):
        response = fetch_response(partitions, records)
        build = median_seconds(functools.partial(encode_response, 1, response), repeat)
        buffers = encode_response(1, response)
        emit(
            bench="fetch_build",
            partitions=partitions,
            record_bytes=len(records),
            buffers=len(buffers),
            build_us=round(build * 1e6, 1),
            copy_of_records_us=round(copy * 1e6, 1),
            per_partition_us=round(build * 1e6 / partitions, 2),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter runs")
    args = parser.parse_args()
    if args.serve:
        uvloop.run(serve())
        return
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    runs, seconds, repeat = (3, 1.0, 50) if args.quick else (5, 3.0, 200)
    bench_produce_parse(repeat)
    bench_fetch_build(repeat)
    bench_round_trips(runs, seconds)


if __name__ == "__main__":
    main()
