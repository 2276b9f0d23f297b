"""A leader's ISR change requests: AlterPartition to the active controller.

One request in flight per partition (`Partition.pending_isr`), fenced by the leader epoch and
partition epoch the leader knows, and naming each member with the broker epoch its registration
had when the change was proposed (AlterPartition v3, KIP-903): a request that arrives after a
member restarted (perhaps having lost what it had caught up with) is refused.

The controller's answer only says whether the change was accepted: the ISR changes when the
metadata log says so and the partition applies it, which ends the pending change. As Kafka
does, only a refusal that proves the change was not made (INELIGIBLE_REPLICA,
OPERATION_NOT_ATTEMPTED) clears it early. Any other outcome may hide a committed change (an
answer lost to a timeout; INVALID_UPDATE_VERSION to a resend of a change already made), so the
change stays pending, and the high watermark keeps counting a joining replica, until the
metadata log settles it; an unanswered request, or one a controller behind this leader's epochs
answered NOT_CONTROLLER, is sent again meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog
from kio.schema.alter_partition import v3 as alter_partition_v3
from kio.schema.errors import ErrorCode

from broker.partition import Partition
from controller.client import ControllerClient, NoControllerError
from controller.partition_state import PartitionState
from net.protocol import make_entity

log = structlog.get_logger(__name__)

# The refusals that prove the change was not made.
_NOT_MADE = frozenset({ErrorCode.ineligible_replica, ErrorCode.operation_not_attempted})


class IsrChangeSender:
    """Sends the ISR changes of the partitions broker `broker_id` leads."""

    def __init__(
        self,
        client: ControllerClient,
        broker_id: int,
        broker_epoch: Callable[[], int],
        broker_epoch_of: Callable[[int], int],
        *,
        retry_backoff_s: float = 0.5,
    ) -> None:
        """`broker_epoch` is this broker's own; `broker_epoch_of(id)` the broker epoch of a
        registered broker as this broker's metadata says (-1 if unknown)."""
        self._client = client
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._broker_epoch_of = broker_epoch_of
        self._retry_backoff_s = retry_backoff_s
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
        members = tuple((member, self._broker_epoch_of(member)) for member in new_isr)
        task = asyncio.create_task(self._send(partition, partition.state, members))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(
        self, partition: Partition, state: PartitionState, members: tuple[tuple[int, int], ...]
    ) -> None:
        new_isr = tuple(member for member, _ in members)
        while True:
            if (
                partition.pending_isr != new_isr
                or partition.pending_partition_epoch != state.partition_epoch
            ):
                return  # settled by the metadata log, or superseded
            try:
                response: alter_partition_v3.AlterPartitionResponse = await self._client.send(
                    self._request(partition, state, members)
                )
            except NoControllerError as unanswered:
                log.warning(
                    "isr_change_unanswered",
                    topic=partition.topic,
                    partition=partition.partition_id,
                    new_isr=list(new_isr),
                    error=str(unanswered),
                )
                await asyncio.sleep(self._retry_backoff_s)
                continue
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
            if error is not ErrorCode.not_controller:
                break
            # A controller whose image is behind this leader's epochs answers NOT_CONTROLLER for
            # the partition (a newly active one still replaying, or a deposed one): nobody
            # decided, and no metadata record will settle the change, so it is asked again, as
            # Kafka's AlterPartitionManager retries it. A resend of a change that did commit
            # meanwhile is settled by the metadata log first (the check above).
            await asyncio.sleep(self._retry_backoff_s)
        if error in _NOT_MADE and partition.pending_isr == new_isr:
            partition.pending_isr = None

    def _request(
        self, partition: Partition, state: PartitionState, members: tuple[tuple[int, int], ...]
    ) -> alter_partition_v3.AlterPartitionRequest:
        # v3: topic ids, and each ISR member with its broker epoch.
        return make_entity(
            alter_partition_v3.AlterPartitionRequest,
            broker_id=self._broker_id,
            broker_epoch=self._broker_epoch(),
            topics=(
                make_entity(
                    alter_partition_v3.request.TopicData,
                    topic_id=partition.topic_id,
                    partitions=(
                        make_entity(
                            alter_partition_v3.request.PartitionData,
                            partition_index=partition.partition_id,
                            leader_epoch=state.leader_epoch,
                            new_isr_with_epochs=tuple(
                                make_entity(
                                    alter_partition_v3.request.BrokerState,
                                    broker_id=member,
                                    broker_epoch=epoch,
                                )
                                for member, epoch in members
                            ),
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
