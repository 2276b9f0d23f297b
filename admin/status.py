"""What the admin API reads from the node (`NodeStatus`): the node hands one to `create_app`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from kio.static.protocol import Payload

from admin.models import Quorum, ReplicaLog
from controller.events import MetadataEvent
from controller.image import MetadataImage
from controller.partition_change import PartitionDefaults, TopicPartition
from controller.records import ReplicaLogState


class NodeStatus(Protocol):
    """What the admin API reads from the node, and its way to the active controller."""

    @property
    def cluster_id(self) -> str:
        """The cluster this node belongs to."""

    def readiness(self) -> str | None:
        """None when ready to serve; otherwise why not, in a sentence."""

    def controller_id(self) -> int | None:
        """The quorum leader (the active controller) this node knows of."""

    async def quorum(self) -> Quorum | None:
        """The quorum with the leader's view of replica progress, or None if this node does
        not take part in one."""

    def metadata_image(self) -> MetadataImage:
        """The node's metadata image: every committed entry it has replayed."""

    def replica_log(self, topic: str, partition: int) -> ReplicaLog | None:
        """This node's replica of the partition, if it hosts one."""

    def events(self) -> Sequence[MetadataEvent]:
        """The events derived from the metadata log (the newest kept), newest last."""

    async def send_to_controller(self, request: Payload) -> Any:
        """The active controller's response; NoControllerError if none answers in time."""

    @property
    def partition_defaults(self) -> PartitionDefaults:
        """The cluster's partition configuration, before topic overrides."""

    async def inspect_replica_logs(
        self, image: MetadataImage, asked: Mapping[int, Sequence[TopicPartition]]
    ) -> dict[TopicPartition, list[ReplicaLogState]]:
        """The brokers' GetReplicaLogInfo answers about the partitions `asked` (by broker)."""
