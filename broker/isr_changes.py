"""A leader's ISR change requests: AlterPartition to the active controller.

One change pending per partition (`Partition.pending_isr`), fenced by the leader epoch and
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
answered NOT_CONTROLLER, is sent again meanwhile. A slow answer is waited for (until the
client's deadline), not taken for a lost one.

As Kafka's AlterPartitionManager, the changes of all partitions travel together: one request
in flight at a time carries every change proposed since the last one was sent (thousands after
a follower restarted and caught up), and each partition's answer is handled on its own.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from uuid import UUID

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


@dataclass(frozen=True, slots=True)
class _Proposal:
    """One partition's proposed ISR, each member with the broker epoch it is named with."""

    partition: Partition
    state: PartitionState
    members: tuple[tuple[int, int], ...]

    @property
    def key(self) -> tuple[UUID, int]:
        return self.partition.topic_id, self.partition.partition_id

    @property
    def new_isr(self) -> tuple[int, ...]:
        return tuple(member for member, _ in self.members)

    @property
    def settled(self) -> bool:
        """The metadata log settled it, or a newer proposal superseded it."""
        return (
            self.partition.pending_isr != self.new_isr
            or self.partition.pending_partition_epoch != self.state.partition_epoch
        )


class IsrChangeSender:
    """Sends the ISR changes of the partitions broker `broker_id` leads, batched."""

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
        # Proposed and not yet sent, by partition: the next request carries them all.
        self._unsent: dict[tuple[UUID, int], _Proposal] = {}
        self._wakeup = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None

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
        proposal = _Proposal(partition, partition.state, members)
        self._unsent[proposal.key] = proposal
        if self._sender is None:
            self._sender = asyncio.create_task(self._send_forever())
        self._wakeup.set()

    async def _send_forever(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            batch = [proposal for proposal in self._unsent.values() if not proposal.settled]
            self._unsent.clear()
            if not batch:
                continue
            retry = await self._send(batch)
            if retry:
                await asyncio.sleep(self._retry_backoff_s)
                for proposal in retry:
                    # A proposal made meanwhile for the same partition is the newer one.
                    self._unsent.setdefault(proposal.key, proposal)
                self._wakeup.set()

    async def _send(self, batch: list[_Proposal]) -> list[_Proposal]:
        """Send `batch` as one request and settle what its answers settle; returns the
        proposals to ask again."""
        try:
            # Patient: a controller slower than the request timeout (committing thousands of
            # changes on a loaded machine) is waited for, not sent the same request again,
            # which would only be answered INVALID_UPDATE_VERSION for every change the first
            # copy made, and load it further.
            response: alter_partition_v3.AlterPartitionResponse = await self._client.send(
                self._request(batch), patient=True
            )
        except NoControllerError as unanswered:
            log.warning("isr_changes_unanswered", partitions=len(batch), error=str(unanswered))
            return batch
        top_level = ErrorCode(response.error_code)
        errors = _partition_errors(response)
        retry = []
        answers: Counter[str] = Counter()
        for proposal in batch:
            partition = proposal.partition
            error = (
                errors.get(proposal.key, ErrorCode.unknown_server_error)
                if top_level is ErrorCode.none
                else top_level
            )
            answers[error.name] += 1
            log.debug(
                "isr_change_answered",
                topic=partition.topic,
                partition=partition.partition_id,
                new_isr=list(proposal.new_isr),
                leader_epoch=proposal.state.leader_epoch,
                partition_epoch=proposal.state.partition_epoch,
                error=error.name,
            )
            if error is ErrorCode.not_controller:
                # A controller whose image is behind this leader's epochs answers
                # NOT_CONTROLLER for the partition (a newly active one still replaying, or a
                # deposed one): nobody decided, and no metadata record will settle the change,
                # so it is asked again, as Kafka's AlterPartitionManager retries it. A resend
                # of a change that did commit meanwhile is settled by the metadata log first.
                retry.append(proposal)
            elif error in _NOT_MADE and partition.pending_isr == proposal.new_isr:
                partition.pending_isr = None
        log.info(
            "isr_changes_answered",
            partitions=len(batch),
            error=top_level.name,
            answers=dict(answers),
            asked_again=len(retry),
        )
        return retry

    def _request(self, batch: Iterable[_Proposal]) -> alter_partition_v3.AlterPartitionRequest:
        # v3: topic ids, and each ISR member with its broker epoch.
        by_topic: dict[UUID, list[object]] = {}
        for proposal in batch:
            by_topic.setdefault(proposal.partition.topic_id, []).append(
                make_entity(
                    alter_partition_v3.request.PartitionData,
                    partition_index=proposal.partition.partition_id,
                    leader_epoch=proposal.state.leader_epoch,
                    new_isr_with_epochs=tuple(
                        make_entity(
                            alter_partition_v3.request.BrokerState,
                            broker_id=member,
                            broker_epoch=epoch,
                        )
                        for member, epoch in proposal.members
                    ),
                    leader_recovery_state=0,
                    partition_epoch=proposal.state.partition_epoch,
                )
            )
        return make_entity(
            alter_partition_v3.AlterPartitionRequest,
            broker_id=self._broker_id,
            broker_epoch=self._broker_epoch(),
            topics=tuple(
                make_entity(
                    alter_partition_v3.request.TopicData,
                    topic_id=topic_id,
                    partitions=tuple(partitions),
                )
                for topic_id, partitions in by_topic.items()
            ),
        )

    async def stop(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
            self._sender = None


def _partition_errors(
    response: alter_partition_v3.AlterPartitionResponse,
) -> dict[tuple[UUID | None, int], ErrorCode]:
    """Each answered partition's error, by (topic id, partition)."""
    return {
        (topic.topic_id, answered.partition_index): ErrorCode(answered.error_code)
        for topic in response.topics
        for answered in topic.partitions
    }
