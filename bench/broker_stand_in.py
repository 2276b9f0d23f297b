"""The broker's side of the controller APIs, played by tests and benchmarks.

A `BrokerStandIn` registers and heartbeats exactly as a broker does, reporting as its metadata
offset what a running node has replayed (what a broker replaying the log would report).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from bench.cluster import CLUSTER_ID, Cluster
from controller.client import (
    ControllerClient,
    broker_heartbeat_request,
    broker_registration_request,
)


def metadata(cluster: Cluster, node_id: int) -> dict[str, Any]:
    result: dict[str, Any] = cluster.nodes[node_id].get("/v1/metadata")
    return result


class BrokerStandIn:
    """Plays one broker towards the controller: registration, then heartbeats reporting the
    metadata offset the node at `a running node` has replayed (as a broker reports its own)."""

    def __init__(self, cluster: Cluster, client: ControllerClient, broker_id: int) -> None:
        self.cluster = cluster
        self.client = client
        self.broker_id = broker_id
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        self.heartbeats: asyncio.Task[None] | None = None
        self.last_heartbeat: Any = None

    async def register(self, previous_broker_epoch: int = -1) -> Any:
        response = await self.client.send(
            broker_registration_request(
                self.broker_id,
                CLUSTER_ID,
                self.incarnation_id,
                [("PLAINTEXT", "127.0.0.1", 19000 + self.broker_id)],
                previous_broker_epoch=previous_broker_epoch,
            )
        )
        if response.error_code == ErrorCode.none:
            self.broker_epoch = response.broker_epoch
        return response

    async def heartbeat(self, **flags: bool) -> Any:
        offset = await asyncio.to_thread(self._replayed_offset)
        response = await self.client.send(
            broker_heartbeat_request(self.broker_id, self.broker_epoch, offset, **flags)
        )
        self.last_heartbeat = response
        return response

    def _replayed_offset(self) -> int:
        """The offset of the last entry a running node replayed (Kafka's heartbeats report
        the last applied offset; the image's offset is the one after it)."""
        for node_id in self.cluster.running():
            with contextlib.suppress(OSError, ValueError):
                return int(metadata(self.cluster, node_id)["metadata_offset"]) - 1
        return -1

    def start_heartbeats(self, interval_s: float = 0.3) -> None:
        async def beat() -> None:
            while True:
                with contextlib.suppress(Exception):
                    await self.heartbeat()
                await asyncio.sleep(interval_s)

        self.heartbeats = asyncio.create_task(beat())

    async def stop_heartbeats(self) -> None:
        if self.heartbeats is not None:
            self.heartbeats.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.heartbeats
            self.heartbeats = None


async def unfenced(brokers: list[BrokerStandIn], timeout_s: float = 15.0) -> None:
    async def until_unfenced(broker: BrokerStandIn) -> None:
        while True:
            response = await broker.heartbeat()
            if response.error_code == ErrorCode.none and not response.is_fenced:
                return
            await asyncio.sleep(0.1)

    await asyncio.wait_for(asyncio.gather(*(until_unfenced(b) for b in brokers)), timeout_s)
