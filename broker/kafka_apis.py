"""The client listener's APIs on a broker.

Served from the broker's metadata image and settings: Metadata (which may ask the controller to
create the topics it names, `auto.create.topics.enable`), DescribeCluster and DescribeConfigs.
Forwarded to the active controller, as KRaft brokers do (KIP-590), so that a Kafka admin client
may talk to any broker and the answer is the controller's: CreateTopics, DeleteTopics,
CreatePartitions, IncrementalAlterConfigs, AlterConfigs, ElectLeaders,
AlterPartitionReassignments, ListPartitionReassignments, UnregisterBroker,
AlterUserScramCredentials, CreateAcls and DeleteAcls. With an authorizer they travel in an
Envelope with the client's principal, and the controller authorizes them as the client's. When
no controller answers in time, those requests get REQUEST_TIMED_OUT.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, TypeAlias

import structlog
from kio.schema.envelope.v0.response import EnvelopeResponse
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
from controller.acls import CLUSTER_NAME, AclOperation, Authorizer, ResourceType, client_host
from controller.client import ControllerClient, NoControllerError
from controller.image import MetadataImage
from controller.records import ConfigResourceType
from controller.scram import describe_scram_credentials
from net import messages
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.envelope import EnvelopeError, seal, unseal_response

log = structlog.get_logger(__name__)

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
# The message unions exist for the type checker only (see net.messages).
if TYPE_CHECKING:
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
            context.listener,
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
            listener=context.listener,
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
        """Forwards `request` to the active controller. With an authorizer, in an Envelope
        with the client's principal and address: the controller authorizes it as the
        client's (Kafka's forwarding, KIP-590)."""
        version = context.header.api_version
        if self._authorizer is None:
            return await self._send(version, request, request)
        envelope = seal(
            request, context.header.client_id, context.principal, client_host(context.peer)
        )
        answer = await self._send(version, request, envelope)
        if not isinstance(answer, EnvelopeResponse):
            return answer
        if answer.error_code != ErrorCode.none:
            return wire.forwarded_refusal(version, request, answer.error_code)
        try:
            return unseal_response(answer, request)
        except EnvelopeError as error:
            log.warning(
                "forwarded_response_malformed", api_key=request.__api_key__, error=str(error)
            )
            return wire.forwarded_refusal(version, request, ErrorCode.unknown_server_error)

    async def _send(self, version: int, request: _ForwardedRequest, sent: Payload) -> Payload:
        """The controller's answer to `sent` (`request`, or its envelope); `request` refused
        REQUEST_TIMED_OUT when no controller answers in time."""
        try:
            # The controller answers with the response of the request's own API and version.
            response: Payload = await self._controller.send(
                sent, deadline_s=self._forward_timeout_s, patient=True
            )
        except NoControllerError:
            return wire.forwarded_refusal(version, request, ErrorCode.request_timed_out)
        return response
