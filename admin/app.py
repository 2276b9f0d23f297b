"""The aiohttp application of the admin listener.

The node hands it a read model (`NodeStatus`); reads render the node's metadata image and
replica state as the pydantic models of `admin.models`, and mutations go to the active
controller as Kafka requests (CreateTopics, DeleteTopics, CreatePartitions,
IncrementalAlterConfigs, ElectLeaders, AlterPartitionReassignments, UnregisterBroker), the same
ones Kafka admin clients send, so the two can never disagree; a manual unclean recovery sends
our own ElectRecoveredLeader. The handlers live in `admin.handlers`, one module per resource;
every route is declared once in the table of `admin.routes`, which builds both the router and
the OpenAPI document (`/v1/openapi.json`). Here: the guard that authenticates each request and
checks what its route needs (`admin.auth`), the middleware that turns every failure into JSON
`{"error", "message"}` with the HTTP status, `/metrics`, and the background tasks that finish
started rebalances.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator
from functools import partial

import aiohttp
import structlog
from aiohttp import web
from aiohttp.typedefs import Handler

from admin.auth import AdminAuth
from admin.errors import ApiError
from admin.handlers import rebalance
from admin.handlers.common import (
    AUTH,
    CALLER,
    CONTEXT,
    PEER_SCHEME,
    SESSION,
    AdminContext,
    error_response,
)
from admin.metrics import CONTENT_TYPE_LATEST, NodeMetrics
from admin.openapi import Route
from admin.routes import ROUTES
from admin.status import NodeStatus
from broker.scram_credentials import user_password_check
from controller.acls import Authorizer, AuthorizerSettings

log = structlog.get_logger(__name__)


def create_app(
    status: NodeStatus,
    *,
    token: str | None = None,
    metrics: NodeMetrics | None = None,
    peer_ssl: ssl.SSLContext | None = None,
    tls: bool = False,
    authorizer: AuthorizerSettings | None = None,
) -> web.Application:
    """The admin application over `status`. Callers authenticate with `Bearer token` (when
    one is set) or, when it serves https (`tls`), HTTP Basic as a SASL user; with `authorizer`
    the node's ACLs decide what each may do (`admin.auth`). With `metrics`, `GET /metrics`
    serves them in Prometheus text format (outside `/v1` and the OpenAPI document, as scrapers
    expect). With `peer_ssl`, other nodes' admin APIs are asked over https with that context."""
    app = web.Application(middlewares=[_json_errors])
    app[CONTEXT] = AdminContext(status)
    app[PEER_SCHEME] = "http" if peer_ssl is None else "https"
    guard = AdminAuth(
        token=token,
        password_check=partial(user_password_check, status.metadata_image),
        tls=tls,
        authorizer=None
        if authorizer is None
        else Authorizer(authorizer, lambda: status.metadata_image().acls),
    )
    app[AUTH] = guard
    app.cleanup_ctx.append(partial(_open_session, peer_ssl=peer_ssl))
    app.cleanup_ctx.append(rebalance.finishing_tasks)
    for route in ROUTES:
        app.router.add_route(route.method, route.router_path, _guarded(route, guard))
    if metrics is not None:
        exposition = metrics

        async def scrape(_: web.Request) -> web.Response:
            # Read on the event loop, written on a thread: the text of thousands of replicas
            # takes long enough to write to hold up every request waiting on the loop.
            reading = exposition.read()
            response = web.Response(body=await asyncio.to_thread(reading.exposition))
            response.headers["Content-Type"] = CONTENT_TYPE_LATEST
            return response

        app.router.add_get("/metrics", scrape)
    return app


def _guarded(route: Route, guard: AdminAuth) -> Handler:
    """The route's handler behind authentication and the route's access check."""
    if route.access is None:
        return route.handler

    async def handler(request: web.Request) -> web.StreamResponse:
        caller = await guard.caller(request)
        request[CALLER] = caller
        await guard.authorize(request, caller, route.access, route.mutation)
        return await route.handler(request)

    return handler


@web.middleware
async def _json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.monotonic()
    error: str | None = None
    try:
        response: web.StreamResponse = await handler(request)
    except ApiError as refused:
        error = refused.error
        response = error_response(refused.status, refused.error, refused.message)
        if refused.status == 401:
            response.headers["WWW-Authenticate"] = request.app[AUTH].challenge
    except web.HTTPException as refused:
        if refused.status < 400:
            raise
        error = refused.reason.lower().replace(" ", "_")
        response = error_response(refused.status, error, refused.text or refused.reason)
    except Exception as failure:
        # A bug, not bad input: still a JSON answer, and the traceback in the node's log.
        log.exception("admin_request_failed", method=request.method, path=request.path)
        error = "internal_error"
        response = error_response(500, error, repr(failure))
    if request.method != "GET":
        # One event per mutation with its outcome.
        caller = request.get(CALLER)
        log.info(
            "admin_request",
            method=request.method,
            path=request.path,
            principal=None if caller is None else caller.principal,
            operator=None if caller is None else caller.operator,
            status=response.status,
            error=error,
            duration_ms=round((time.monotonic() - started) * 1000, 1),
        )
    return response


async def _open_session(
    app: web.Application, *, peer_ssl: ssl.SSLContext | None
) -> AsyncIterator[None]:
    connector = aiohttp.TCPConnector(ssl=peer_ssl if peer_ssl is not None else True)
    app[SESSION] = aiohttp.ClientSession(connector=connector)
    yield
    await app[SESSION].close()
