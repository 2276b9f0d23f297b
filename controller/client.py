"""The caller's side of the controller APIs: reach the active controller, whichever it is.

Brokers (registration, heartbeats, AlterPartition, producer-id blocks), the admin API's
forwarded mutations and tools all talk to the active controller through a `ControllerClient`,
as Kafka's brokers do through their controller channel: it sends to the last controller that
answered, and on NOT_CONTROLLER or a connection failure tries the next voter, with a short
backoff, until the deadline.
"""

from __future__ import annotations

import asyncio
import datetime
import ssl
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import structlog
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32
from kio.static.protocol import Payload

from controller.elections import ElectionType
from controller.records import ConfigResourceType
from controller.topics import ConfigOperation
from net import messages
from net.client import KafkaConnectionError, NodeConnection, RequestTimedOutError
from net.manual_recovery import ElectRecoveredLeaderRequest
from net.messages import ByVersion
from net.protocol import make_entity
from net.sasl import SaslClientCredentials

log = structlog.get_logger(__name__)

# How long to wait before going round the voters again when none is the active controller
# (an election takes about an election timeout).
RETRY_BACKOFF_S = 0.05

# How long the controller may take over an admin request (Kafka's `timeout_ms` field).
_ADMIN_REQUEST_TIMEOUT = datetime.timedelta(seconds=30)

# The fields that hold per-item results in the controller APIs' responses.
_RESULT_LISTS = ("topics", "responses", "results", "replica_election_results")


class NoControllerError(Exception):
    """No voter answered as the active controller before the deadline."""


def is_not_controller(response: Payload | None) -> bool:
    """Whether `response` is a NOT_CONTROLLER refusal: top-level, or on every item of the
    responses whose errors are per topic (CreateTopics, DeleteTopics, CreatePartitions)."""
    if getattr(response, "error_code", None) == ErrorCode.not_controller:
        return True
    for name in _RESULT_LISTS:
        items = getattr(response, name, None)
        if items and all(
            getattr(item, "error_code", None) == ErrorCode.not_controller for item in items
        ):
            return True
    return False


