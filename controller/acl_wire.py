"""CreateAcls, DescribeAcls and DeleteAcls (v1-v3) between kio messages and `controller.acls`."""

from __future__ import annotations

import typing
from collections.abc import Iterable, Sequence
from enum import IntEnum
from typing import TypeVar

from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.delete_acls.v3.request import DeleteAclsFilter, DeleteAclsRequest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from controller.acl_changes import AclCreationResult, AclDeletionResult
from controller.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from net import messages
from net.protocol import NO_THROTTLE, field_entity_type, make_entity

ACL_VERSIONS = (1, 3)

_Code = TypeVar("_Code", bound=IntEnum)


def _code(enum_type: type[_Code], value: int) -> _Code:
    # A code this node does not know is UNKNOWN (0 in each of Kafka's enums), which validation
    # then refuses.
    try:
        return enum_type(value)
    except ValueError:
        return enum_type(0)


class _FilterFields(typing.Protocol):
    @property
    def resource_type_filter(self) -> int: ...
    @property
    def resource_name_filter(self) -> str | None: ...
    @property
    def pattern_type_filter(self) -> int: ...
    @property
    def principal_filter(self) -> str | None: ...
    @property
    def host_filter(self) -> str | None: ...
    @property
    def operation(self) -> int: ...
    @property
    def permission_type(self) -> int: ...


def acl_filter(fields: _FilterFields) -> AclFilter:
    """The filter of a DescribeAclsRequest or of one DeleteAcls filter."""
    return AclFilter(
        _code(ResourceType, fields.resource_type_filter),
        fields.resource_name_filter,
        _code(PatternType, fields.pattern_type_filter),
        fields.principal_filter,
        fields.host_filter,
        _code(AclOperation, fields.operation),
        _code(AclPermissionType, fields.permission_type),
    )


def create_acls_request(request: messages.CreateAclsRequest) -> list[AclBinding]:
    """The ACLs a CreateAclsRequest asks for, in order."""
    return [
        AclBinding(
            _code(ResourceType, creation.resource_type),
            creation.resource_name,
            _code(PatternType, creation.resource_pattern_type),
            creation.principal,
            creation.host,
            _code(AclOperation, creation.operation),
            _code(AclPermissionType, creation.permission_type),
        )
        for creation in request.creations
    ]


def create_acls_response(
    version: int, results: Sequence[AclCreationResult]
) -> messages.CreateAclsResponse:
    schema = messages.CREATE_ACLS_RESPONSES[version]
    result_type = field_entity_type(schema, "results")
    return make_entity(
        schema,
        throttle_time=NO_THROTTLE,
        results=tuple(
            make_entity(
                result_type,
                error_code=ErrorCode.none if result.error is None else ErrorCode.invalid_request,
                error_message=None if result.error is None else str(result.error),
            )
            for result in results
        ),
    )


def create_acls_error(
    version: int, request: messages.CreateAclsRequest, error: ErrorCode, message: str | None
) -> messages.CreateAclsResponse:
    """Every creation of `request` refused with `error`."""
    schema = messages.CREATE_ACLS_RESPONSES[version]
    result_type = field_entity_type(schema, "results")
    return make_entity(
        schema,
        throttle_time=NO_THROTTLE,
        results=tuple(
            make_entity(result_type, error_code=error, error_message=message)
            for _ in request.creations
        ),
    )


def describe_acls_response(
    version: int,
    acls: Iterable[AclBinding],
    error: ErrorCode = ErrorCode.none,
    message: str | None = None,
) -> messages.DescribeAclsResponse:
    """The ACLs grouped by resource pattern, as Kafka answers DescribeAcls."""
    schema = messages.DESCRIBE_ACLS_RESPONSES[version]
    resource_type = field_entity_type(schema, "resources")
    acl_type = field_entity_type(resource_type, "acls")
    by_resource: dict[tuple[int, str, int], list[AclBinding]] = {}
    for acl in acls:
        key = (acl.resource_type.value, acl.resource_name, acl.pattern_type.value)
        by_resource.setdefault(key, []).append(acl)
    return make_entity(
        schema,
        throttle_time=NO_THROTTLE,
        error_code=error,
        error_message=message,
        resources=tuple(
            make_entity(
                resource_type,
                resource_type=kind,
                resource_name=name,
                pattern_type=pattern,
                acls=tuple(
                    make_entity(
                        acl_type,
                        principal=acl.principal,
                        host=acl.host,
                        operation=acl.operation.value,
                        permission_type=acl.permission_type.value,
                    )
                    for acl in found
                ),
            )
            for (kind, name, pattern), found in sorted(by_resource.items())
        ),
    )


