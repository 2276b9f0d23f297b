"""The authorization of the admin requests brokers forward to the controller, with Kafka's
ControllerApis rules, applied by the controller to the request an Envelope carries (with the
client's principal):

- ElectLeaders, AlterPartitionReassignments, UnregisterBroker, CreateAcls, DeleteAcls and
  AlterUserScramCredentials need ALTER on the cluster, ListPartitionReassignments DESCRIBE;
  without it the whole request is CLUSTER_AUTHORIZATION_FAILED.
- CreateTopics (CREATE on the cluster or the topic), DeleteTopics (DELETE), CreatePartitions
  (ALTER) are answered per topic, (Incremental)AlterConfigs per resource (ALTER_CONFIGS on the
  topic, or on the cluster for a broker resource): the refused items get
  TOPIC_AUTHORIZATION_FAILED (CLUSTER_AUTHORIZATION_FAILED for a broker resource), the others
  go to `handle` and both answers are merged into one response.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import Payload

from controller import wire
from controller.acls import AclOperation, Authorizer, ResourceType
from controller.image import MetadataImage
from controller.records import ConfigResourceType
from net.api_keys import ApiKey
from net.api_registry import RequestContext

# The cluster operation each cluster-wide admin API needs.
_CLUSTER_OPERATIONS: dict[int, AclOperation] = {
    ApiKey.ELECT_LEADERS: AclOperation.ALTER,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: AclOperation.ALTER,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: AclOperation.DESCRIBE,
    ApiKey.UNREGISTER_BROKER: AclOperation.ALTER,
    ApiKey.CREATE_ACLS: AclOperation.ALTER,
    ApiKey.DELETE_ACLS: AclOperation.ALTER,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: AclOperation.ALTER,
}
# The topic APIs authorized per topic: the operation, and the response's list of topics.
_PER_TOPIC: dict[int, tuple[AclOperation, str]] = {
    ApiKey.CREATE_TOPICS: (AclOperation.CREATE, "topics"),
    ApiKey.DELETE_TOPICS: (AclOperation.DELETE, "responses"),
    ApiKey.CREATE_PARTITIONS: (AclOperation.ALTER, "results"),
}
_PER_RESOURCE = frozenset({ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CONFIGS})
# The admin APIs this authorizes (and an Envelope may carry).
AUTHORIZED_APIS = frozenset(_CLUSTER_OPERATIONS) | frozenset(_PER_TOPIC) | _PER_RESOURCE
_NO_TOPIC_ID = uuid.UUID(int=0)

# Answers an authorized request (or the authorized part of one).
Handle = Callable[[RequestContext, Any], Awaitable[Payload]]


def _with_items(message: Any, field: str, items: tuple[object, ...]) -> Any:
    """`message` (a kio request or response) with its list `field` replaced by `items`."""
    return dataclasses.replace(message, **{field: items})


class AdminRequestAuthorization:
    """Authorizes admin requests against `authorizer`, over the topics of `image()`."""

    def __init__(self, authorizer: Authorizer, image: Callable[[], MetadataImage]) -> None:
        self._authorizer = authorizer
        self._image = image

    async def authorized(self, context: RequestContext, request: Any, handle: Handle) -> Payload:
        """The answer to `request` from `context.principal`: what `handle` answers for the
        authorized part, the authorization errors for the rest."""
        version = context.header.api_version
        api_key = context.header.api_key
        operation = _CLUSTER_OPERATIONS.get(api_key)
        if operation is not None:
            if not self._authorizer.allows_cluster(context, operation):
                return wire.forwarded_refusal(
                    version, request, ErrorCode.cluster_authorization_failed
                )
            return await handle(context, request)
        per_topic = _PER_TOPIC.get(api_key)
        if per_topic is not None:
            topic_operation, response_field = per_topic
            request_field = "topic_names" if hasattr(request, "topic_names") else "topics"
            return await self._per_item(
                context,
                request,
                handle,
                (request_field, response_field),
                partial(self._topic_refusal, context, topic_operation),
            )
        if api_key in _PER_RESOURCE:
            return await self._per_item(
                context,
                request,
                handle,
                ("resources", "responses"),
                partial(self._alter_config_refusal, context),
            )
        raise ValueError(f"api key {api_key} is not an admin API authorized here")

    async def _per_item(
        self,
        context: RequestContext,
        request: Any,
        handle: Handle,
        fields: tuple[str, str],
        refusal: Callable[[Any], ErrorCode | None],
    ) -> Payload:
        """The items (topics, config resources) that `refusal` refuses are answered with its
        error, the others by `handle`. `fields` names the request's and the response's lists
        of items."""
        version = context.header.api_version
        request_field, response_field = fields
        items: tuple[object, ...] = getattr(request, request_field)
        refused_by_error: dict[ErrorCode, list[object]] = {}
        allowed: list[object] = []
        for item in items:
            error = refusal(item)
            if error is None:
                allowed.append(item)
            else:
                refused_by_error.setdefault(error, []).append(item)
        if not refused_by_error:
            return await handle(context, request)
        refusals = [
            wire.forwarded_refusal(
                version, _with_items(request, request_field, tuple(refused)), error
            )
            for error, refused in refused_by_error.items()
        ]
        if allowed:
            answered = await handle(context, _with_items(request, request_field, tuple(allowed)))
        else:
            answered, refusals = refusals[0], refusals[1:]
        merged: Payload = _with_items(
            answered,
            response_field,
            getattr(answered, response_field)
            + tuple(item for refused in refusals for item in getattr(refused, response_field)),
        )
        return merged

    def _topic_name(self, item: object) -> str | None:
        """The name of a topic a request names, by name or (DeleteTopics v6) by id."""
        if isinstance(item, str):
            return item
        name = getattr(item, "name", None)
        if name is not None:
            return str(name)
        topic = self._image().topics.get(getattr(item, "topic_id", None) or _NO_TOPIC_ID)
        return None if topic is None else topic.name

    def _topic_refusal(
        self, context: RequestContext, operation: AclOperation, item: object
    ) -> ErrorCode | None:
        """TOPIC_AUTHORIZATION_FAILED for a topic item the sender may not `operation`; CREATE
        on the cluster covers every topic a CreateTopics names. A topic named by an id that
        does not exist is left to the handler to answer."""
        authorizer = self._authorizer
        if operation is AclOperation.CREATE and authorizer.allows_cluster(
            context, AclOperation.CREATE
        ):
            return None
        name = self._topic_name(item)
        if name is None or authorizer.allows(context, operation, ResourceType.TOPIC, name):
            return None
        return ErrorCode.topic_authorization_failed

    def _alter_config_refusal(self, context: RequestContext, resource: Any) -> ErrorCode | None:
        """ALTER_CONFIGS on the topic, or on the cluster for a broker or broker logger."""
        authorizer = self._authorizer
        if int(resource.resource_type) == ConfigResourceType.TOPIC:
            if authorizer.allows(
                context, AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, resource.resource_name
            ):
                return None
            return ErrorCode.topic_authorization_failed
        if authorizer.allows_cluster(context, AclOperation.ALTER_CONFIGS):
            return None
        return ErrorCode.cluster_authorization_failed
