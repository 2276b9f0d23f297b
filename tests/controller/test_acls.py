"""The authorizer's decisions (Kafka's StandardAuthorizer semantics), ACL changes, and their
place in the metadata image."""

from __future__ import annotations

import itertools
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.acl_changes import create_acls, delete_acls
from controller.acls import (
    AclBinding,
    AclFilter,
    AclIndex,
    AclOperation,
    AclPermissionType,
    Authorizer,
    AuthorizerSettings,
    PatternType,
    ResourceType,
    client_host,
    parse_super_users,
)
from controller.image import MetadataImage
from controller.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from net.api_keys import ApiKey
from net.api_registry import RequestContext
from net.principal import KafkaPrincipal
from net.protocol import RequestHeader

ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY
TOPIC = ResourceType.TOPIC
LITERAL = PatternType.LITERAL
PREFIXED = PatternType.PREFIXED
STRICT = AuthorizerSettings()


def acl(
    name: str,
    operation: AclOperation,
    permission: AclPermissionType = ALLOW,
    *,
    pattern: PatternType = LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    resource_type: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def index(*acls: AclBinding) -> AclIndex:
    return AclIndex({UUID(int=i + 1): binding for i, binding in enumerate(acls)})


def allowed(
    acls: AclIndex,
    operation: AclOperation,
    name: str = "orders",
    *,
    principal: str = "User:alice",
    host: str = "10.0.0.1",
    settings: AuthorizerSettings = STRICT,
    resource_type: ResourceType = TOPIC,
) -> bool:
    return acls.authorize(settings, principal, host, operation, resource_type, name)


def test_no_acls_denies_unless_allow_everyone_if_no_acl_found() -> None:
    assert not allowed(index(), AclOperation.READ)
    assert allowed(
        index(), AclOperation.READ, settings=AuthorizerSettings(allow_everyone_if_no_acl_found=True)
    )


def test_allow_everyone_applies_only_to_resources_without_any_acl() -> None:
    settings = AuthorizerSettings(allow_everyone_if_no_acl_found=True)
    acls = index(acl("orders", AclOperation.READ, principal="User:bob"))
    assert not allowed(acls, AclOperation.READ, settings=settings)
    assert allowed(acls, AclOperation.READ, "other", settings=settings)


def test_literal_allow_is_for_that_name_only() -> None:
    acls = index(acl("orders", AclOperation.WRITE))
    assert allowed(acls, AclOperation.WRITE)
    assert not allowed(acls, AclOperation.WRITE, "orders2")
    assert not allowed(acls, AclOperation.READ)


def test_prefixed_allow_covers_names_with_the_prefix() -> None:
    acls = index(acl("ord", AclOperation.READ, pattern=PREFIXED))
    assert allowed(acls, AclOperation.READ, "orders")
    assert allowed(acls, AclOperation.READ, "ord")
    assert not allowed(acls, AclOperation.READ, "or")
    assert not allowed(acls, AclOperation.READ, "payments")


def test_wildcard_literal_name_matches_every_resource_of_its_type() -> None:
    acls = index(acl("*", AclOperation.READ))
    assert allowed(acls, AclOperation.READ, "anything")
    assert not allowed(acls, AclOperation.READ, "g", resource_type=ResourceType.GROUP)


def test_prefixed_deny_overrides_literal_allow() -> None:
    acls = index(
        acl("orders", AclOperation.WRITE),
        acl("ord", AclOperation.WRITE, DENY, pattern=PREFIXED),
    )
    assert not allowed(acls, AclOperation.WRITE)


def test_deny_all_denies_every_operation_but_deny_read_not_describe() -> None:
    assert not allowed(
        index(acl("orders", AclOperation.ALL), acl("orders", AclOperation.ALL, DENY)),
        AclOperation.DESCRIBE,
    )
    acls = index(acl("orders", AclOperation.ALL), acl("orders", AclOperation.READ, DENY))
    assert not allowed(acls, AclOperation.READ)
    assert allowed(acls, AclOperation.DESCRIBE)


@pytest.mark.parametrize(
    "granted", [AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER]
)
def test_read_write_delete_alter_imply_describe(granted: AclOperation) -> None:
    acls = index(acl("orders", granted))
    assert allowed(acls, AclOperation.DESCRIBE)
    assert not allowed(acls, AclOperation.DESCRIBE_CONFIGS)


def test_alter_configs_implies_describe_configs_and_not_the_reverse() -> None:
    assert allowed(index(acl("orders", AclOperation.ALTER_CONFIGS)), AclOperation.DESCRIBE_CONFIGS)
    assert not allowed(
        index(acl("orders", AclOperation.DESCRIBE_CONFIGS)), AclOperation.ALTER_CONFIGS
    )
    assert not allowed(index(acl("orders", AclOperation.DESCRIBE)), AclOperation.READ)


def test_wildcard_principal_and_host() -> None:
    acls = index(acl("orders", AclOperation.READ, principal="User:*"))
    assert allowed(acls, AclOperation.READ, principal="User:anyone")
    host_bound = index(acl("orders", AclOperation.READ, host="127.0.0.1"))
    assert allowed(host_bound, AclOperation.READ, host="127.0.0.1")
    assert not allowed(host_bound, AclOperation.READ, host="10.0.0.1")


def test_super_users_are_allowed_even_against_a_deny() -> None:
    settings = AuthorizerSettings(super_users=parse_super_users("User:admin; User:ANONYMOUS"))
    acls = index(acl("orders", AclOperation.ALL, DENY, principal="User:*"))
    assert allowed(acls, AclOperation.WRITE, principal="User:admin", settings=settings)
    assert allowed(acls, AclOperation.WRITE, principal="User:ANONYMOUS", settings=settings)
    assert not allowed(acls, AclOperation.WRITE, principal="User:bob", settings=settings)


def test_super_users_are_written_type_colon_name() -> None:
    with pytest.raises(ValueError, match="User:name"):
        parse_super_users("admin")


def test_client_host_strips_the_port() -> None:
    assert client_host("127.0.0.1:5555") == "127.0.0.1"
    assert client_host("[::1]:5555") == "::1"


names = st.text("abc", min_size=1, max_size=4)
operations = st.sampled_from(
    [op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)]
)
bindings = st.builds(
    acl,
    names,
    operations,
    st.sampled_from([ALLOW, DENY]),
    pattern=st.sampled_from([LITERAL, PREFIXED]),
    principal=st.sampled_from(["User:alice", "User:bob", "User:*"]),
    host=st.sampled_from(["*", "10.0.0.1", "10.0.0.2"]),
)


