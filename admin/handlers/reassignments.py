"""Reassignments (`/v1/reassignments`): 501 until the controller can execute one."""

from __future__ import annotations

from aiohttp import web

from admin.errors import ApiError


async def not_implemented(_: web.Request) -> web.Response:
    raise ApiError(
        501,
        "not_implemented",
        "partition reassignment is not implemented yet: the controller cannot execute one",
    )
