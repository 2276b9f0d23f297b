"""The node and the cluster: health (`/v1/health/live`, `/v1/health/ready`), `/v1/cluster`,
`/v1/quorum` and the whole image (`/v1/metadata`)."""

from __future__ import annotations

from aiohttp import web

from admin.errors import ApiError
from admin.handlers.brokers import broker_model
from admin.handlers.common import context, json_response
from admin.handlers.topics import topic_model
from admin.models import Cluster, Health, Metadata
from controller.image import MetadataImage


def metadata_model(image: MetadataImage) -> Metadata:
    """The admin view of a metadata image: brokers by id, topics by name."""
    return Metadata(
        metadata_offset=image.end_offset,
        brokers=[broker_model(image, broker_id) for broker_id in sorted(image.brokers)],
        topics=[
            model
            for name in sorted(image.topic_ids)
            if (model := topic_model(image, name)) is not None
        ],
    )


async def live(_: web.Request) -> web.Response:
    return json_response(Health(status="ok"))


async def ready(request: web.Request) -> web.Response:
    reason = context(request).status.readiness()
    if reason is None:
        return json_response(Health(status="ok"))
    return json_response(Health(status="unavailable", reason=reason), 503)


async def cluster(request: web.Request) -> web.Response:
    status = context(request).status
    current = status.metadata_image()
    controller = status.controller_id()
    return json_response(
        Cluster(
            cluster_id=status.cluster_id,
            controller_id=-1 if controller is None else controller,
            metadata_offset=current.end_offset,
            brokers=len(current.brokers),
            topics=len(current.topic_ids),
        )
    )


async def quorum(request: web.Request) -> web.Response:
    known = await context(request).status.quorum()
    if known is None:
        raise ApiError(404, "not_found", "this node is not part of a quorum")
    return json_response(known)


async def metadata(request: web.Request) -> web.Response:
    return json_response(metadata_model(context(request).image()))