def _applies(binding: AclBinding, name: str, operation: AclOperation) -> bool:
    pattern = (
        name.startswith(binding.resource_name)
        if binding.pattern_type is PREFIXED
        else binding.resource_name in (name, "*")
    )
    return (
        pattern
        and binding.principal in ("User:alice", "User:*")
        and binding.host in ("*", "10.0.0.1")
        and binding.operation in (operation, AclOperation.ALL)
    )


@given(st.lists(bindings, max_size=8), names, operations)
def test_deny_wins_and_a_matching_allow_is_needed(
    acls: list[AclBinding], name: str, operation: AclOperation
) -> None:
    decision = allowed(index(*acls), operation, name)
    denies = any(b.permission_type is DENY and _applies(b, name, operation) for b in acls)
    allows = any(b.permission_type is ALLOW and _applies(b, name, operation) for b in acls)
    if denies:
        assert not decision
    elif allows:
        assert decision
    if decision:
        assert not denies


@given(st.lists(bindings, max_size=8), names, operations)
def test_a_decision_is_cached_and_stable(
    acls: list[AclBinding], name: str, operation: AclOperation
) -> None:
    acl_index = index(*acls)
    assert allowed(acl_index, operation, name) == allowed(acl_index, operation, name)
    assert allowed(acl_index, operation, name) == allowed(index(*acls), operation, name)


def test_validation_refuses_what_kafka_refuses() -> None:
    ids = (UUID(int=i) for i in itertools.count(1))
    invalid = [
        acl("orders", AclOperation.ANY),
        acl("orders", AclOperation.READ, AclPermissionType.ANY),
        acl("orders", AclOperation.READ, pattern=PatternType.MATCH),
        acl("", AclOperation.READ),
        acl("orders", AclOperation.READ, principal="alice"),
        acl("other", AclOperation.ALTER, resource_type=ResourceType.CLUSTER),
        acl("orders", AclOperation.READ, resource_type=ResourceType.ANY),
    ]
    records, results = create_acls(index(), invalid, lambda: next(ids))
    assert records == []
    assert all(result.error is not None for result in results)


def test_create_writes_new_acls_once_and_delete_removes_what_filters_match() -> None:
    ids = (UUID(int=i) for i in itertools.count(1))
    reader = acl("orders", AclOperation.READ)
    writer = acl("ord", AclOperation.WRITE, pattern=PREFIXED)
    records, results = create_acls(index(reader), [reader, writer, writer], lambda: next(ids))
    assert [record.binding() for record in records] == [writer]
    assert [result.error for result in results] == [None, None, None]

    image = MetadataImage.from_records([AccessControlEntryRecord.of(UUID(int=9), reader), *records])
    match_orders = AclFilter(resource_name="orders", pattern_type=PatternType.MATCH)
    assert {found for _, found in image.acls.matching(match_orders)} == {reader, writer}
    removals, deleted = delete_acls(
        image.acls, [AclFilter(operation=AclOperation.WRITE), AclFilter(resource_type=TOPIC)]
    )
    assert len(removals) == 2
    assert deleted[0].deleted == (writer,)
    assert set(deleted[1].deleted) == {reader, writer}


def test_acls_are_replayed_removed_and_kept_in_snapshots() -> None:
    reader = acl("orders", AclOperation.READ)
    image = MetadataImage.from_records(
        [
            AccessControlEntryRecord.of(UUID(int=1), reader),
            AccessControlEntryRecord.of(UUID(int=2), acl("x", AclOperation.WRITE)),
            RemoveAccessControlEntryRecord(UUID(int=2)),
        ]
    )
    assert dict(image.acls.acls) == {UUID(int=1): reader}
    assert allowed(image.acls, AclOperation.READ)
    assert MetadataImage.from_records(image.to_records()) == image


def test_before_the_initial_load_only_super_users_are_allowed() -> None:
    """Kafka's authorizer before it loaded the metadata: the ACLs it has may be incomplete."""
    settings = AuthorizerSettings(super_users=parse_super_users("User:node"))
    acls = index(
        acl("kafka-cluster", AclOperation.CLUSTER_ACTION, resource_type=ResourceType.CLUSTER)
    )
    loaded = False
    authorizer = Authorizer(settings, lambda: acls, lambda: loaded)

    def vote_from(principal: str) -> bool:
        header = RequestHeader(ApiKey.VOTE, 0, 1, "peer", 10)
        context = RequestContext(
            header, "10.0.0.2:5000", 1, 0.0, 10, principal=KafkaPrincipal.parse(principal)
        )
        return authorizer.allows_quorum_request(context)

    assert vote_from("User:node")
    assert not vote_from("User:alice")
    loaded = True
    assert vote_from("User:alice")
    assert not vote_from("User:bob")
