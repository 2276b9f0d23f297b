"""A leader's ISR change requests: AlterPartition to the active controller.

One request in flight per partition (`Partition.pending_isr`), fenced by the leader epoch and
partition epoch the leader knows. The controller's answer only says whether the change was
accepted: the ISR changes when the metadata log says so and the partition applies it. A refusal
(a stale partition epoch after a change made meanwhile, a fenced leader epoch, an ineligible
replica) clears the pending change, so the leader asks again from the new state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from broker.partition import Partition
from controller.client import ControllerClient, NoControllerError
from controller.wire import ALTER_PARTITION_KEY
from net.protocol import field_entity_type, make_entity, request_schema

log = structlog.get_logger(__name__)

# v2: topic ids and plain broker ids (v3's member broker epochs are not tracked yet).
ALTER_PARTITION_VERSION = 2


class IsrChangeSender:
    """Sends the ISR changes of the partitions broker `broker_id` leads."""

    def __init__(
        self, client: ControllerClient, broker_id: int, broker_epoch: Callable[[], int]
    ) -> None:
        self._client = client
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._tasks: set[asyncio.Task[None]] = set()

    def propose(self, partition: Partition, new_isr: tuple[int, ...], reason: str) -> None:
        assert partition.state is not None
        partition.pending_isr = new_isr
        partition.pending_partition_epoch = partition.state.partition_epoch
        log.info(
            "isr_change_requested",
            topic=partition.topic,
            partition=partition.partition_id,
            reason=reason,
            isr=list(partition.state.isr),
            new_isr=list(new_isr),
            leader_epoch=partition.leader_epoch,
            partition_epoch=partition.state.partition_epoch,
        )
        task = asyncio.create_task(self._send(partition, new_isr))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        state = partition.state
        assert state is not None
        try:
            response = await self._client.send(self._request(partition, new_isr))
        except NoControllerError as unanswered:
            log.warning("isr_change_unanswered", topic=partition.topic, error=str(unanswered))
            self._clear(partition, new_isr)
            return
        error = ErrorCode(response.error_code)
        if error is ErrorCode.none and response.topics and response.topics[0].partitions:
            error = ErrorCode(response.topics[0].partitions[0].error_code)
        log.info(
            "isr_change_answered",
            topic=partition.topic,
            partition=partition.partition_id,
            new_isr=list(new_isr),
            leader_epoch=state.leader_epoch,
            partition_epoch=state.partition_epoch,
            error=error.name,
        )
        if error is not ErrorCode.none:
            self._clear(partition, new_isr)

    def _clear(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        if partition.pending_isr == new_isr:
            partition.pending_isr = None

    def _request(self, partition: Partition, new_isr: tuple[int, ...]) -> Any:
        state = partition.state
        assert state is not None
        schema: Any = request_schema(ALTER_PARTITION_KEY, ALTER_PARTITION_VERSION)
        topic_type = field_entity_type(schema, "topics")
        partition_type = field_entity_type(topic_type, "partitions")
        return make_entity(
            schema,
            broker_id=self._broker_id,
            broker_epoch=self._broker_epoch(),
            topics=(
                make_entity(
                    topic_type,
                    topic_id=partition.topic_id,
                    partitions=(
                        make_entity(
                            partition_type,
                            partition_index=partition.partition_id,
                            leader_epoch=state.leader_epoch,
                            new_isr=new_isr,
                            leader_recovery_state=0,
                            partition_epoch=state.partition_epoch,
                        ),
                    ),
                ),
            ),
        )

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
