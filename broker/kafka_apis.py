"""The client listener's APIs on a broker.

Served from the broker's metadata image and settings: Metadata, DescribeCluster and
DescribeConfigs. Forwarded to the active controller, as KRaft brokers do (KIP-590), so that a
Kafka admin client may talk to any broker and the answer is the controller's: CreateTopics,
DeleteTopics, CreatePartitions and ElectLeaders. When no controller answers in time, those
requests get REQUEST_TIMED_OUT.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from broker.configs import DESCRIBE_CONFIGS_VERSIONS, BrokerSettings, describe_configs_response
from broker.metadata_api import (
    DESCRIBE_CLUSTER_VERSIONS,
    METADATA_VERSIONS,
    describe_cluster_response,
    metadata_response,
)
from controller import wire
from controller.client import ControllerClient, NoControllerError
from controller.image import MetadataImage
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext

# Forwarded API key -> the response refusing every item of a request with an error.
_FORWARDED: dict[int, Callable[[int, Any, ErrorCode], Any]] = {
    ApiKey.CREATE_TOPICS: wire.create_topics_error,
    ApiKey.DELETE_TOPICS: wire.delete_topics_error,
    ApiKey.CREATE_PARTITIONS: wire.create_partitions_error,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: wire.incremental_alter_configs_error,
    ApiKey.ELECT_LEADERS: lambda version, request, error: wire.elect_leaders_response(
        version, (), error
    ),
}


class BrokerApis:
    """The handlers of the client listener; `image` gives the current metadata image."""

    def __init__(
        self,
        broker_id: int,
        cluster_id: str,
        image: Callable[[], MetadataImage],
        controller: ControllerClient,
        settings: BrokerSettings,
        *,
        forward_timeout_s: float = 30.0,
    ) -> None:
        self._broker_id = broker_id
        self._cluster_id = cluster_id
        self._image = image
        self._controller = controller
        self._forward_timeout_s = forward_timeout_s
        self._settings = settings

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
        for served in wire.SERVED:
            if served.api_key in _FORWARDED:
                registry.register(
                    served.api_key,
                    self._forward,
                    min_version=served.min_version,
                    max_version=served.max_version,
                )

    def _on_metadata(self, context: RequestContext, request: Any) -> Any:
        return metadata_response(
            self._image(), self._broker_id, context.header.api_version, request
        )

    def _on_describe_cluster(self, context: RequestContext, request: Any) -> Any:
        return describe_cluster_response(
            self._image(), self._broker_id, self._cluster_id, context.header.api_version
        )

    def _on_describe_configs(self, context: RequestContext, request: Any) -> Any:
        return describe_configs_response(
            self._image(), self._settings, context.header.api_version, request
        )

    async def _forward(self, context: RequestContext, request: Any) -> Any:
        try:
            return await self._controller.send(
                request, deadline_s=self._forward_timeout_s, patient=True
            )
        except NoControllerError:
            header = context.header
            return _FORWARDED[header.api_key](
                header.api_version, request, ErrorCode.request_timed_out
            )