def delete_acls_request(request: messages.DeleteAclsRequest) -> list[AclFilter]:
    """The filters of a DeleteAclsRequest, in order."""
    return [acl_filter(item) for item in request.filters]


def delete_acls_response(
    version: int, results: Sequence[AclDeletionResult]
) -> messages.DeleteAclsResponse:
    schema = messages.DELETE_ACLS_RESPONSES[version]
    result_type = field_entity_type(schema, "filter_results")
    matching_type = field_entity_type(result_type, "matching_acls")
    return make_entity(
        schema,
        throttle_time=NO_THROTTLE,
        filter_results=tuple(
            make_entity(
                result_type,
                error_code=ErrorCode.none if result.error is None else ErrorCode.invalid_request,
                error_message=None if result.error is None else str(result.error),
                matching_acls=tuple(
                    make_entity(
                        matching_type,
                        error_code=ErrorCode.none,
                        error_message=None,
                        resource_type=acl.resource_type.value,
                        resource_name=acl.resource_name,
                        pattern_type=acl.pattern_type.value,
                        principal=acl.principal,
                        host=acl.host,
                        operation=acl.operation.value,
                        permission_type=acl.permission_type.value,
                    )
                    for acl in result.deleted
                ),
            )
            for result in results
        ),
    )


def delete_acls_error(
    version: int, request: messages.DeleteAclsRequest, error: ErrorCode, message: str | None
) -> messages.DeleteAclsResponse:
    """Every filter of `request` refused with `error`."""
    schema = messages.DELETE_ACLS_RESPONSES[version]
    result_type = field_entity_type(schema, "filter_results")
    return make_entity(
        schema,
        throttle_time=NO_THROTTLE,
        filter_results=tuple(
            make_entity(result_type, error_code=error, error_message=message, matching_acls=())
            for _ in request.filters
        ),
    )


def build_create_acls(acls: Sequence[AclBinding]) -> messages.CreateAclsRequest:
    """CreateAcls (v3) of `acls`, as the admin API sends it."""
    return CreateAclsRequest(
        creations=tuple(
            AclCreation(
                resource_type=i8(acl.resource_type),
                resource_name=acl.resource_name,
                resource_pattern_type=i8(acl.pattern_type),
                principal=acl.principal,
                host=acl.host,
                operation=i8(acl.operation),
                permission_type=i8(acl.permission_type),
            )
            for acl in acls
        )
    )


def build_delete_acls(filters: Sequence[AclFilter]) -> messages.DeleteAclsRequest:
    """DeleteAcls (v3) of `filters`, as the admin API sends it."""
    return DeleteAclsRequest(
        filters=tuple(
            DeleteAclsFilter(
                resource_type_filter=i8(item.resource_type),
                resource_name_filter=item.resource_name,
                pattern_type_filter=i8(item.pattern_type),
                principal_filter=item.principal,
                host_filter=item.host,
                operation=i8(item.operation),
                permission_type=i8(item.permission_type),
            )
            for item in filters
        )
    )


def deleted_acls(response: messages.DeleteAclsResponse) -> list[AclBinding]:
    """The ACLs a DeleteAcls response says were deleted, over all its filters."""
    return [
        AclBinding(
            _code(ResourceType, acl.resource_type),
            acl.resource_name,
            _code(PatternType, acl.pattern_type),
            acl.principal,
            acl.host,
            _code(AclOperation, acl.operation),
            _code(AclPermissionType, acl.permission_type),
        )
        for result in response.filter_results
        for acl in result.matching_acls
    ]
