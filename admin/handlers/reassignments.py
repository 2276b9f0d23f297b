"""Partition reassignments: the ones in progress with each one's progress
(`GET /v1/reassignments`), starting some (`POST`, with the cluster-wide replication throttle)
and cancelling one (`DELETE /v1/reassignments/{name}/{p}`). The controller executes them
(AlterPartitionReassignments, KIP-455): during a move `replicas` is the target plus the replicas
being removed, and the move completes once every replica being added is in the ISR."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from aiohttp import web
from kio.schema.errors import ErrorCode

from admin.errors import ApiError, kafka_error
from admin.handlers.common import (
    AdminContext,
    context,
    json_response,
    json_response_list,
    read_body,
)
from admin.handlers.topics import leader_log, partition_model, partition_state
from admin.models import (
    Reassignment,
    ReassignmentProgress,
    ReassignmentsStarted,
    RefusedReassignment,
    StartReassignments,
)
from controller.client import (
    alter_partition_reassignments_request,
    incremental_alter_configs_request,
)
from controller.image import MetadataImage
from controller.partition_state import PartitionState
from controller.records import ConfigResourceType

# The dynamic broker configs of the replication throttle, set cluster-wide (broker "").
THROTTLE_CONFIGS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def in_progress(image: MetadataImage) -> list[tuple[str, int, PartitionState]]:
    """Every partition with a reassignment in progress, by topic name and index."""
    return [
        (topic.name, index, state)
        for topic in sorted(image.topics.values(), key=lambda t: t.name)
        for index, state in sorted(topic.partitions.items())
        if state.adding_replicas or state.removing_replicas
    ]


def target(state: PartitionState) -> list[int]:
    """The replicas a partition is moving to (its replicas when no move is in progress)."""
    return [b for b in state.replicas if b not in state.removing_replicas]


async def set_throttle(admin: AdminContext, bytes_per_sec: int) -> None:
    """Sets the cluster-wide replication throttle (0 removes it); ApiError if refused."""
    if bytes_per_sec:
        value = str(bytes_per_sec)
        request = incremental_alter_configs_request(
            "",
            dict.fromkeys(THROTTLE_CONFIGS, value),
            (),
            resource_type=ConfigResourceType.BROKER,
        )
    else:
        request = incremental_alter_configs_request(
            "", {}, THROTTLE_CONFIGS, resource_type=ConfigResourceType.BROKER
        )
    response = await admin.to_controller(request)
    result = response.responses[0]
    if result.error_code != ErrorCode.none:
        raise kafka_error(result.error_code, result.error_message, "the replication throttle")


async def start(
    admin: AdminContext, moves: Sequence[Reassignment]
) -> tuple[list[Reassignment], list[RefusedReassignment]]:
    """Asks the controller to start `moves`: the ones it started (once this node's image holds
    them) and the ones it refused."""
    response = await admin.to_controller(
        alter_partition_reassignments_request(
            {(move.topic, move.partition): move.replicas for move in moves}
        )
    )
    if response.error_code != ErrorCode.none:
        raise kafka_error(response.error_code, response.error_message, "the reassignment")
    errors = {
        (topic.name, result.partition_index): (result.error_code, result.error_message)
        for topic in response.responses
        for result in topic.partitions
        if result.error_code != ErrorCode.none
    }
    started = [move for move in moves if (move.topic, move.partition) not in errors]
    await admin.caught_up(lambda image: all(_replayed(image, move) for move in started))
    refused = [
        RefusedReassignment(topic=topic, partition=index, error=code.name, message=message)
        for (topic, index), (code, message) in errors.items()
    ]
    return started, refused


async def reassignments(request: web.Request) -> web.Response:
    admin = context(request)
    moving = in_progress(admin.image())
    views = await asyncio.gather(
        *(leader_log(request, name, partition_model(index, state)) for name, index, state in moving)
    )
    answer = []
    for (name, index, state), (view, problem) in zip(moving, views, strict=True):
        # -1 in the leader's view: the replica has not fetched in this leadership yet.
        known = {} if view is None else {b: n for b, n in view.bytes_behind.items() if n >= 0}
        behind: dict[int, int | None] = {r: known.get(r) for r in state.adding_replicas}
        answer.append(
            ReassignmentProgress(
                topic=name,
                partition=index,
                replicas=list(state.replicas),
                target=target(state),
                adding=list(state.adding_replicas),
                removing=list(state.removing_replicas),
                leader=state.leader,
                isr=list(state.isr),
                bytes_behind=behind,
                log_view_error=problem,
            )
        )
    return json_response_list(answer)


async def start_reassignments(request: web.Request) -> web.Response:
    admin = context(request)
    body = await read_body(request, StartReassignments)
    moves = body.reassignments()
    if not moves and body.throttle_bytes_per_sec is None:
        raise ApiError(400, "invalid_request", "partitions: nothing to move and no throttle")
    if body.throttle_bytes_per_sec is not None:
        await set_throttle(admin, body.throttle_bytes_per_sec)
    started: list[Reassignment] = []
    refused: list[RefusedReassignment] = []
    if moves:
        started, refused = await start(admin, moves)
    if refused and not started:
        first = refused[0]
        raise kafka_error(ErrorCode[first.error], first.message, f"{first.topic}-{first.partition}")
    return json_response(
        ReassignmentsStarted(
            started=started, refused=refused, throttle_bytes_per_sec=body.throttle_bytes_per_sec
        ),
        202,
    )


def _replayed(image: MetadataImage, move: Reassignment) -> bool:
    """Whether `image` holds the started `move`: in progress or done already."""
    topic = image.topic(move.topic)
    state = None if topic is None else topic.partitions.get(move.partition)
    return state is None or target(state) == move.replicas


async def cancel_reassignment(request: web.Request) -> web.Response:
    admin = context(request)
    name, index, _ = partition_state(request)
    topic = admin.image().topic(name)
    assert topic is not None
    state = topic.partitions[index]
    if not state.adding_replicas and not state.removing_replicas:
        raise ApiError(404, "no_reassignment", f"no reassignment of {name}-{index} is in progress")
    response = await admin.to_controller(
        alter_partition_reassignments_request({(name, index): None})
    )
    if response.error_code != ErrorCode.none:
        raise kafka_error(response.error_code, response.error_message, f"{name}-{index}")
    result = response.responses[0].partitions[0]
    if result.error_code == ErrorCode.no_reassignment_in_progress:
        raise ApiError(404, "no_reassignment", f"no reassignment of {name}-{index} is in progress")
    if result.error_code != ErrorCode.none:
        raise kafka_error(result.error_code, result.error_message, f"{name}-{index}")

    def reverted(current: MetadataImage) -> bool:
        now = current.partition(topic.topic_id, index)
        return now is None or not (now.adding_replicas or now.removing_replicas)

    await admin.caught_up(reverted)
    _, _, partition = partition_state(request)
    return json_response(partition)
