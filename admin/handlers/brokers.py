"""Brokers: `GET /v1/brokers`, `GET /v1/brokers/{id}`, as the metadata image registers them."""

from __future__ import annotations

from aiohttp import web

from admin.errors import ApiError
from admin.handlers.common import context, json_response, json_response_list
from admin.models import Broker
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
