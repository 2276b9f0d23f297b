"""The admin API's authentication (Bearer token, HTTP Basic against SCRAM credentials) and its
routes' ACL checks, on requests built by aiohttp's test utilities."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Coroutine
from typing import Any
from uuid import UUID

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from multidict import CIMultiDict

from admin.auth import ANONYMOUS, Access, AdminAuth, Caller, create_topic, move_replicas
from admin.errors import ApiError
from admin.routes import ROUTES
from controller.acls import (
    CLUSTER_NAME,
    AclBinding,
    AclIndex,
    AclOperation,
    AclPermissionType,
    Authorizer,
    AuthorizerSettings,
    PatternType,
    ResourceType,
)
from net.sasl import SCRAM_SHA_256, ScramCredential, password_check, scram_credential

CREDENTIALS = {("alice", SCRAM_SHA_256): scram_credential(SCRAM_SHA_256, "alice-secret", 4096)}


def lookup(user: str, mechanism: str) -> ScramCredential | None:
    return CREDENTIALS.get((user, mechanism))


def checker(user: str, password: str) -> Callable[[], bool]:
    return password_check(lookup, user, password)


def allow(operation: AclOperation, resource_type: ResourceType, name: str) -> AclBinding:
    return AclBinding(
        resource_type,
        name,
        PatternType.LITERAL,
        "User:alice",
        "*",
        operation,
        AclPermissionType.ALLOW,
    )


def guard(
    *, tls: bool = True, token: str | None = None, acls: list[AclBinding] | None = None
) -> AdminAuth:
    authorizer = None
    if acls is not None:
        index = AclIndex({UUID(int=i + 1): acl for i, acl in enumerate(acls)})
        authorizer = Authorizer(AuthorizerSettings(), lambda: index)
    return AdminAuth(token=token, password_check=checker, tls=tls, authorizer=authorizer)


def request(
    method: str = "GET",
    path: str = "/v1/cluster",
    authorization: str | None = None,
    body: object = None,
    match_info: dict[str, str] | None = None,
) -> web.Request:
    headers = CIMultiDict[str]()
    if authorization is not None:
        headers["Authorization"] = authorization
    made = make_mocked_request(method, path, headers=headers, match_info=match_info or {})
    if body is not None:
        encoded = json.dumps(body).encode()

        async def read() -> bytes:
            return encoded

        made.read = read  # type: ignore[method-assign]
    return made


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def refusal(coroutine: Coroutine[Any, Any, object]) -> tuple[int, str]:
    with pytest.raises(ApiError) as refused:
        asyncio.run(coroutine)
    return refused.value.status, refused.value.message


def test_basic_authenticates_a_user_by_its_scram_credential_over_https_only() -> None:
    caller = asyncio.run(guard().caller(request(authorization=basic("alice", "alice-secret"))))
    assert caller == Caller("User:alice", authenticated=True)
    assert refusal(guard().caller(request(authorization=basic("alice", "wrong"))))[0] == 401
    assert refusal(guard().caller(request(authorization=basic("mallory", "x"))))[0] == 401
    assert refusal(guard().caller(request(authorization="Basic not-base64!")))[0] == 401
    status, message = refusal(
        guard(tls=False).caller(request(authorization=basic("alice", "alice-secret")))
    )
    assert status == 403 and "https" in message
    assert asyncio.run(guard().caller(request())) == Caller(ANONYMOUS)


def test_the_admin_token_is_an_operator_and_a_wrong_one_is_401() -> None:
    caller = asyncio.run(guard(token="t0k").caller(request(authorization="Bearer t0k")))
    assert caller.operator and caller.authenticated
    assert refusal(guard(token="t0k").caller(request(authorization="Bearer nope")))[0] == 401
    assert refusal(guard().caller(request(authorization="Bearer anything")))[0] == 401
    assert refusal(guard().caller(request(authorization="Digest x")))[0] == 401


def route_access(method: str, path: str) -> Access | None:
    return next(route.access for route in ROUTES if (route.method, route.path) == (method, path))


def test_routes_need_what_their_kafka_counterparts_need() -> None:
    alice = Caller("User:alice", authenticated=True)
    delete_topic = route_access("DELETE", "/v1/topics/{name}")
    on_orders = {"name": "orders"}
    auth = guard(acls=[allow(AclOperation.DELETE, ResourceType.TOPIC, "orders")])
    asyncio.run(
        auth.authorize(request("DELETE", match_info=on_orders), alice, delete_topic, mutation=True)
    )
    status, message = refusal(
        auth.authorize(
            request("DELETE", match_info={"name": "other"}), alice, delete_topic, mutation=True
        )
    )
    assert status == 403
    assert message == "User:alice is not authorized: this request needs DELETE on TOPIC 'other'"
    # The anonymous caller is told to authenticate.
    status, _ = refusal(
        auth.authorize(
            request("DELETE", match_info=on_orders), Caller(ANONYMOUS), delete_topic, True
        )
    )
    assert status == 401
    # The token holder may do everything.
    asyncio.run(
        auth.authorize(request("DELETE"), Caller(ANONYMOUS, operator=True), delete_topic, True)
    )
    users = route_access("POST", "/v1/users")
    status, message = refusal(auth.authorize(request("POST"), alice, users, True))
    assert status == 403 and f"ALTER on CLUSTER '{CLUSTER_NAME}'" in message


def test_creating_a_topic_needs_create_on_the_cluster_or_the_topic() -> None:
    alice = Caller("User:alice", authenticated=True)
    on_topic = guard(acls=[allow(AclOperation.CREATE, ResourceType.TOPIC, "orders")])
    asyncio.run(
        on_topic.authorize(request("POST", body={"name": "orders"}), alice, create_topic, True)
    )
    assert (
        refusal(
            on_topic.authorize(request("POST", body={"name": "other"}), alice, create_topic, True)
        )[0]
        == 403
    )
    on_cluster = guard(acls=[allow(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)])
    asyncio.run(
        on_cluster.authorize(request("POST", body={"name": "x"}), alice, create_topic, True)
    )


def test_a_throttled_move_also_needs_alter_configs_on_the_cluster() -> None:
    alice = Caller("User:alice", authenticated=True)
    auth = guard(acls=[allow(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)])
    asyncio.run(
        auth.authorize(request("POST", body={"partitions": []}), alice, move_replicas, True)
    )
    status, message = refusal(
        auth.authorize(
            request("POST", body={"throttle_bytes_per_sec": 1000}), alice, move_replicas, True
        )
    )
    assert status == 403 and "ALTER_CONFIGS" in message


def test_without_an_authorizer_mutations_need_credentials_only_when_a_token_is_set() -> None:
    anonymous = Caller(ANONYMOUS)
    alter = route_access("POST", "/v1/acls")
    asyncio.run(guard().authorize(request("POST"), anonymous, alter, True))
    assert refusal(guard(token="t").authorize(request("POST"), anonymous, alter, True))[0] == 401
    alice = Caller("User:alice", authenticated=True)
    asyncio.run(guard(token="t").authorize(request("POST"), alice, alter, True))
    # Reads stay open.
    asyncio.run(
        guard(token="t").authorize(request(), anonymous, route_access("GET", "/v1/cluster"), False)
    )


def test_every_mutation_declares_its_own_access_and_only_health_and_the_document_are_open() -> None:
    describe = route_access("GET", "/v1/cluster")
    for route in ROUTES:
        if route.mutation:
            assert route.access is not None and route.access is not describe, route.path
    assert {route.path for route in ROUTES if route.access is None} == {
        "/v1/health/live",
        "/v1/health/ready",
        "/v1/openapi.json",
    }
