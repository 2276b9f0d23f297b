"""ACLs and the decisions they make, with the semantics of Kafka's StandardAuthorizer.

An ACL (`AclBinding`) names a resource pattern (a resource type, a name and whether the name is
LITERAL or a PREFIXED match; the LITERAL name `*` matches every resource of its type), a
principal (`User:*` matches every principal), a host (`*` matches every host), an operation
and ALLOW or DENY. `AclIndex` holds the ACLs of a metadata image and decides
`(principal, host, operation, resource) -> allowed`:

- a super user (`super.users`) is always allowed;
- the ACLs that apply are those whose pattern matches the resource and whose principal and host
  match the caller's; a DENY ACL for the operation (or ALL) denies, whatever allows;
- otherwise an ALLOW ACL for the operation, ALL, or an operation implying it (READ, WRITE,
  DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows;
- with no ACL at all on the resource (for any principal), `allow.everyone.if.no.acl.found`
  decides; otherwise the caller is denied.

Decisions are cached per index (one per image) by (principal, host, operation, resource), so
the produce and fetch paths make one dictionary lookup per resource once warm.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType
from uuid import UUID

import structlog

from net.api_keys import ApiKey
from net.api_registry import RequestContext

log = structlog.get_logger(__name__)

WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

# Decisions kept per index before the cache starts over: bounds memory against clients that
# name many resources, while a steady workload stays cached.
_MAX_CACHED_DECISIONS = 100_000


class ResourceType(IntEnum):
    """Kafka's ResourceType codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    """Kafka's PatternType codes."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    """Kafka's AclOperation codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    """Kafka's AclPermissionType codes."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# The operations an ALLOW ACL of an operation also grants (Kafka's implied operations).