class ControllerClient:
    """Sends controller API requests to the active controller among `voters`."""

    def __init__(
        self,
        voters: Mapping[int, tuple[str, int]],
        *,
        client_id: str,
        request_timeout: float = 5.0,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslClientCredentials | None = None,
    ) -> None:
        """`ssl_context` and `sasl`: the security of the controller listener."""
        self._connections = {
            voter: NodeConnection(
                host,
                port,
                client_id=client_id,
                request_timeout=request_timeout,
                ssl_context=ssl_context,
                sasl=sasl,
            )
            for voter, (host, port) in sorted(voters.items())
        }
        self._active: int | None = None

    @property
    def active_controller(self) -> int | None:
        """The voter that last answered as the active controller, if any."""
        return self._active

    # Returns Any: the response's class follows the API and version of whatever request it is
    # given (forwarded ones included); each caller annotates the response it asked for.
    async def send(
        self, request: Payload, *, deadline_s: float = 30.0, patient: bool = False
    ) -> Any:
        """The active controller's response to `request`: the kio response of its API and
        version, which the caller knows from the request it built.

        A voter that does not answer within the request timeout is given up for the next one,
        which suits heartbeats and reads. A `patient` send waits for a voter's answer until the
        deadline instead: a forwarded mutation (CreateTopics, ...) sent twice would get
        TOPIC_ALREADY_EXISTS for the topic its first copy created, when the controller is only
        slow. Either way, a voter not reached within the request timeout, a connection lost or
        NOT_CONTROLLER moves on to the next voter.

        Raises NoControllerError if no voter answers as the active controller within
        `deadline_s` seconds.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + deadline_s
        while True:
            for voter in self._candidates():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                connection = self._connections[voter]
                bounded = min(remaining, connection.request_timeout)
                try:
                    # Patience is for the answer: a voter that cannot be reached is left as soon.
                    await connection.connect(bounded)
                    response = await connection.send(
                        request, timeout=remaining if patient else bounded
                    )
                except (KafkaConnectionError, RequestTimedOutError) as error:
                    log.debug("controller_unreachable", voter=voter, error=str(error))
                    if self._active == voter:
                        self._active = None
                    continue
                if is_not_controller(response):
                    if self._active == voter:
                        self._active = None
                    continue
                self._active = voter
                return response
            if loop.time() + RETRY_BACKOFF_S >= deadline:
                raise NoControllerError(
                    f"no active controller among voters {sorted(self._connections)} "
                    f"within {deadline_s} s"
                )
            await asyncio.sleep(RETRY_BACKOFF_S)

    async def close(self) -> None:
        for connection in self._connections.values():
            await connection.close()

    def _candidates(self) -> list[int]:
        voters = list(self._connections)
        if self._active is None:
            return voters
        return [self._active] + [v for v in voters if v != self._active]


# --- requests, at the highest version the controller serves ---------------------------------------

_Request = TypeVar("_Request", bound=Payload)


def _request(requests: ByVersion[_Request], **values: object) -> _Request:
    return make_entity(requests[max(requests)], **values)


def _entity(requests: ByVersion[Payload], *path: str, **values: object) -> object:
    """A nested entity of the request (at its newest version) reached through `path`."""
    return make_entity(messages.nested_type(requests, max(requests), *path), **values)


def broker_registration_request(
    broker_id: int,
    cluster_id: str,
    incarnation_id: uuid.UUID,
    listeners: Sequence[tuple[str, str, int]],
    *,
    rack: str | None = None,
    previous_broker_epoch: int = -1,
    security_protocols: Mapping[str, int] | None = None,
) -> messages.BrokerRegistrationRequest:
    """BrokerRegistration with (name, host, port) listeners, each with Kafka's id of its
    security protocol from `security_protocols` by name (0, PLAINTEXT, for a name it lacks)."""
    protocols = security_protocols or {}
    key = messages.BROKER_REGISTRATION_REQUESTS
    return _request(
        key,
        broker_id=broker_id,
        cluster_id=cluster_id,
        incarnation_id=incarnation_id,
        listeners=tuple(
            _entity(
                key,
                "listeners",
                name=name,
                host=host,
                port=port,
                security_protocol=protocols.get(name, 0),
            )
            for name, host, port in listeners
        ),
        features=(),
        rack=rack,
        previous_broker_epoch=previous_broker_epoch,
    )


def broker_heartbeat_request(
    broker_id: int,
    broker_epoch: int,
    current_metadata_offset: int,
    *,
    want_fence: bool = False,
    want_shut_down: bool = False,
) -> messages.BrokerHeartbeatRequest:
    return _request(
        messages.BROKER_HEARTBEAT_REQUESTS,
        broker_id=broker_id,
        broker_epoch=broker_epoch,
        current_metadata_offset=current_metadata_offset,
        want_fence=want_fence,
        want_shut_down=want_shut_down,
    )


def create_topics_request(
    topics: Sequence[tuple[str, int, int]],
    *,
    configs: Mapping[str, str] | None = None,
    validate_only: bool = False,
) -> messages.CreateTopicsRequest:
    """CreateTopics of (name, partitions, replication factor), each with `configs`."""
    key = messages.CREATE_TOPICS_REQUESTS
    return _request(
        key,
        topics=tuple(
            _entity(
                key,
                "topics",
                name=name,
                num_partitions=partitions,
                replication_factor=replication_factor,
                assignments=(),
                configs=tuple(
                    _entity(key, "topics", "configs", name=config, value=value)
                    for config, value in (configs or {}).items()
                ),
            )
            for name, partitions, replication_factor in topics
        ),
        validate_only=validate_only,
    )


def delete_topics_request(names: Sequence[str]) -> messages.DeleteTopicsRequest:
    """DeleteTopics of the topics named."""
    key = messages.DELETE_TOPICS_REQUESTS
    return _request(
        key,
        topics=tuple(
            _entity(key, "topics", name=name, topic_id=uuid.UUID(int=0)) for name in names
        ),
        timeout=_ADMIN_REQUEST_TIMEOUT,
    )


def create_partitions_request(
    increases: Sequence[tuple[str, int]],
) -> messages.CreatePartitionsRequest:
    """CreatePartitions raising each named topic to a total `count` of partitions, placed by the
    controller."""
    key = messages.CREATE_PARTITIONS_REQUESTS
    return _request(
        key,
        topics=tuple(
            _entity(key, "topics", name=name, count=count, assignments=None)
            for name, count in increases
        ),
        timeout=_ADMIN_REQUEST_TIMEOUT,
        validate_only=False,
    )


def elect_leaders_request(
    unclean: bool, partitions: Sequence[tuple[str, int]]
) -> messages.ElectLeadersRequest:
    """ElectLeaders, preferred (or `unclean`), of the (topic, partition) pairs given."""
    key = messages.ELECT_LEADERS_REQUESTS
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return _request(
        key,
        election_type=ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED,
        topic_partitions=tuple(
            _entity(key, "topic_partitions", topic=topic, partitions=tuple(ids))
            for topic, ids in by_topic.items()
        ),
        timeout=_ADMIN_REQUEST_TIMEOUT,
    )


def elect_recovered_leader_request(
    topic_id: uuid.UUID, partition: int, leader: int
) -> ElectRecoveredLeaderRequest:
    """ElectRecoveredLeader (`net.manual_recovery`): elect `leader`, the operator's choice, as
    the unclean leader of a leaderless partition."""
    return ElectRecoveredLeaderRequest(
        topic_id=topic_id, partition=i32(partition), leader=i32(leader)
    )


def incremental_alter_configs_request(
    topic: str,
    set_values: Mapping[str, str],
    delete: Sequence[str],
    *,
    resource_type: ConfigResourceType = ConfigResourceType.TOPIC,
) -> messages.IncrementalAlterConfigsRequest:
    """IncrementalAlterConfigs of one topic: SET each of `set_values`, DELETE each of `delete`
    (back to the broker default). With `resource_type` BROKER, `topic` names the broker
    instead ("" for the cluster-wide default)."""
    key = messages.INCREMENTAL_ALTER_CONFIGS_REQUESTS
    configs: list[tuple[str, ConfigOperation, str | None]] = [
        (name, ConfigOperation.SET, value) for name, value in set_values.items()
    ]
    configs += [(name, ConfigOperation.DELETE, None) for name in delete]
    return _request(
        key,
        resources=(
            _entity(
                key,
                "resources",
                resource_type=resource_type,
                resource_name=topic,
                configs=tuple(
                    _entity(
                        key,
                        "resources",
                        "configs",
                        name=name,
                        config_operation=operation,
                        value=value,
                    )
                    for name, operation, value in configs
                ),
            ),
        ),
        validate_only=False,
    )


def alter_partition_reassignments_request(
    targets: Mapping[tuple[str, int], Sequence[int] | None],
) -> messages.AlterPartitionReassignmentsRequest:
    """AlterPartitionReassignments: move each (topic, partition) to its target replicas, or
    cancel its move in progress (None)."""
    key = messages.ALTER_PARTITION_REASSIGNMENTS_REQUESTS
    by_topic: dict[str, list[object]] = {}
    for (topic, partition), replicas in targets.items():
        by_topic.setdefault(topic, []).append(
            _entity(
                key,
                "topics",
                "partitions",
                partition_index=i32(partition),
                replicas=None if replicas is None else tuple(i32(r) for r in replicas),
            )
        )
    return _request(
        key,
        timeout=_ADMIN_REQUEST_TIMEOUT,
        allow_replication_factor_change=True,
        topics=tuple(
            _entity(key, "topics", name=topic, partitions=tuple(partitions))
            for topic, partitions in by_topic.items()
        ),
    )


def list_partition_reassignments_request(
    partitions: Sequence[tuple[str, int]] | None = None,
) -> messages.ListPartitionReassignmentsRequest:
    """ListPartitionReassignments of the (topic, partition) pairs given, or of all (None)."""
    key = messages.LIST_PARTITION_REASSIGNMENTS_REQUESTS
    topics: tuple[object, ...] | None = None
    if partitions is not None:
        by_topic: dict[str, list[i32]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(i32(partition))
        topics = tuple(
            _entity(key, "topics", name=topic, partition_indexes=tuple(ids))
            for topic, ids in by_topic.items()
        )
    return _request(key, timeout=_ADMIN_REQUEST_TIMEOUT, topics=topics)


def unregister_broker_request(broker_id: int) -> messages.UnregisterBrokerRequest:
    """UnregisterBroker: remove `broker_id` from the cluster."""
    return _request(messages.UNREGISTER_BROKER_REQUESTS, broker_id=i32(broker_id))


def alter_scram_credentials_request(
    upsertions: Sequence[tuple[str, int, int, bytes, bytes]] = (),
    deletions: Sequence[tuple[str, int]] = (),
) -> messages.AlterUserScramCredentialsRequest:
    """AlterUserScramCredentials: upsertions as (name, mechanism id, iterations, salt, salted
    password), deletions as (name, mechanism id). Never a password: the caller salts it."""
    key = messages.ALTER_USER_SCRAM_CREDENTIALS_REQUESTS
    return _request(
        key,
        deletions=tuple(
            _entity(key, "deletions", name=name, mechanism=mechanism)
            for name, mechanism in deletions
        ),
        upsertions=tuple(
            _entity(
                key,
                "upsertions",
                name=name,
                mechanism=mechanism,
                iterations=iterations,
                salt=salt,
                salted_password=salted_password,
            )
            for name, mechanism, iterations, salt, salted_password in upsertions
        ),
    )
