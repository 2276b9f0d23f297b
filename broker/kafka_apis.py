"""The client listener's APIs on a broker.

Served from the broker's metadata image and settings: Metadata (which may ask the controller to
create the topics it names, `auto.create.topics.enable`), DescribeCluster and DescribeConfigs.
Forwarded to the active controller, as KRaft brokers do (KIP-590), so that a Kafka admin client
may talk to any broker and the answer is the controller's: CreateTopics, DeleteTopics,
CreatePartitions, IncrementalAlterConfigs, AlterConfigs, ElectLeaders,
AlterPartitionReassignments, ListPartitionReassignments and UnregisterBroker. When no
controller answers in time, those requests get REQUEST_TIMED_OUT.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any, TypeAlias

from kio.schema.errors import ErrorCode
from kio.static.protocol import Payload

from broker.auto_topic_creation import AutoTopicCreation
from broker.configs import DESCRIBE_CONFIGS_VERSIONS, BrokerSettings, describe_configs_response
from broker.metadata_api import (
    CLUSTER_AUTHORIZED_OPERATIONS,
    DESCRIBE_CLUSTER_VERSIONS,
    METADATA_VERSIONS,
    MetadataAccess,
    describe_cluster_error,
    describe_cluster_response,
    metadata_response,
    topics_to_create,
)
from controller import acl_wire, wire
from controller.acls import CLUSTER_NAME, AclOperation, Authorizer, ResourceType
from controller.client import ControllerClient, NoControllerError
from controller.image import MetadataImage
from controller.records import ConfigResourceType
from controller.scram import describe_scram_credentials
from net import messages
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext

# The controller APIs forwarded to the active controller.
_FORWARDED = frozenset(
    {
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.ALTER_CONFIGS,
        ApiKey.ELECT_LEADERS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        ApiKey.UNREGISTER_BROKER,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    }
)
_ForwardedRequest: TypeAlias = (
    messages.CreateTopicsRequest
    | messages.DeleteTopicsRequest
    | messages.CreatePartitionsRequest
    | messages.IncrementalAlterConfigsRequest
    | messages.AlterConfigsRequest
    | messages.ElectLeadersRequest
    | messages.AlterPartitionReassignmentsRequest
    | messages.ListPartitionReassignmentsRequest
    | messages.UnregisterBrokerRequest
    | messages.CreateAclsRequest
    | messages.DeleteAclsRequest
    | messages.AlterUserScramCredentialsRequest
)

# The cluster operation each forwarded cluster-wide API needs (Kafka's ControllerApis).
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
_NO_TOPIC_ID = uuid.UUID(int=0)


def _with_items(message: Any, field: str, items: tuple[object, ...]) -> Any:
    """`message` (a kio request or response) with its list `field` replaced by `items`."""
    return dataclasses.replace(message, **{field: items})


class BrokerApis:
    """The handlers of the client listener; `image` gives the current metadata image;
    `auto_creation` creates the topics Metadata requests ask for (None: topics are not created
    automatically)."""

    def __init__(
        self,
        broker_id: int,
        cluster_id: str,
        image: Callable[[], MetadataImage],
        controller: ControllerClient,
        settings: BrokerSettings,
        *,
        auto_creation: AutoTopicCreation | None = None,
        forward_timeout_s: float = 30.0,
        authorizer: Authorizer | None = None,
    ) -> None:
        self._broker_id = broker_id
        self._cluster_id = cluster_id
        self._image = image
        self._controller = controller
        self._forward_timeout_s = forward_timeout_s
        self._settings = settings
        self._auto_creation = auto_creation
        self._authorizer = authorizer

    def register(self, registry: ApiRegistry) -> None:
        registry.register(
            ApiKey.METADATA,
            self._on_metadata,
            min_version=METADATA_VERSIONS[0],
            max_version=METADATA_VERSIONS[1],
        )
        registry.register(
            ApiKey.DESCRIBE_CLUSTER,
            self._on_describe_cluster,
            min_version=DESCRIBE_CLUSTER_VERSIONS[0],
            max_version=DESCRIBE_CLUSTER_VERSIONS[1],
        )
        registry.register(
            ApiKey.DESCRIBE_CONFIGS,
            self._on_describe_configs,
            min_version=DESCRIBE_CONFIGS_VERSIONS[0],
            max_version=DESCRIBE_CONFIGS_VERSIONS[1],
        )
        registry.register(
            ApiKey.DESCRIBE_ACLS,
            self._on_describe_acls,
            min_version=acl_wire.ACL_VERSIONS[0],
            max_version=acl_wire.ACL_VERSIONS[1],
        )
        for api_key in (ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
            registry.register(
                api_key,
                self._forward,
                min_version=acl_wire.ACL_VERSIONS[0],
                max_version=acl_wire.ACL_VERSIONS[1],
            )
        # Answered from the metadata image, as Kafka's brokers answer it from their cache.
        registry.register(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            self._on_describe_user_scram_credentials,
            min_version=0,
            max_version=0,
        )
        for served in wire.SERVED:
            if served.api_key in _FORWARDED:
                registry.register(
                    served.api_key,
                    self._forward,
                    min_version=served.min_version,
                    max_version=served.max_version,
                )

    def _on_metadata(
        self, context: RequestContext, request: messages.MetadataRequest
    ) -> messages.MetadataResponse:
        image = self._image()
        access = self._metadata_access(context)
        creating: list[str] = []
        if self._auto_creation is not None:
            creating = topics_to_create(image, request)
            if access is not None and not access.allows(
                AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME
            ):
                creating = [
                    name
                    for name in creating
                    if access.allows(AclOperation.CREATE, ResourceType.TOPIC, name)
                ]
            self._auto_creation.create(creating)
        return metadata_response(
            image,
            self._broker_id,
            self._cluster_id,
            context.header.api_version,
            request,
            creating,
            access,
        )

    def _metadata_access(self, context: RequestContext) -> MetadataAccess | None:
        authorizer = self._authorizer
        if authorizer is None:
            return None
        return MetadataAccess(
            partial(authorizer.allows, context),
            partial(authorizer.authorized_operations, context),
        )

    def _on_describe_user_scram_credentials(
        self, context: RequestContext, request: messages.DescribeUserScramCredentialsRequest
    ) -> messages.DescribeUserScramCredentialsResponse:
        version = context.header.api_version
        authorizer = self._authorizer
        # As Kafka: DESCRIBE on the cluster, or the whole request is refused.
        if authorizer is not None and not authorizer.allows_cluster(context, AclOperation.DESCRIBE):
            return wire.describe_scram_credentials_response(
                version, (), ErrorCode.cluster_authorization_failed
            )
        users = None if request.users is None else [user.name for user in request.users]
        return wire.describe_scram_credentials_response(
            version, describe_scram_credentials(self._image(), users)
        )

    def _on_describe_cluster(
        self, context: RequestContext, request: messages.DescribeClusterRequest
    ) -> messages.DescribeClusterResponse:
        version = context.header.api_version
        authorizer = self._authorizer
        if authorizer is not None and not authorizer.allows_cluster(context, AclOperation.DESCRIBE):
            return describe_cluster_error(version, ErrorCode.cluster_authorization_failed)
        return describe_cluster_response(
            self._image(),
            self._broker_id,
            self._cluster_id,
            version,
            include_cluster_authorized_operations=request.include_cluster_authorized_operations,
            cluster_operations=CLUSTER_AUTHORIZED_OPERATIONS
            if authorizer is None
            else authorizer.authorized_operations(context, ResourceType.CLUSTER, CLUSTER_NAME),
        )

    def _on_describe_configs(
        self, context: RequestContext, request: messages.DescribeConfigsRequest
    ) -> messages.DescribeConfigsResponse:
        response: messages.DescribeConfigsResponse = describe_configs_response(
            self._image(),
            self._settings,
            context.header.api_version,
            request,
            None if self._authorizer is None else partial(self._config_refusal, context),
        )
        return response

    def _on_describe_acls(
        self, context: RequestContext, request: messages.DescribeAclsRequest
    ) -> messages.DescribeAclsResponse:
        version = context.header.api_version
        if self._authorizer is None:
            return acl_wire.describe_acls_response(
                version, (), ErrorCode.security_disabled, "No Authorizer is configured."
            )
        if not self._authorizer.allows_cluster(context, AclOperation.DESCRIBE):
            return acl_wire.describe_acls_response(
                version, (), ErrorCode.cluster_authorization_failed
            )
        acl_filter = acl_wire.acl_filter(request)
        try:
            acl_filter.validate()
        except ValueError as error:
            return acl_wire.describe_acls_response(
                version, (), ErrorCode.invalid_request, str(error)
            )
        return acl_wire.describe_acls_response(
            version, (acl for _, acl in self._image().acls.matching(acl_filter))
        )

    def _topic_name(self, item: object) -> str | None:
        """The name of a topic a request names, by name or (DeleteTopics v6) by id."""
        if isinstance(item, str):
            return item
        name = getattr(item, "name", None)
        if name is not None:
            return str(name)
        topic = self._image().topics.get(getattr(item, "topic_id", None) or _NO_TOPIC_ID)
        return None if topic is None else topic.name

    async def _forward_per_item(
        self,
        version: int,
        request: _ForwardedRequest,
        fields: tuple[str, str],
        refusal: Callable[[Any], ErrorCode | None],
    ) -> Payload:
        """A request answered per item as Kafka does: the items (topics, config resources) that
        `refusal` refuses are answered with its error, the others are forwarded. `fields` names
        the request's and the response's lists of items."""
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
            return await self._send(version, request)
        refusals = [
            wire.forwarded_refusal(
                version, _with_items(request, request_field, tuple(refused)), error
            )
            for error, refused in refused_by_error.items()
        ]
        if allowed:
            answered = await self._send(
                version, _with_items(request, request_field, tuple(allowed))
            )
        else:
            answered, refusals = refusals[0], refusals[1:]
        merged: Payload = _with_items(
            answered,
            response_field,
            getattr(answered, response_field)
            + tuple(item for refused in refusals for item in getattr(refused, response_field)),
        )
        return merged

    def _topic_refusal(
        self, context: RequestContext, operation: AclOperation, item: object
    ) -> ErrorCode | None:
        """TOPIC_AUTHORIZATION_FAILED for a topic item the sender may not `operation`; CREATE
        on the cluster covers every topic a CreateTopics names. A topic named by an id that
        does not exist is the controller's to answer."""
        authorizer = self._authorizer
        assert authorizer is not None
        if operation is AclOperation.CREATE and authorizer.allows_cluster(
            context, AclOperation.CREATE
        ):
            return None
        name = self._topic_name(item)
        if name is None or authorizer.allows(context, operation, ResourceType.TOPIC, name):
            return None
        return ErrorCode.topic_authorization_failed

    def _alter_config_refusal(self, context: RequestContext, resource: Any) -> ErrorCode | None:
        """(Incremental)AlterConfigs: ALTER_CONFIGS on the topic, or on the cluster for a
        broker or broker logger resource (Kafka's ControllerApis)."""
        authorizer = self._authorizer
        assert authorizer is not None
        if int(resource.resource_type) == ConfigResourceType.TOPIC:
            if authorizer.allows(
                context, AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, resource.resource_name
            ):
                return None
            return ErrorCode.topic_authorization_failed
        if authorizer.allows_cluster(context, AclOperation.ALTER_CONFIGS):
            return None
        return ErrorCode.cluster_authorization_failed

    def _config_refusal(
        self, context: RequestContext, resource_type: int, name: str
    ) -> ErrorCode | None:
        """DescribeConfigs: DESCRIBE_CONFIGS on the topic, or on the cluster for a broker."""
        authorizer = self._authorizer
        assert authorizer is not None
        if resource_type == ConfigResourceType.TOPIC:
            if authorizer.allows(context, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name):
                return None
            return ErrorCode.topic_authorization_failed
        if authorizer.allows_cluster(context, AclOperation.DESCRIBE_CONFIGS):
            return None
        return ErrorCode.cluster_authorization_failed

    async def _forward(self, context: RequestContext, request: _ForwardedRequest) -> Payload:
        """Forwards `request` to the active controller once authorized here, on the broker the
        client talks to: the controller sees the broker's connection, not the client's."""
        version = context.header.api_version
        authorizer = self._authorizer
        if authorizer is None:
            return await self._send(version, request)
        api_key = context.header.api_key
        operation = _CLUSTER_OPERATIONS.get(api_key)
        if operation is not None:
            if not authorizer.allows_cluster(context, operation):
                return wire.forwarded_refusal(
                    version, request, ErrorCode.cluster_authorization_failed
                )
            return await self._send(version, request)
        per_topic = _PER_TOPIC.get(api_key)
        if per_topic is not None:
            topic_operation, response_field = per_topic
            request_field = "topic_names" if hasattr(request, "topic_names") else "topics"
            return await self._forward_per_item(
                version,
                request,
                (request_field, response_field),
                partial(self._topic_refusal, context, topic_operation),
            )
        if isinstance(
            request, messages.IncrementalAlterConfigsRequest | messages.AlterConfigsRequest
        ):
            return await self._forward_per_item(
                version,
                request,
                ("resources", "responses"),
                partial(self._alter_config_refusal, context),
            )
        return await self._send(version, request)

    async def _send(self, version: int, request: _ForwardedRequest) -> Payload:
        try:
            # The controller answers with the response of the request's own API and version.
            response: Payload = await self._controller.send(
                request, deadline_s=self._forward_timeout_s, patient=True
            )
        except NoControllerError:
            return wire.forwarded_refusal(version, request, ErrorCode.request_timed_out)
        return response