_IMPLIED_BY: Mapping[AclOperation, frozenset[AclOperation]] = MappingProxyType(
    {
        AclOperation.DESCRIBE: frozenset(
            {
                AclOperation.DESCRIBE,
                AclOperation.READ,
                AclOperation.WRITE,
                AclOperation.DELETE,
                AclOperation.ALTER,
            }
        ),
        AclOperation.DESCRIBE_CONFIGS: frozenset(
            {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
        ),
    }
)

# The operations each resource type supports: the authorized-operations bitfields of Metadata
# and DescribeCluster are made of these.
SUPPORTED_OPERATIONS: Mapping[ResourceType, tuple[AclOperation, ...]] = MappingProxyType(
    {
        ResourceType.TOPIC: (
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.CREATE,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
        ),
        ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
        ResourceType.CLUSTER: (
            AclOperation.CREATE,
            AclOperation.CLUSTER_ACTION,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
            AclOperation.IDEMPOTENT_WRITE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE,
        ),
        ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    }
)

_CONCRETE_RESOURCE_TYPES = frozenset(SUPPORTED_OPERATIONS) | {
    ResourceType.DELEGATION_TOKEN,
    ResourceType.USER,
}


class InvalidAclError(ValueError):
    """An ACL or ACL filter Kafka refuses with INVALID_REQUEST; the message says why."""


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry, as Kafka's AclBinding."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def validate(self) -> None:
        """Kafka's checks of a new ACL; `InvalidAclError` for one it refuses."""
        if self.resource_type not in _CONCRETE_RESOURCE_TYPES:
            raise InvalidAclError(f"Invalid resourceType {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAclError(f"Invalid patternType {self.pattern_type.name}")
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            raise InvalidAclError(f"Invalid operation {self.operation.name}")
        if self.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise InvalidAclError(f"Invalid permissionType {self.permission_type.name}")
        if not self.resource_name:
            raise InvalidAclError("Resource name should not be empty")
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        principal_type, separator, name = self.principal.partition(":")
        if not separator or not principal_type or not name:
            raise InvalidAclError(f"Could not parse principal from `{self.principal}`")


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Which ACLs DescribeAcls and DeleteAcls name, as Kafka's AclBindingFilter: ANY and None
    match everything; pattern type MATCH matches every pattern that applies to the name."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def validate(self) -> None:
        """`InvalidAclError` for a filter with an UNKNOWN element, as Kafka refuses it."""
        unknown = [
            name
            for name, value in (
                ("resourceType", self.resource_type),
                ("patternType", self.pattern_type),
                ("operation", self.operation),
                ("permissionType", self.permission_type),
            )
            if value == 0
        ]
        if unknown:
            raise InvalidAclError(f"The filter has an unknown {', '.join(unknown)}")

    def matches(self, acl: AclBinding) -> bool:
        """Whether `acl` is one this filter names."""
        if self.resource_type is not ResourceType.ANY and acl.resource_type != self.resource_type:
            return False
        if not self._matches_pattern(acl):
            return False
        return (
            (self.principal is None or acl.principal == self.principal)
            and (self.host is None or acl.host == self.host)
            and (self.operation is AclOperation.ANY or acl.operation == self.operation)
            and (
                self.permission_type is AclPermissionType.ANY
                or acl.permission_type == self.permission_type
            )
        )

    def _matches_pattern(self, acl: AclBinding) -> bool:
        if self.pattern_type is PatternType.MATCH:
            if self.resource_name is None:
                return True
            if acl.pattern_type is PatternType.PREFIXED:
                return self.resource_name.startswith(acl.resource_name)
            return acl.resource_name in (self.resource_name, WILDCARD_RESOURCE)
        if self.pattern_type is not PatternType.ANY and acl.pattern_type != self.pattern_type:
            return False
        return self.resource_name is None or acl.resource_name == self.resource_name


@dataclass(frozen=True, slots=True)
class AuthorizerSettings:
    """The node's authorizer configuration: `super_users` as principals written `User:name`."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


class AclIndex:
    """The ACLs of one metadata image, indexed for decisions; immutable once built.

    Literal ACLs are kept by (resource type, name), prefixed ones by (resource type, prefix);
    a decision looks up the literal name, the wildcard `*` and every prefix of the name.
    """

    __slots__ = ("_acls", "_decisions", "_ids", "_literal", "_prefix_lengths", "_prefixed")

    def __init__(self, acls: Mapping[UUID, AclBinding]) -> None:
        self._acls = acls
        self._ids = {acl: acl_id for acl_id, acl in acls.items()}
        literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        prefixed: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        lengths: dict[ResourceType, set[int]] = {}
        for acl in acls.values():
            key = (acl.resource_type, acl.resource_name)
            if acl.pattern_type is PatternType.PREFIXED:
                prefixed.setdefault(key, []).append(acl)
                lengths.setdefault(acl.resource_type, set()).add(len(acl.resource_name))
            else:
                literal.setdefault(key, []).append(acl)
        self._literal = {key: tuple(found) for key, found in literal.items()}
        self._prefixed = {key: tuple(found) for key, found in prefixed.items()}
        self._prefix_lengths = {kind: sorted(found) for kind, found in lengths.items()}
        self._decisions: dict[tuple[str, str, AclOperation, ResourceType, str, object], bool] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AclIndex) and dict(self._acls) == dict(other._acls)

    __hash__ = None  # type: ignore[assignment]

    @property
    def acls(self) -> Mapping[UUID, AclBinding]:
        """Every ACL, by id."""
        return self._acls

    def matching(self, acl_filter: AclFilter) -> list[tuple[UUID, AclBinding]]:
        """The ACLs `acl_filter` names, with their ids."""
        return [(acl_id, acl) for acl_id, acl in self._acls.items() if acl_filter.matches(acl)]

    def find(self, acl: AclBinding) -> UUID | None:
        """The id of an ACL equal to `acl`, if there is one."""
        return self._ids.get(acl)

    def authorize(
        self,
        settings: AuthorizerSettings,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        """Whether `principal` connecting from `host` may do `operation` on the resource."""
        key = (principal, host, operation, resource_type, resource_name, settings)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decide(
                settings, principal, host, operation, resource_type, resource_name
            )
            if len(self._decisions) >= _MAX_CACHED_DECISIONS:
                self._decisions.clear()
            self._decisions[key] = decision
        return decision

    def authorize_any(
        self,
        settings: AuthorizerSettings,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether `principal` from `host` may do `operation` on some resource of the type
        (Kafka's `authorizeByResourceType`, as InitProducerId asks for WRITE on any topic): an
        ALLOW for the operation that no DENY for every resource (the wildcard, or the empty
        prefix) overrides, or no ACL of the type at all with allow.everyone.if.no.acl.found."""
        if principal in settings.super_users:
            return True
        found = False
        allowed = False
        for acl in self._acls.values():
            if acl.resource_type != resource_type:
                continue
            found = True
            if acl.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if acl.host not in (host, WILDCARD_HOST):
                continue
            if acl.operation not in (operation, AclOperation.ALL):
                continue
            if acl.permission_type is AclPermissionType.DENY:
                if (
                    acl.resource_name == WILDCARD_RESOURCE
                    and acl.pattern_type is PatternType.LITERAL
                ) or (acl.pattern_type is PatternType.PREFIXED and not acl.resource_name):
                    return False
            else:
                allowed = True
        return allowed or (not found and settings.allow_everyone_if_no_acl_found)

    def _resource_acls(self, resource_type: ResourceType, name: str) -> Iterable[AclBinding]:
        yield from self._literal.get((resource_type, name), ())
        yield from self._literal.get((resource_type, WILDCARD_RESOURCE), ())
        for length in self._prefix_lengths.get(resource_type, ()):
            if length > len(name):
                break
            yield from self._prefixed.get((resource_type, name[:length]), ())

    def _decide(
        self,
        settings: AuthorizerSettings,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        if principal in settings.super_users:
            return True
        implied = _IMPLIED_BY.get(operation, frozenset((operation,)))
        found_resource_acls = False
        allowed = False
        for acl in self._resource_acls(resource_type, resource_name):
            found_resource_acls = True
            if acl.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if acl.host not in (host, WILDCARD_HOST):
                continue
            if acl.permission_type is AclPermissionType.DENY:
                if acl.operation in (operation, AclOperation.ALL):
                    return False
            elif acl.operation is AclOperation.ALL or acl.operation in implied:
                allowed = True
        if allowed:
            return True
        return not found_resource_acls and settings.allow_everyone_if_no_acl_found


EMPTY_INDEX = AclIndex(MappingProxyType({}))


def parse_super_users(value: str) -> frozenset[str]:
    """`super.users` as Kafka writes it: principals `User:name` separated by `;`.

    ValueError for an entry that is not `type:name`.
    """
    users = frozenset(entry.strip() for entry in value.split(";") if entry.strip())
    for user in users:
        principal_type, separator, name = user.partition(":")
        if not separator or not principal_type or not name:
            raise ValueError(f"super.users entries are written User:name, not {user!r}")
    return users


def client_host(peer: str) -> str:
    """The host of a `host:port` peer, as ACL hosts name it (IPv6 without brackets)."""
    host = peer.rpartition(":")[0]
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


class Authorizer:
    """The decisions of a node with an authorizer configured, over its current image's ACLs.

    `acls()` gives the index of the current image. While `loaded()` is false (Kafka's
    authorizer before its initial load of the metadata), only `super.users` are allowed. Each
    denial is logged at debug and counted (`denials`).
    """

    def __init__(
        self,
        settings: AuthorizerSettings,
        acls: Callable[[], AclIndex],
        loaded: Callable[[], bool] = lambda: True,
    ) -> None:
        self.settings = settings
        self._acls = acls
        self._loaded = loaded
        self.denials = 0

    def allows(
        self,
        context: RequestContext,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        """Whether the sender of the request may do `operation` on the resource."""
        return self.allows_principal(
            str(context.principal),
            client_host(context.peer),
            operation,
            resource_type,
            resource_name,
            api_key=context.header.api_key,
        )

    def allows_principal(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
        *,
        api_key: int | None = None,
    ) -> bool:
        """Whether `principal` (`User:alice`) connecting from `host` may do `operation` on
        the resource; `api_key`, when the request is a Kafka one, is logged with a denial."""
        if principal in self.settings.super_users or (
            self._loaded()
            and self._acls().authorize(
                self.settings, principal, host, operation, resource_type, resource_name
            )
        ):
            return True
        self.denials += 1
        log.debug(
            "authorization_denied",
            principal=principal,
            host=host,
            operation=operation.name,
            resource_type=resource_type.name,
            resource_name=resource_name,
            api_key=api_key,
        )
        return False

    def allows_cluster(self, context: RequestContext, operation: AclOperation) -> bool:
        """Whether the sender may do `operation` on the cluster."""
        return self.allows(context, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def allows_quorum_request(self, context: RequestContext) -> bool:
        """Whether the sender may send a request of the metadata quorum, as Kafka's
        ControllerApis asks: DESCRIBE on the cluster for DescribeQuorum, CLUSTER_ACTION for
        the voters' and observers' own (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
        FetchSnapshot)."""
        operation = (
            AclOperation.DESCRIBE
            if context.header.api_key == ApiKey.DESCRIBE_QUORUM
            else AclOperation.CLUSTER_ACTION
        )
        return self.allows_cluster(context, operation)

    def allows_any(
        self, context: RequestContext, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether the sender may do `operation` on some resource of the type."""
        return self._acls().authorize_any(
            self.settings,
            str(context.principal),
            client_host(context.peer),
            operation,
            resource_type,
        )

    def authorized_operations(
        self, context: RequestContext, resource_type: ResourceType, resource_name: str
    ) -> int:
        """Kafka's authorized-operations bitfield: one bit per allowed operation code."""
        bits = 0
        for operation in SUPPORTED_OPERATIONS[resource_type]:
            if self._acls().authorize(
                self.settings,
                str(context.principal),
                client_host(context.peer),
                operation,
                resource_type,
                resource_name,
            ):
                bits |= 1 << operation
        return bits
