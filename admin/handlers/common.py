"""What the handlers share: the node they answer for (`AdminContext`, found through the
request's application), JSON answers, reading a request body, forwarding a request to the active
controller and waiting for this node to replay what the controller committed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import aiohttp
from aiohttp import web
from kio.static.protocol import Payload
from pydantic import BaseModel, ValidationError

from admin.auth import AdminAuth, Caller
from admin.errors import ApiError
from admin.models import ErrorResponse
from admin.status import NodeStatus
from controller.acls import AclOperation, ResourceType
from controller.client import NoControllerError
from controller.image import MetadataImage

API_PREFIX = "/v1"
# The listener name under which a broker registers its admin endpoint, so any node can ask a
# partition leader's admin API for its log view. Kafka clients never see it: Metadata answers
# give only the client listener.
ADMIN_LISTENER = "ADMIN"
# How long a mutation waits for the answering node to replay what the controller committed, so
# that a read after the answer sees it.
_CATCH_UP_S = 5.0

ModelT = TypeVar("ModelT", bound=BaseModel)


class AdminContext:
    """The node the handlers answer for, and its way to the active controller."""

    def __init__(self, status: NodeStatus) -> None:
        self.status = status

    def image(self) -> MetadataImage:
        return self.status.metadata_image()

    async def to_controller(self, request: Payload) -> Any:
        """The active controller's response; ApiError 503 if none answers in time."""
        try:
            return await self.status.send_to_controller(request)
        except NoControllerError as error:
            raise ApiError(503, "no_controller", str(error)) from error

    async def caught_up(self, done: Callable[[MetadataImage], bool]) -> None:
        """Returns once `done` holds for this node's image; ApiError 503 after a while."""
        # The controller answers once its records committed; this node replays them a moment
        # later. Waiting here gives read-your-writes on the node that answered.
        deadline = time.monotonic() + _CATCH_UP_S
        while not done(self.image()):
            if time.monotonic() >= deadline:
                raise ApiError(
                    503,
                    "not_caught_up",
                    "the controller committed the change, but this node has not replayed it "
                    f"within {_CATCH_UP_S:g} s; read it again shortly",
                )
            await asyncio.sleep(0.02)


CONTEXT = web.AppKey("admin_context", AdminContext)
# The guard of the application (`admin.auth`), and the request key of the caller it let in.
AUTH = web.AppKey("admin_auth", AdminAuth)
CALLER = "admin_caller"
# The HTTP client that asks other nodes for their replicas' log views.
SESSION = web.AppKey("leader_log_session", aiohttp.ClientSession)
# How the other nodes' admin APIs are reached: "https" when they serve TLS (every node's
# admin.listener has the same scheme).
PEER_SCHEME = web.AppKey("peer_scheme", str)


def context(request: web.Request) -> AdminContext:
    """The context of the application that received `request`."""
    return request.app[CONTEXT]


def json_response(model: BaseModel, status: int = 200) -> web.Response:
    return web.Response(
        body=model.model_dump_json(), status=status, content_type="application/json"
    )


def error_response(status: int, error: str, message: str) -> web.Response:
    return json_response(ErrorResponse(error=error, message=message), status)


def json_response_list(models: Sequence[BaseModel]) -> web.Response:
    body = "[" + ",".join(model.model_dump_json() for model in models) + "]"
    return web.Response(body=body, content_type="application/json")


def validation_message(error: ValidationError) -> str:
    """Each problem of `error` as `field.path: what is wrong`."""
    return "; ".join(
        f"{'.'.join(str(part) for part in problem['loc']) or 'body'}: {problem['msg']}"
        for problem in error.errors()
    )


async def read_body(request: web.Request, model: type[ModelT]) -> ModelT:
    """The request's JSON body as `model`; ApiError 400 naming the field otherwise."""
    try:
        return model.model_validate_json(await request.read())
    except ValidationError as error:
        if any(problem["type"] == "json_invalid" for problem in error.errors()):
            raise ApiError(400, "invalid_json", validation_message(error)) from error
        raise ApiError(400, "invalid_request", validation_message(error)) from error


def describable(request: web.Request, resource_type: ResourceType, name: str) -> bool:
    """Whether the request's caller may DESCRIBE the resource (listings show only those)."""
    caller: Caller = request[CALLER]
    return request.app[AUTH].allows(request, caller, AclOperation.DESCRIBE, resource_type, name)
