"""The OpenAPI document generated from a route table and pydantic models."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel, Field, ValidationError

from admin.handlers.common import validation_message
from admin.models import CreateTopic
from admin.openapi import PathParam, Route, openapi_document


class Thing(BaseModel):
    name: str
    size: int | None = None


class NewThing(BaseModel):
    name: str = Field(min_length=1)


async def handler(_: web.Request) -> web.Response:
    return web.Response()


ROUTES = [
    Route("GET", "/v1/things", handler, "all things", Thing, response_is_list=True),
    Route(
        "POST",
        "/v1/things",
        handler,
        "make a thing",
        Thing,
        status=201,
        body=NewThing,
        errors=(409,),
        mutation=True,
    ),
    Route(
        "DELETE",
        "/v1/things/{name}/{n}",
        handler,
        "remove one",
        None,
        status=204,
        params=(
            PathParam("name", {"type": "string"}, "its name"),
            PathParam("n", {"type": "integer", "minimum": 0}, "its index"),
        ),
        errors=(404,),
        access=None,
    ),
]


def document() -> dict[str, Any]:
    return openapi_document(ROUTES, title="t", version="1", description="d")


def resolve(doc: dict[str, Any], ref: str) -> dict[str, Any]:
    assert ref.startswith("#/components/schemas/")
    schema: dict[str, Any] = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return schema


def test_every_route_with_its_responses_and_errors() -> None:
    doc = document()
    assert doc["openapi"].startswith("3.")
    assert set(doc["paths"]) == {"/v1/things", "/v1/things/{name}/{n}"}
    listing = doc["paths"]["/v1/things"]["get"]["responses"]["200"]
    schema = listing["content"]["application/json"]["schema"]
    assert schema["type"] == "array"
    assert resolve(doc, schema["items"]["$ref"])["required"] == ["name"]
    create = doc["paths"]["/v1/things"]["post"]
    # A body brings 400, a route that is not open 401 and 403, all with the error schema.
    assert sorted(create["responses"]) == ["201", "400", "401", "403", "409"]
    error = resolve(
        doc, create["responses"]["400"]["content"]["application/json"]["schema"]["$ref"]
    )
    assert error["required"] == ["error", "message"]
    body = create["requestBody"]["content"]["application/json"]["schema"]
    assert resolve(doc, body["$ref"])["properties"]["name"]["minLength"] == 1
    assert create["security"] == [{}, {"basic": []}, {"bearer": []}]


def test_path_parameters_and_a_response_without_body() -> None:
    delete = document()["paths"]["/v1/things/{name}/{n}"]["delete"]
    assert [p["name"] for p in delete["parameters"]] == ["name", "n"]
    assert all(p["in"] == "path" and p["required"] for p in delete["parameters"])
    assert "content" not in delete["responses"]["204"]
    assert "security" not in delete
    assert sorted(delete["responses"]) == ["204", "404"]


def test_integer_path_parameters_only_match_digits_in_the_router() -> None:
    assert ROUTES[2].router_path == "/v1/things/{name}/{n:\\d+}"


def test_every_reference_resolves() -> None:
    doc = document()

    def refs(node: Any) -> list[str]:
        if isinstance(node, dict):
            found = [node["$ref"]] if "$ref" in node else []
            return found + [r for value in node.values() for r in refs(value)]
        if isinstance(node, list):
            return [r for value in node for r in refs(value)]
        return []

    for ref in refs(doc):
        assert resolve(doc, ref)


def test_validation_errors_name_the_field() -> None:
    try:
        CreateTopic.model_validate({"name": "", "partitions": "many", "extra": 1})
    except ValidationError as error:
        message = validation_message(error)
    assert "name:" in message and "partitions:" in message and "extra:" in message
