"""Rebalancing (`POST /v1/rebalance`) and draining a broker (`POST /v1/brokers/{id}/drain`):
the plan of `controller.rebalance` over this node's image, started as reassignments unless a
dry run. Once the moves started complete, a background task of the admin application removes
the throttle the request set and runs preferred leader elections for the partitions whose
leader is not their preferred replica, so that the leaders the plan evened out lead."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection, Set

import structlog
from aiohttp import web
from kio.schema.errors import ErrorCode

from admin.errors import ApiError
from admin.handlers.common import AdminContext, context, json_response, read_body
from admin.handlers.reassignments import in_progress, set_throttle, start
from admin.models import BrokerLoad, PlannedMove, Reassignment, Rebalance, RebalancePlan
from controller import rebalance as planning
from controller.client import elect_leaders_request
from controller.image import MetadataImage
from controller.placement import PlacementBroker

log = structlog.get_logger(__name__)

# The background tasks that finish started plans, cancelled when the application stops.
FINISHING = web.AppKey("rebalance_finishing", set[asyncio.Task[None]])
# How often a finishing task looks at the image for the moves' completion.
_POLL_S = 0.5


async def finishing_tasks(app: web.Application) -> AsyncIterator[None]:
    """The application's cleanup context for the tasks that finish started plans."""
    app[FINISHING] = set()
    yield
    for task in app[FINISHING]:
        task.cancel()
    await asyncio.gather(*app[FINISHING], return_exceptions=True)


def plan(image: MetadataImage, removing: Collection[int] = ()) -> planning.RebalancePlan:
    """The plan over every registered broker but `removing`; ApiError 409 while a broker
    (other than one being removed) is fenced or a reassignment is in progress."""
    fenced = sorted(b for b, r in image.brokers.items() if r.fenced and b not in removing)
    if fenced:
        raise ApiError(
            409,
            "broker_fenced",
            f"brokers {fenced} are fenced: bring them back, or drain and remove them, first",
        )
    moving = in_progress(image)
    if moving:
        name, index, _ = moving[0]
        raise ApiError(
            409,
            "reassignment_in_progress",
            f"{len(moving)} reassignments are in progress ({name}-{index}, ...): wait for them "
            "or cancel them first",
        )
    partitions = {
        (topic.name, index): state.replicas
        for topic in image.topics.values()
        for index, state in topic.partitions.items()
    }
    brokers = [PlacementBroker(b.broker_id, b.rack) for b in image.brokers.values()]
    try:
        return planning.plan_rebalance(partitions, brokers, removing)
    except planning.RebalanceError as error:
        raise ApiError(409, "cannot_rebalance", str(error)) from error


async def execute(
    request: web.Request, chosen: planning.RebalancePlan, throttle_bytes_per_sec: int | None
) -> RebalancePlan:
    """Starts the plan's moves (after setting the throttle) and the task that finishes them;
    the plan as answered."""
    admin = context(request)
    if not chosen.moves:
        return plan_model(chosen, started=False, detail="nothing to move")
    if throttle_bytes_per_sec is not None:
        await set_throttle(admin, throttle_bytes_per_sec)
    moves = [
        Reassignment(topic=m.topic, partition=m.partition, replicas=list(m.target))
        for m in chosen.moves
    ]
    started, refused = await start(admin, moves)
    if not started:
        first = refused[0]
        raise ApiError(
            409,
            first.error,
            f"the controller refused every move, {first.topic}-{first.partition} with "
            f"{first.error}: {first.message}",
        )
    keys = {(move.topic, move.partition) for move in started}
    clear_throttle = bool(throttle_bytes_per_sec)
    task = asyncio.create_task(_finish(admin, keys, clear_throttle))
    request.app[FINISHING].add(task)
    task.add_done_callback(request.app[FINISHING].discard)
    log.info(
        "rebalance_started",
        moves=len(started),
        refused=len(refused),
        replicas=chosen.replicas_moved,
    )
    detail = (
        f"{len(started)} reassignments started"
        + (f", {len(refused)} refused ({refused[0].error})" if refused else "")
        + "; once they complete, this node runs preferred leader elections in the background"
        + (" after removing the throttle" if clear_throttle else "")
        + "; follow them with GET /v1/reassignments and GET /v1/events"
    )
    return plan_model(chosen, started=True, detail=detail)


async def _finish(admin: AdminContext, keys: Set[tuple[str, int]], clear_throttle: bool) -> None:
    """Waits for the moves of `keys` to complete (or be cancelled), then removes the throttle
    if the plan set it and elects the preferred leaders that do not lead."""
    while any((name, index) in keys for name, index, _ in in_progress(admin.image())):
        await asyncio.sleep(_POLL_S)
    try:
        if clear_throttle:
            await set_throttle(admin, 0)
        await elect_preferred(admin)
    except ApiError as error:
        log.warning("rebalance_finish_failed", error=error.error, message=error.message)


async def elect_preferred(admin: AdminContext) -> None:
    """Preferred leader elections for every partition whose preferred replica is in the ISR
    but does not lead."""
    image = admin.image()
    partitions = [
        (topic.name, index)
        for topic in image.topics.values()
        for index, state in topic.partitions.items()
        if state.leader != state.preferred_leader and state.preferred_leader in state.isr
    ]
    if not partitions:
        log.info("rebalance_finished", elected=0)
        return
    response = await admin.to_controller(elect_leaders_request(False, partitions))
    elected = sum(
        1
        for topic in response.replica_election_results
        for result in topic.partition_result
        if result.error_code == ErrorCode.none
    )
    log.info("rebalance_finished", elected=elected, asked=len(partitions))


def plan_model(chosen: planning.RebalancePlan, *, started: bool, detail: str) -> RebalancePlan:
    """The admin view of a plan."""
    brokers = sorted(set(chosen.replicas_before) | set(chosen.replicas_after))
    return RebalancePlan(
        moves=[
            PlannedMove.model_validate(
                {
                    "topic": move.topic,
                    "partition": move.partition,
                    "from": list(move.current),
                    "to": list(move.target),
                    "adding": list(move.adding),
                    "removing": list(move.removing),
                }
            )
            for move in chosen.moves
        ],
        replicas_moved=chosen.replicas_moved,
        brokers=[
            BrokerLoad(
                broker=broker,
                replicas_before=chosen.replicas_before.get(broker, 0),
                replicas_after=chosen.replicas_after.get(broker, 0),
                leaders_before=chosen.leaders_before.get(broker, 0),
                leaders_after=chosen.leaders_after.get(broker, 0),
            )
            for broker in brokers
        ],
        balanced=chosen.balanced,
        started=started,
        detail=detail,
    )


async def _planned(image: MetadataImage, removing: Collection[int] = ()) -> planning.RebalancePlan:
    # Planning many partitions takes a while: off the event loop, which serves the node.
    return await asyncio.to_thread(plan, image, removing)


async def rebalance(request: web.Request) -> web.Response:
    body = await read_body(request, Rebalance)
    chosen = await _planned(context(request).image())
    if body.dry_run:
        return json_response(
            plan_model(chosen, started=False, detail="dry run: POST with dry_run false to start it")
        )
    return json_response(await execute(request, chosen, body.throttle_bytes_per_sec))


async def drain(request: web.Request) -> web.Response:
    broker_id = int(request.match_info["id"])
    image = context(request).image()
    if broker_id not in image.brokers:
        raise ApiError(404, "not_found", f"no broker {broker_id} is registered")
    answer = await execute(request, await _planned(image, {broker_id}), None)
    return json_response(answer, 202)
