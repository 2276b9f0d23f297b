"""Brokers: `GET /v1/brokers`, `GET /v1/brokers/{id}`, as the metadata image registers them,
and unregistering one that hosts no replica (`DELETE /v1/brokers/{id}`, UnregisterBroker);
draining one is a rebalance (`admin.handlers.rebalance`)."""

from __future__ import annotations

from aiohttp import web
from kio.schema.errors import ErrorCode

from admin.errors import ApiError, kafka_error
from admin.handlers.common import context, json_response, json_response_list
from admin.models import Broker
from controller.client import unregister_broker_request
from controller.image import MetadataImage


def broker_model(image: MetadataImage, broker_id: int) -> Broker:
    broker = image.brokers[broker_id]
    return Broker(
        id=broker.broker_id,
        epoch=broker.broker_epoch,
        incarnation_id=str(broker.incarnation_id),
        fenced=broker.fenced,
        in_controlled_shutdown=broker.in_controlled_shutdown,
        rack=broker.rack,
        listeners=[f"{e.name}://{e.host}:{e.port}" for e in broker.listeners],
    )


async def brokers(request: web.Request) -> web.Response:
    current = context(request).image()
    return json_response_list([broker_model(current, b) for b in sorted(current.brokers)])


async def broker(request: web.Request) -> web.Response:
    broker_id = int(request.match_info["id"])
    current = context(request).image()
    if broker_id not in current.brokers:
        raise ApiError(404, "not_found", f"no broker {broker_id} is registered")
    return json_response(broker_model(current, broker_id))


async def unregister(request: web.Request) -> web.Response:
    admin = context(request)
    broker_id = int(request.match_info["id"])
    current = admin.image()
    if broker_id not in current.brokers:
        raise ApiError(404, "not_found", f"no broker {broker_id} is registered")
    hosted = [
        f"{topic.name}-{index}"
        for topic in current.topics.values()
        for index, state in topic.partitions.items()
        if broker_id in state.replicas
    ]
    if hosted:
        raise ApiError(
            409,
            "broker_has_replicas",
            f"broker {broker_id} still hosts {len(hosted)} replicas ({', '.join(hosted[:5])}"
            f"{', ...' if len(hosted) > 5 else ''}): drain it first "
            f"(POST /v1/brokers/{broker_id}/drain)",
        )
    if len(current.brokers) == 1:
        raise ApiError(
            409, "last_broker", f"broker {broker_id} is the last registered broker: keep it"
        )
    response = await admin.to_controller(unregister_broker_request(broker_id))
    if response.error_code == ErrorCode.broker_id_not_registered:
        raise ApiError(404, "not_found", f"no broker {broker_id} is registered")
    if response.error_code == ErrorCode.invalid_request:
        # The controller's own check: a replica was placed on it since this node looked.
        raise ApiError(409, "broker_has_replicas", response.error_message or "it hosts replicas")
    if response.error_code != ErrorCode.none:
        raise kafka_error(response.error_code, response.error_message, f"broker {broker_id}")
    await admin.caught_up(lambda image: broker_id not in image.brokers)
    return web.Response(status=204)
