"""The event log (`GET /v1/events`): the node's metadata events rendered as `Event`s."""

from __future__ import annotations

from aiohttp import web

from admin.handlers.common import context, json_response_list
from admin.models import Event, OffsetRange, ReplicaLogAnswer
from controller.events import MetadataEvent


def _ints(values: tuple[int, ...] | None) -> list[int] | None:
    return None if values is None else list(values)


def event_model(event: MetadataEvent) -> Event:
    """The admin view of a metadata event."""
    return Event(
        offset=event.offset,
        time=event.time,
        type=event.type.value,
        data_loss_possible=event.data_loss_possible,
        topic=event.topic,
        partition=event.partition,
        broker=event.broker,
        leader=event.leader,
        previous_leader=event.previous_leader,
        leader_epoch=event.leader_epoch,
        partition_epoch=event.partition_epoch,
        broker_epoch=event.broker_epoch,
        isr=_ints(event.isr),
        elr=_ints(event.elr),
        last_known_elr=_ints(event.last_known_elr),
        strategy=event.strategy,
        replica_logs=None
        if event.replica_logs is None
        else [
            ReplicaLogAnswer(
                broker=replica.broker,
                broker_epoch=replica.broker_epoch,
                last_written_leader_epoch=replica.last_written_leader_epoch,
                log_end_offset=replica.log_end_offset,
            )
            for replica in event.replica_logs
        ],
        waiting_for=_ints(event.waiting_for),
        lost_offsets=None
        if event.lost_offsets is None
        else OffsetRange(start=event.lost_offsets.start, end=event.lost_offsets.end),
        replicas=_ints(event.replicas),
        adding_replicas=_ints(event.adding_replicas),
        removing_replicas=_ints(event.removing_replicas),
        detail=event.detail,
    )


async def events(request: web.Request) -> web.Response:
    return json_response_list([event_model(event) for event in context(request).status.events()])
