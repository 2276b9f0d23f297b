"""ACLs: `/v1/acls` lists them (from this node's image), creates one (POST) and deletes those a
filter matches (DELETE), through the active controller as CreateAcls and DeleteAcls do.

Without an authorizer (`authorizer.class.name`), creating and deleting are refused, as Kafka
refuses them (SECURITY_DISABLED).
"""

from __future__ import annotations

from aiohttp import web
from kio.schema.errors import ErrorCode

from admin.errors import kafka_error
from admin.handlers.common import context, json_response, json_response_list, read_body
from admin.models import (
    Acl,
    AclFilter,
    AclOperationName,
    AclPatternType,
    AclPermission,
    AclResourceType,
)
from controller import acl_wire, acls
from controller.image import MetadataImage


def acl_model(binding: acls.AclBinding) -> Acl:
    """The admin view of one ACL."""
    return Acl(
        resource_type=AclResourceType(binding.resource_type.name),
        resource_name=binding.resource_name,
        pattern_type=AclPatternType(binding.pattern_type.name),
        principal=binding.principal,
        host=binding.host,
        operation=AclOperationName(binding.operation.name),
        permission=AclPermission(binding.permission_type.name),
    )


def acl_binding(model: Acl) -> acls.AclBinding:
    """The ACL an admin model describes."""
    return acls.AclBinding(
        acls.ResourceType[model.resource_type.value],
        model.resource_name,
        acls.PatternType[model.pattern_type.value],
        model.principal,
        model.host,
        acls.AclOperation[model.operation.value],
        acls.AclPermissionType[model.permission.value],
    )


def acl_filter(model: AclFilter) -> acls.AclFilter:
    """The filter an admin model describes; absent fields match everything."""
    return acls.AclFilter(
        acls.ResourceType.ANY
        if model.resource_type is None
        else acls.ResourceType[model.resource_type.value],
        model.resource_name,
        acls.PatternType.ANY
        if model.pattern_type is None
        else acls.PatternType[str(model.pattern_type)],
        model.principal,
        model.host,
        acls.AclOperation.ANY
        if model.operation is None
        else acls.AclOperation[model.operation.value],
        acls.AclPermissionType.ANY
        if model.permission is None
        else acls.AclPermissionType[model.permission.value],
    )


async def list_acls(request: web.Request) -> web.Response:
    image = context(request).image()
    found = sorted(
        image.acls.acls.values(),
        key=lambda a: (a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host),
    )
    return json_response_list([acl_model(binding) for binding in found])


async def create_acl(request: web.Request) -> web.Response:
    admin = context(request)
    body = await read_body(request, Acl)
    binding = acl_binding(body)
    response = await admin.to_controller(acl_wire.build_create_acls([binding]))
    result = response.results[0]
    if result.error_code != ErrorCode.none:
        raise kafka_error(result.error_code, result.error_message, "the ACL")

    def present(current: MetadataImage) -> bool:
        return current.acls.find(binding) is not None

    await admin.caught_up(present)
    return json_response(acl_model(binding), 201)


async def delete_acls(request: web.Request) -> web.Response:
    admin = context(request)
    body = await read_body(request, AclFilter)
    response = await admin.to_controller(acl_wire.build_delete_acls([acl_filter(body)]))
    result = response.filter_results[0]
    if result.error_code != ErrorCode.none:
        raise kafka_error(result.error_code, result.error_message, "the ACL filter")
    deleted = acl_wire.deleted_acls(response)

    def gone(current: MetadataImage) -> bool:
        return all(current.acls.find(binding) is None for binding in deleted)

    await admin.caught_up(gone)
    return json_response_list([acl_model(binding) for binding in deleted])
