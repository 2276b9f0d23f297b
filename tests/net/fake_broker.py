"""A fake broker (our KafkaServer with a Metadata handler) and a raw-frame client to poke it."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import struct
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kio.static.protocol import Payload

from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.protocol import (
    decode_response,
    encode_request,
    field_entity_type,
    make_entity,
    response_schema,
)
from net.server import KafkaServer

CLUSTER_ID = "fake-cluster"


@dataclass
class Recorded:
    """Every request a fake broker handled, as (context, decoded kio request)."""

    requests: list[tuple[RequestContext, Any]] = field(default_factory=list)

    def of(self, api_key: int) -> list[tuple[RequestContext, Any]]:
        return [(c, r) for c, r in self.requests if c.header.api_key == api_key]


def metadata_response(
    version: int, brokers: Sequence[tuple[int, str, int]], controller_id: int
) -> Payload:
    """Metadata of `version` for a cluster of `brokers` (node id, host, port) and no topic."""
    schema: Any = response_schema(ApiKey.METADATA, version)
    broker_type = field_entity_type(schema, "brokers")
    response: Payload = make_entity(
        schema,
        throttle_time=datetime.timedelta(0),
        brokers=tuple(
            make_entity(broker_type, node_id=node_id, host=host, port=port, rack=None)
            for node_id, host, port in brokers
        ),
        cluster_id=CLUSTER_ID,
        controller_id=controller_id,
        topics=(),
    )
    return response


@contextlib.asynccontextmanager
async def fake_broker(
    node_id: int = 1,
    peers: Sequence[tuple[int, str, int]] = (),
    registry: ApiRegistry | None = None,
    **server_options: Any,
) -> AsyncIterator[tuple[KafkaServer, Recorded]]:
    """A started KafkaServer on 127.0.0.1 that answers Metadata (v0-12) for a one-broker (plus
    `peers`) cluster whose controller is itself; closed on exit."""
    registry = registry or ApiRegistry()
    recorded = Recorded()
    server = KafkaServer(registry, host="127.0.0.1", **server_options)

    def handle_metadata(context: RequestContext, request: Any) -> Payload:
        recorded.requests.append((context, request))
        brokers = [(node_id, "127.0.0.1", server.port), *peers]
        return metadata_response(context.header.api_version, brokers, node_id)

    registry.register(ApiKey.METADATA, handle_metadata, min_version=0, max_version=12)
    await server.start()
    try:
        yield server, recorded
    finally:
        await server.close(timeout=2.0)


class RawConnection:
    """A plain TCP connection speaking size-prefixed frames, for feeding a server any bytes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._correlation_id = 0

    @classmethod
    async def open(cls, port: int) -> RawConnection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def send_bytes(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, request: Payload, client_id: str | None = "raw") -> int:
        """Send a request frame; returns its correlation id."""
        self._correlation_id += 1
        frames = encode_request(request, self._correlation_id, client_id)
        await self.send_bytes(b"".join(frames))
        return self._correlation_id

    async def read_frame(self, timeout: float = 5.0) -> bytes:
        """The next response frame without its size prefix."""
        size_bytes = await asyncio.wait_for(self.reader.readexactly(4), timeout)
        (size,) = struct.unpack(">i", size_bytes)
        return await asyncio.wait_for(self.reader.readexactly(size), timeout)

    async def request(self, request: Payload, timeout: float = 5.0) -> tuple[int, Payload]:
        """Send `request`, read one frame; returns (correlation id, decoded response)."""
        await self.send(request)
        frame = await self.read_frame(timeout)
        correlation_id: int = struct.unpack_from(">i", frame)[0]
        return correlation_id, decode_response(frame, request.__api_key__, request.__version__)

    async def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """Whether the server closes the connection (EOF or reset) within `timeout`, reading
        and discarding anything it sends first."""
        try:
            async with asyncio.timeout(timeout):
                while await self.reader.read(65536):
                    pass
        except TimeoutError:
            return False
        except ConnectionError:
            return True
        return True

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()
