"""The OpenAPI 3 document of the admin API, generated from its route table and pydantic models.

Each `Route` says what a handler takes and gives (path parameters, request body model,
response model, error statuses); `openapi_document` turns the table into the document, with
every model's JSON schema (pydantic's `models_json_schema`) under `components/schemas`. The
router is built from the same table, so the document cannot miss a route.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from admin.auth import Access, on_cluster
from admin.models import ErrorResponse
from controller.acls import AclOperation

HandlerFn = Callable[[web.Request], Awaitable[web.StreamResponse]]

_REF_TEMPLATE = "#/components/schemas/{model}"

# What each error status means on any route that lists it.
ERROR_DESCRIPTIONS = {
    400: "bad input: the message names the field",
    401: "no or wrong credentials (`Authorization: Basic` over https, or `Bearer <admin.token>`)"
    ", or anonymous callers lack the ACL this request needs",
    403: "authenticated but not authorized (the message names the operation and resource), "
    "or Basic credentials over plain http",
    404: "no such resource",
    409: "conflicts with the current state (exists already, nothing to do)",
    503: "no active controller, or the node is not ready",
}


@dataclass(frozen=True)
class PathParam:
    """A path parameter: `{name}` in the path, with its JSON schema."""

    name: str
    schema: dict[str, Any]
    description: str

    @property
    def is_integer(self) -> bool:
        return self.schema.get("type") == "integer"


# What a read needs unless its route says otherwise.
DESCRIBE_CLUSTER = on_cluster(AclOperation.DESCRIBE)


@dataclass(frozen=True)
class Route:
    """One operation of the admin API: the handler and everything the document says of it."""

    method: Literal["GET", "POST", "PATCH", "DELETE"]
    path: str
    handler: HandlerFn
    summary: str
    response: type[BaseModel] | None
    response_is_list: bool = False
    status: int = 200
    body: type[BaseModel] | None = None
    params: Sequence[PathParam] = ()
    errors: Sequence[int] = ()
    mutation: bool = False
    # What the caller needs (`admin.auth`); None: open to anyone (health, this document).
    access: Access | None = DESCRIBE_CLUSTER

    @property
    def router_path(self) -> str:
        """The aiohttp path: integer parameters only match digits (others are 404s)."""
        path = self.path
        for param in self.params:
            if param.is_integer:
                path = path.replace(f"{{{param.name}}}", f"{{{param.name}:\\d+}}")
        return path

    def all_errors(self) -> list[int]:
        """The error statuses: the route's own, 400 for a body, 401 and 403 unless the route is
        open, 404 for path parameters (a value that names nothing, or does not match)."""
        statuses = set(self.errors)
        if self.body is not None:
            statuses.add(400)
        if self.params:
            statuses.add(404)
        if self.access is not None:
            statuses.update((401, 403))
        return sorted(statuses)


def openapi_document(
    routes: Sequence[Route], *, title: str, version: str, description: str
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `routes`."""
    models: list[tuple[type[BaseModel], JsonSchemaMode]] = [(ErrorResponse, "serialization")]
    for route in routes:
        if route.body is not None:
            models.append((route.body, "validation"))
        if route.response is not None:
            models.append((route.response, "serialization"))
    refs, definitions = models_json_schema(list(dict.fromkeys(models)), ref_template=_REF_TEMPLATE)
    error_ref = refs[(ErrorResponse, "serialization")]

    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        responses: dict[str, Any] = {}
        if route.response is None:
            responses[str(route.status)] = {"description": "done"}
        else:
            schema = refs[(route.response, "serialization")]
            if route.response_is_list:
                schema = {"type": "array", "items": schema}
            responses[str(route.status)] = {
                "description": route.summary,
                "content": {"application/json": {"schema": schema}},
            }
        for status in route.all_errors():
            responses[str(status)] = {
                "description": ERROR_DESCRIPTIONS[status],
                "content": {"application/json": {"schema": error_ref}},
            }
        operation: dict[str, Any] = {
            "operationId": f"{route.method.lower()}{_operation_suffix(route.path)}",
            "summary": route.summary,
            "responses": responses,
        }
        if route.params:
            operation["parameters"] = [
                {
                    "name": param.name,
                    "in": "path",
                    "required": True,
                    "description": param.description,
                    "schema": param.schema,
                }
                for param in route.params
            ]
        if route.body is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": refs[(route.body, "validation")]}},
            }
        if route.access is not None:
            # `{}`: anonymous callers too, as a node without `admin.token` or an authorizer
            # (or ACLs that allow User:ANONYMOUS) lets them; which one applies is configuration.
            operation["security"] = [{}, {"basic": []}, {"bearer": []}]
        paths.setdefault(route.path, {})[route.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version, "description": description},
        "paths": paths,
        "components": {
            "schemas": definitions.get("$defs", {}),
            "securitySchemes": {
                "basic": {
                    "type": "http",
                    "scheme": "basic",
                    "description": "a SASL user's name and password (its SCRAM credential), "
                    "over https only; its ACLs decide when an authorizer is configured",
                },
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "the node's `admin.token`: every operation",
                },
            },
        },
    }


def _operation_suffix(path: str) -> str:
    parts = [part.strip("{}") for part in path.split("/") if part and part != "v1"]
    return "".join(part.replace("_", " ").title().replace(" ", "") for part in parts)
