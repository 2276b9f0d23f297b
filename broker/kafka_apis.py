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

from collections.abc import Callable
from typing import TypeAlias

from kio.schema.errors import ErrorCode
from kio.static.protocol import Payload

from broker.auto_topic_creation import AutoTopicCreation
from broker.configs import DESCRIBE_CONFIGS_VERSIONS, BrokerSettings, describe_configs_response
from broker.metadata_api import (
    DESCRIBE_CLUSTER_VERSIONS,
    METADATA_VERSIONS,
    describe_cluster_response,
    metadata_response,
    topics_to_create,
)
from controller import wire
from controller.client import ControllerClient, NoControllerError
from controller.image import MetadataImage
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
    | messages.AlterUserScramCredentialsRequest
)


def _refusal(version: int, request: _ForwardedRequest, error: ErrorCode) -> Payload:
    """The response to a forwarded `request` refusing every item of it with `error`."""
    if isinstance(request, messages.CreateTopicsRequest):
        return wire.create_topics_error(version, request, error)
    if isinstance(request, messages.DeleteTopicsRequest):
        return wire.delete_topics_error(version, request, error)
    if isinstance(request, messages.CreatePartitionsRequest):
        return wire.create_partitions_error(version, request, error)
    if isinstance(request, messages.IncrementalAlterConfigsRequest):
        return wire.incremental_alter_configs_error(version, request, error)
    if isinstance(request, messages.AlterPartitionReassignmentsRequest):
        return wire.alter_reassignments_error(version, error)
    if isinstance(request, messages.ListPartitionReassignmentsRequest):
        return wire.list_reassignments_error(version, error)
    if isinstance(request, messages.UnregisterBrokerRequest):
        return wire.unregister_broker_error(version, error)
    if isinstance(request, messages.AlterConfigsRequest):
        return wire.alter_configs_error(version, request, error)
    if isinstance(request, messages.AlterUserScramCredentialsRequest):
        return wire.alter_scram_credentials_error(version, request, error)
    return wire.elect_leaders_response(version, (), error)


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
    ) -> None:
        self._broker_id = broker_id
        self._cluster_id = cluster_id
        self._image = image
        self._controller = controller
        self._forward_timeout_s = forward_timeout_s
        self._settings = settings
        self._auto_creation = auto_creation

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
        creating: list[str] = []
        if self._auto_creation is not None:
            creating = topics_to_create(image, request)
            self._auto_creation.create(creating)
        return metadata_response(
            image, self._broker_id, self._cluster_id, context.header.api_version, request, creating
        )

    def _on_describe_user_scram_credentials(
        self, context: RequestContext, request: messages.DescribeUserScramCredentialsRequest
    ) -> messages.DescribeUserScramCredentialsResponse:
        users = None if request.users is None else [user.name for user in request.users]
        return wire.describe_scram_credentials_response(
            context.header.api_version, describe_scram_credentials(self._image(), users)
        )

    def _on_describe_cluster(
        self, context: RequestContext, request: messages.DescribeClusterRequest
    ) -> messages.DescribeClusterResponse:
        return describe_cluster_response(
            self._image(),
            self._broker_id,
            self._cluster_id,
            context.header.api_version,
            include_cluster_authorized_operations=request.include_cluster_authorized_operations,
        )

    def _on_describe_configs(
        self, context: RequestContext, request: messages.DescribeConfigsRequest
    ) -> messages.DescribeConfigsResponse:
        response: messages.DescribeConfigsResponse = describe_configs_response(
            self._image(), self._settings, context.header.api_version, request
        )
        return response

    async def _forward(self, context: RequestContext, request: _ForwardedRequest) -> Payload:
        try:
            # The controller answers with the response of the request's own API and version.
            response: Payload = await self._controller.send(
                request, deadline_s=self._forward_timeout_s, patient=True
            )
        except NoControllerError:
            return _refusal(context.header.api_version, request, ErrorCode.request_timed_out)
        return response
