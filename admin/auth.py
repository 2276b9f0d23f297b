"""Who calls the admin API, and what they may do.

Authentication, from the `Authorization` header:
- `Bearer <admin.token>`: the operator's token; it may do everything, as a super user.
- `Basic` (RFC 7617): a SASL user's name and password, checked against the user's SCRAM
  credential in this node's metadata image (the salted password derived with the credential's
  salt and iterations, compared with the stored key in constant time, in a thread), exactly as a
  PLAIN login is; the caller is then `User:<name>`. Accepted only over https: on plain http the
  password would cross the network in clear, so it is refused (403 `https_required`) without
  being checked.
- no header: anonymous.
Wrong credentials are 401 on any route, with `WWW-Authenticate`.

Authorization: each route declares what its Kafka counterpart needs (`Access`, in the route
table): creating a topic CREATE on the cluster or the topic, deleting it DELETE, its configs
ALTER_CONFIGS, its partitions ALTER; ACLs, users, elections, reassignments, rebalances and
brokers ALTER on the cluster; reads DESCRIBE (on the topic for a topic's own resources, on the
cluster otherwise; the topic listing shows the topics the caller may DESCRIBE). With an
authorizer (`authorizer.class.name`) those are decided by the same ACLs and `super.users` as
the Kafka listener (the anonymous caller included: `User:ANONYMOUS`);
a refusal is 401 for an anonymous caller (so it knows to authenticate) and 403 naming the
operation and resource otherwise. Without an authorizer, mutations need a token or a user when
`admin.token` is set (as before), and reads are open. Health and the OpenAPI document are always
open (probes and tools read them without credentials).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from aiohttp import web

from admin.errors import ApiError
from controller.acls import CLUSTER_NAME, AclOperation, Authorizer, ResourceType

# Kafka's principal of a caller without credentials.
ANONYMOUS = "User:ANONYMOUS"
# (user, password) -> the check, to run in a thread, that the password is the user's.
PasswordCheck = Callable[[str, str], Callable[[], bool]]


@dataclass(frozen=True, slots=True)
class Permission:
    """`operation` on any one of `resources` (resource type and name)."""

    operation: AclOperation
    resources: tuple[tuple[ResourceType, str], ...]

    def __str__(self) -> str:
        alternatives = " or ".join(f"{kind.name} {name!r}" for kind, name in self.resources)
        return f"{self.operation.name} on {alternatives}"


# What a route needs of its caller, given the request (its path and, for some, its body).
Access = Callable[[web.Request], Awaitable[Sequence[Permission]]]


def on_cluster(*operations: AclOperation) -> Access:
    """Each of `operations` on the cluster."""
    needed = tuple(Permission(op, ((ResourceType.CLUSTER, CLUSTER_NAME),)) for op in operations)

    async def access(_: web.Request) -> Sequence[Permission]:
        return needed

    return access


def on_topic(operation: AclOperation) -> Access:
    """`operation` on the topic the path names."""

    async def access(request: web.Request) -> Sequence[Permission]:
        return (Permission(operation, ((ResourceType.TOPIC, request.match_info["name"]),)),)

    return access


async def create_topic(request: web.Request) -> Sequence[Permission]:
    """CREATE on the cluster or on the topic the body names (as CreateTopics); a body without
    a name asks CREATE on the cluster, and the handler refuses the body."""
    try:
        body = await request.json()
        name = body.get("name") if isinstance(body, dict) else None
    except ValueError:
        name = None
    resources = [(ResourceType.CLUSTER, CLUSTER_NAME)]
    if isinstance(name, str):
        resources.append((ResourceType.TOPIC, name))
    return (Permission(AclOperation.CREATE, tuple(resources)),)


async def move_replicas(request: web.Request) -> Sequence[Permission]:
    """ALTER on the cluster (AlterPartitionReassignments); with a throttle in the body also
    ALTER_CONFIGS on it (the throttle is IncrementalAlterConfigs of the cluster's configs)."""
    cluster = ((ResourceType.CLUSTER, CLUSTER_NAME),)
    needed = [Permission(AclOperation.ALTER, cluster)]
    try:
        body = await request.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("throttle_bytes_per_sec") is not None:
        needed.append(Permission(AclOperation.ALTER_CONFIGS, cluster))
    return needed


async def listing(_: web.Request) -> Sequence[Permission]:
    """Nothing of the caller: the handler lists only what it may DESCRIBE (as Metadata lists
    only the topics a client may describe)."""
    return ()


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent a request: `principal` (`User:name`, ANONYMOUS without credentials),
    `operator` when it gave the admin token."""

    principal: str
    operator: bool = False
    authenticated: bool = False


def _challenges(token: bool, tls: bool) -> str:
    schemes = (['Bearer realm="kraft"'] if token else []) + (
        ['Basic realm="kraft", charset="UTF-8"'] if tls else []
    )
    return ", ".join(schemes) or 'Basic realm="kraft"'


class AdminAuth:
    """Authenticates and authorizes the admin API's requests (see the module docstring)."""

    def __init__(
        self,
        *,
        token: str | None,
        password_check: PasswordCheck,
        tls: bool,
        authorizer: Authorizer | None,
    ) -> None:
        self._token = token
        self._password_check = password_check
        self._tls = tls
        self._authorizer = authorizer
        # The value of `WWW-Authenticate` on a 401.
        self.challenge = _challenges(token is not None, tls)

    async def caller(self, request: web.Request) -> Caller:
        """The caller of `request`; ApiError 401 for wrong credentials, 403 for a password
        over plain http."""
        header = request.headers.get("Authorization")
        if header is None:
            return Caller(ANONYMOUS)
        scheme, _, value = header.strip().partition(" ")
        scheme = scheme.lower()
        if scheme == "bearer":
            if self._token is not None and hmac.compare_digest(
                value.strip().encode(), self._token.encode()
            ):
                return Caller(ANONYMOUS, operator=True, authenticated=True)
            raise ApiError(401, "unauthorized", "the bearer token is not this node's admin.token")
        if scheme == "basic":
            if not self._tls:
                raise ApiError(
                    403,
                    "https_required",
                    "HTTP Basic credentials are only accepted over https (this admin listener "
                    "is http): the password would travel in clear; use admin.token or https",
                )
            user, password = _basic_credentials(value)
            if await asyncio.to_thread(self._password_check(user, password)):
                return Caller(f"User:{user}", authenticated=True)
            raise ApiError(401, "unauthorized", "invalid username or password")
        raise ApiError(
            401, "unauthorized", f"unsupported authorization scheme {scheme!r}: use Basic or Bearer"
        )

    async def authorize(
        self, request: web.Request, caller: Caller, access: Access | None, mutation: bool
    ) -> None:
        """Returns if `caller` may make `request` (a route needing `access`); ApiError 401 or
        403 otherwise."""
        if access is None or caller.operator:
            return
        if self._authorizer is None:
            if mutation and self._token is not None and not caller.authenticated:
                raise ApiError(
                    401, "unauthorized", "this request needs credentials (Bearer or Basic)"
                )
            return
        for permission in await access(request):
            if not any(
                self.allows(request, caller, permission.operation, kind, name)
                for kind, name in permission.resources
            ):
                if not caller.authenticated:
                    raise ApiError(
                        401,
                        "unauthorized",
                        f"this request needs {permission}, which an anonymous caller does "
                        "not have: authenticate (Basic or Bearer)",
                    )
                raise ApiError(
                    403,
                    "forbidden",
                    f"{caller.principal} is not authorized: this request needs {permission}",
                )

    def allows(
        self,
        request: web.Request,
        caller: Caller,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether `caller` may do `operation` on the resource: always without an authorizer
        or with the admin token."""
        if self._authorizer is None or caller.operator:
            return True
        return self._authorizer.allows_principal(
            caller.principal, request.remote or "", operation, resource_type, name
        )


def _basic_credentials(value: str) -> tuple[str, str]:
    """The user and password of a Basic credential; ApiError 401 when malformed."""
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ApiError(401, "unauthorized", "malformed Basic credentials") from None
    user, separator, password = decoded.partition(":")
    if not separator or not user:
        raise ApiError(401, "unauthorized", "malformed Basic credentials: user:password")
    return user, password
