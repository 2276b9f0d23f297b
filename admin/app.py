"""The aiohttp application of the admin listener.

The node hands it a read model (`NodeStatus`); handlers only read from it and render the
pydantic models of `admin.models`. Errors are JSON `{"error", "message"}` with the HTTP status.
"""

from __future__ import annotations

from typing import Protocol

from aiohttp import web
from aiohttp.typedefs import Handler
from pydantic import BaseModel

from admin.models import ErrorResponse, Health, Quorum

API_PREFIX = "/v1"


class NodeStatus(Protocol):
    """What the admin API reads from the node."""

    def readiness(self) -> str | None:
        """None when ready to serve; otherwise why not, in a sentence."""

    async def quorum(self) -> Quorum | None:
        """The quorum with the leader's view of replica progress, or None if this node does
        not take part in one."""


def json_response(model: BaseModel, status: int = 200) -> web.Response:
    return web.Response(
        body=model.model_dump_json(), status=status, content_type="application/json"
    )


def error_response(status: int, error: str, message: str) -> web.Response:
    return json_response(ErrorResponse(error=error, message=message), status)


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
    return app
