"""The aiohttp application of the admin listener.

The node hands it a read model (`NodeStatus`); handlers only read from it and render the
pydantic models of `admin.models`. Errors are JSON `{"error", "message"}` with the HTTP status.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from aiohttp import web
from aiohttp.typedefs import Handler
from pydantic import BaseModel

from admin.models import Broker, ErrorResponse, Health, Metadata, Partition, Quorum, Topic
from controller.image import MetadataImage

API_PREFIX = "/v1"


class NodeStatus(Protocol):
    """What the admin API reads from the node."""

    def readiness(self) -> str | None:
        """None when ready to serve; otherwise why not, in a sentence."""

    async def quorum(self) -> Quorum | None:
        """The quorum with the leader's view of replica progress, or None if this node does
        not take part in one."""

    def metadata_image(self) -> MetadataImage:
        """The node's metadata image: every committed entry it has replayed."""


def json_response(model: BaseModel, status: int = 200) -> web.Response:
    return web.Response(
        body=model.model_dump_json(), status=status, content_type="application/json"
    )


def error_response(status: int, error: str, message: str) -> web.Response:
    return json_response(ErrorResponse(error=error, message=message), status)


def json_response_list(models: Sequence[BaseModel]) -> web.Response:
    body = "[" + ",".join(model.model_dump_json() for model in models) + "]"
    return web.Response(body=body, content_type="application/json")


def metadata_model(image: MetadataImage) -> Metadata:
    """The admin view of a metadata image: brokers by id, topics by name."""
    brokers = [
        Broker(
            id=broker.broker_id,
            epoch=broker.broker_epoch,
            incarnation_id=str(broker.incarnation_id),
            fenced=broker.fenced,
            in_controlled_shutdown=broker.in_controlled_shutdown,
            rack=broker.rack,
            listeners=[f"{e.name}://{e.host}:{e.port}" for e in broker.listeners],
        )
        for _, broker in sorted(image.brokers.items())
    ]
    topics = []
    for name, topic_id in sorted(image.topic_ids.items()):
        topic = image.topics[topic_id]
        topics.append(
            Topic(
                name=name,
                topic_id=str(topic_id),
                configs=dict(image.topic_configs(name)),
                partitions=[
                    Partition(
                        partition=partition_id,
                        leader=state.leader,
                        leader_epoch=state.leader_epoch,
                        partition_epoch=state.partition_epoch,
                        replicas=list(state.replicas),
                        isr=list(state.isr),
                        elr=list(state.elr),
                        last_known_elr=list(state.last_known_elr),
                    )
                    for partition_id, state in sorted(topic.partitions.items())
                ],
            )
        )
    return Metadata(metadata_offset=image.end_offset, brokers=brokers, topics=topics)


def create_app(status: NodeStatus) -> web.Application:
    """The admin application over `status`."""

    async def live(_: web.Request) -> web.Response:
        return json_response(Health(status="ok"))

    async def ready(_: web.Request) -> web.Response:
        reason = status.readiness()
        if reason is None:
            return json_response(Health(status="ok"))
        return json_response(Health(status="unavailable", reason=reason), 503)

    async def quorum(_: web.Request) -> web.Response:
        known = await status.quorum()
        if known is None:
            return error_response(404, "not_found", "this node is not part of a quorum")
        return json_response(known)

    async def metadata(_: web.Request) -> web.Response:
        return json_response(metadata_model(status.metadata_image()))

    async def brokers(_: web.Request) -> web.Response:
        return json_response_list(metadata_model(status.metadata_image()).brokers)

    async def topics(_: web.Request) -> web.Response:
        return json_response_list(metadata_model(status.metadata_image()).topics)

    async def topic(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        for model in metadata_model(status.metadata_image()).topics:
            if model.name == name:
                return json_response(model)
        return error_response(404, "not_found", f"no topic named {name!r}")

    @web.middleware
    async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await handler(request)
            return response
        except web.HTTPException as error:
            if error.status < 400:
                raise
            return error_response(
                error.status, error.reason.lower().replace(" ", "_"), error.text or error.reason
            )

    app = web.Application(middlewares=[json_errors])
    app.router.add_get(f"{API_PREFIX}/health/live", live)
    app.router.add_get(f"{API_PREFIX}/health/ready", ready)
    app.router.add_get(f"{API_PREFIX}/quorum", quorum)
    app.router.add_get(f"{API_PREFIX}/metadata", metadata)
    app.router.add_get(f"{API_PREFIX}/brokers", brokers)
    app.router.add_get(f"{API_PREFIX}/topics", topics)
    app.router.add_get(f"{API_PREFIX}/topics/{{name}}", topic)
    return app
