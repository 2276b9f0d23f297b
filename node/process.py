"""The life of one `kraft serve` process: start, run until a signal, stop cleanly.

Start: format (or check) the log directories, open the logs, start the quorum member on the
metadata log (a voter with the controller role, an observer otherwise) with the metadata image
replayed from it, and with the controller role the controller that is active while this node
leads the quorum; then the admin listener. Stop (SIGTERM or SIGINT): resign quorum leadership,
close the listeners, flush every log and write the clean-shutdown marker.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import structlog
from aiohttp import web
from kio.static.protocol import Payload

from admin.app import create_app
from admin.handlers.common import ADMIN_LISTENER
from admin.metrics import FetchSessionState, NodeMetrics, QuorumState, ReplicaState
from admin.models import Quorum, ReplicaLog, ReplicaProgress
from broker.auto_topic_creation import AutoTopicCreation
from broker.configs import BrokerSettings
from broker.data_apis import DataApis
from broker.fetch_sessions import FetchSessionCache
from broker.groups.apis import GroupApis
from broker.groups.coordinator import (
    CoordinatorConfig,
    GroupCoordinator,
    offsets_topic_configs,
)
from broker.groups.membership import GroupConfig
from broker.groups.shard import ShardConfig
from broker.isr_changes import IsrChangeSender
from broker.kafka_apis import BrokerApis
from broker.lifecycle import BrokerIdentity, BrokerLifecycleManager
from broker.log_maintenance import LogMaintenance, MaintenanceConfig
from broker.producer_ids import InitProducerIdApi, ProducerIdBlocks
from broker.replica_admin_apis import ReplicaAdminApis
from broker.replica_log_info import ReplicaLogInfoApi
from broker.replica_manager import ReplicaManager
from broker.replication_quota import ThrottleSettings
from broker.scram_credentials import credential_lookup, credential_of
from controller.acls import Authorizer
from controller.broker_lifecycle import LifecycleConfig
from controller.client import ControllerClient, NoControllerError, create_topics_request
from controller.events import EventLog, EventType, MetadataEvent
from controller.image import MetadataImage, MetadataReplayer
from controller.partition_change import PartitionDefaults
from controller.partition_change import TopicPartition as ControllerTopicPartition
from controller.quorum_controller import ControllerConfig, QuorumController
from controller.records import ReplicaLogState
from controller.replica_log_inspector import ReplicaLogInspector
from controller.topic_config import TopicConfig
from controller.topics import OFFSETS_TOPIC, TopicDefaults
from kraft.driver import RaftDriver
from kraft.messages import QuorumView, ReplicaView
from kraft.raft import RaftConfig
from net.api_registry import ApiRegistry
from net.sasl import (
    DEFAULT_SCRAM_ITERATIONS,
    SCRAM_MECHANISMS,
    CredentialLookup,
    ScramCredential,
    known_users_first,
    register_sasl_apis,
    scram_credential,
)
from net.server import KafkaServer, RequestMetrics
from net.tasks import set_fatal_handler, start_essential
from node.bootstrap_records import read_bootstrap_records
from node.config import NodeConfig, Role
from node.frozen_heap import ReplicaHeap
from node.log_opening import open_logs_in_background
from node.loop_stalls import watch_loop_stalls
from storage.log import Log, LogConfig
from storage.log_manager import LogManager, TopicPartition

METADATA_PARTITION = TopicPartition("__cluster_metadata", 0)
# The exit status after a fatal fault (what `kraft serve` returns for a failed start, too).
FATAL_FAULT_EXIT_STATUS = 1
# How long requests in flight may take to finish once the listener stops accepting.
_IN_FLIGHT_GRACE_S = 5.0
# How long an admin API mutation looks for the active controller before answering 503.
_ADMIN_CONTROLLER_DEADLINE_S = 10.0

log = structlog.get_logger(__name__)


def metadata_log_config(config: NodeConfig) -> LogConfig:
    """The metadata log is never deleted by retention; the quorum fsyncs it itself."""
    return LogConfig(
        segment_bytes=min(config.log_segment_bytes, 64 * 1024 * 1024),
        retention_ms=None,
        retention_bytes=None,
    )


def raft_config(config: NodeConfig) -> RaftConfig:
    return RaftConfig(
        election_timeout_ms=config.controller_quorum_election_timeout_ms,
        fetch_timeout_ms=config.controller_quorum_fetch_timeout_ms,
        election_backoff_max_ms=config.controller_quorum_election_backoff_max_ms,
        request_timeout_ms=config.controller_quorum_request_timeout_ms,
    )


def topic_defaults(config: NodeConfig) -> TopicDefaults:
    """What topics take from the node's settings: the broker-level values of topic configs
    (`log.segment.bytes` for `segment.bytes`, ...) are every topic's defaults."""

    def no_limit_as(value: int | None, spelling: int) -> str:
        # Kafka spells "no limit" -1 (retention) or Long.MAX_VALUE (flush, timestamps).
        return str(spelling if value is None else value)

    long_max = 2**63 - 1
    return TopicDefaults(
        num_partitions=config.num_partitions,
        replication_factor=config.default_replication_factor,
        configs={
            "min.insync.replicas": str(config.min_insync_replicas),
            "unclean.leader.election.enable": str(config.unclean_leader_election_enable).lower(),
            "unclean.recovery.strategy": config.default_unclean_recovery_strategy().value,
            "segment.bytes": str(config.log_segment_bytes),
            "segment.ms": str(config.log_roll_ms),
            "retention.ms": no_limit_as(config.log_retention_ms, -1),
            "retention.bytes": no_limit_as(config.log_retention_bytes, -1),
            "max.message.bytes": str(config.message_max_bytes),
            "flush.messages": no_limit_as(config.log_flush_interval_messages, long_max),
            "flush.ms": no_limit_as(config.log_flush_interval_ms, long_max),
            "message.timestamp.type": config.log_message_timestamp_type,
            "message.timestamp.before.max.ms": no_limit_as(
                config.log_message_timestamp_before_max_ms, long_max
            ),
            "message.timestamp.after.max.ms": no_limit_as(
                config.log_message_timestamp_after_max_ms, long_max
            ),
            "cleanup.policy": ",".join(policy.value for policy in config.log_cleanup_policy),
            "delete.retention.ms": str(config.log_cleaner_delete_retention_ms),
            "min.cleanable.dirty.ratio": str(config.log_cleaner_min_cleanable_ratio),
            "index.interval.bytes": str(config.log_index_interval_bytes),
        },
    )


def maintenance_config(config: NodeConfig) -> MaintenanceConfig:
    """How often the broker flushes, checkpoints, enforces retention and compacts its logs."""
    return MaintenanceConfig(
        flush_interval_ms=config.log_flush_scheduler_interval_ms,
        checkpoint_interval_ms=config.log_flush_offset_checkpoint_interval_ms,
        retention_check_interval_ms=config.log_retention_check_interval_ms,
        cleaner_enabled=config.log_cleaner_enable,
        cleaner_backoff_ms=config.log_cleaner_backoff_ms,
    )


def coordinator_config(config: NodeConfig) -> CoordinatorConfig:
    """The group coordinator's settings from the node's configuration."""
    return CoordinatorConfig(
        offsets_topic_partitions=config.offsets_topic_num_partitions,
        offsets_topic_replication_factor=config.offsets_topic_replication_factor,
        commit_timeout_ms=config.offsets_commit_timeout_ms,
        shard=ShardConfig(
            offsets_retention_ms=config.offsets_retention_minutes * 60_000,
            offset_metadata_max_bytes=config.offset_metadata_max_bytes,
            group=GroupConfig(
                initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                min_session_timeout_ms=config.group_min_session_timeout_ms,
                max_session_timeout_ms=config.group_max_session_timeout_ms,
            ),
        ),
    )


def broker_topic_config(config: NodeConfig) -> TopicConfig:
    """The configuration of a topic without overrides on this node."""
    return TopicConfig.of_broker(topic_defaults(config).configs)


def partition_defaults(config: NodeConfig) -> PartitionDefaults:
    """The cluster-wide partition configuration, before topic overrides."""
    return PartitionDefaults(
        topics=broker_topic_config(config),
        eligible_leader_replicas_enable=config.eligible_leader_replicas_enable,
        unclean_recovery_manager_enabled=config.unclean_recovery_manager_enabled,
    )


def controller_config(
    config: NodeConfig, local_incarnation_id: UUID | None = None
) -> ControllerConfig:
    """The controller's rules from the node's configuration: broker-level values of topic
    configs are the defaults of every topic. `local_incarnation_id`: the incarnation of the
    broker in this same process, if it has one."""
    return ControllerConfig(
        node_id=config.node_id,
        cluster_id=config.cluster_id,
        lifecycle=LifecycleConfig(
            session_timeout_ms=config.broker_session_timeout_ms,
            local_broker=None
            if local_incarnation_id is None
            else (config.node_id, local_incarnation_id),
            partition_defaults=partition_defaults(config),
        ),
        topic_defaults=topic_defaults(config),
        auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_ms=config.leader_imbalance_check_interval_seconds * 1000,
        unclean_recovery_timeout_ms=config.unclean_recovery_timeout_ms,
        broker_listener=config.inter_broker_listener,
        broker_ssl_context=config.inter_broker_ssl_context(),
        max_idle_interval_ms=config.metadata_max_idle_interval_ms,
        authorizer=config.authorizer_settings(),
        broker_listener_sasl=config.inter_broker_sasl(),
        # `bootstrap.scram.credentials`, then what `kraft format --add-scram` left.
        bootstrap_scram_credentials=tuple(
            credential.record() for credential in config.bootstrap_scram_credentials
        )
        + read_bootstrap_records(config.metadata_log_directory),
    )


class NodeStatusView:
    """The admin API's read model of this node, and its way to the active controller."""

    def __init__(
        self,
        config: NodeConfig,
        driver: RaftDriver,
        replayer: MetadataReplayer,
        *,
        events: EventLog,
        controller: ControllerClient,
        broker: BrokerRole | None,
    ) -> None:
        self._cluster_id = config.cluster_id
        self._partition_defaults = partition_defaults(config)
        # An operator looking at a recovery waits no longer than the controller would.
        self._recovery_timeout_s = config.unclean_recovery_timeout_ms / 1000
        self._inter_broker_ssl_context = config.inter_broker_ssl_context()
        self._inter_broker_sasl = config.inter_broker_sasl()
        self._inter_broker_listener = config.inter_broker_listener
        self._driver = driver
        self._replayer = replayer
        self._events = events
        self._controller = controller
        self._broker = broker

    @property
    def cluster_id(self) -> str:
        return self._cluster_id

    def readiness(self) -> str | None:
        """DESIGN's readiness: a broker once registered, unfenced and so caught up with the
        metadata log (the controller unfences it then); a controller-only node once it knows
        the quorum leader."""
        view = self._driver.quorum_view()
        if view.leader_id is None:
            return f"no quorum leader known in epoch {view.leader_epoch}"
        if self._broker is not None:
            lifecycle = self._broker.lifecycle
            if lifecycle.broker_epoch < 0:
                return "the broker has not registered with the controller yet"
            if lifecycle.fenced:
                return (
                    f"the broker (epoch {lifecycle.broker_epoch}) is fenced: catching up with "
                    "the metadata log"
                )
        return None

    def controller_id(self) -> int | None:
        return self._driver.quorum_view().leader_id

    async def quorum(self) -> Quorum:
        return quorum_model(await self._driver.describe_quorum())

    def metadata_image(self) -> MetadataImage:
        return self._replayer.image

    def replica_log(self, topic: str, partition: int) -> ReplicaLog | None:
        if self._broker is None:
            return None
        replica = self._broker.replicas.partitions.get((topic, partition))
        if replica is None:
            return None
        log_end_offsets: dict[int, int] = {}
        if replica.is_leader and replica.state is not None:
            for broker_id in replica.state.replicas:
                if broker_id == replica.broker_id:
                    log_end_offsets[broker_id] = replica.log.log_end_offset
                else:
                    follower = replica.followers.get(broker_id)
                    log_end_offsets[broker_id] = -1 if follower is None else follower.log_end_offset
        return ReplicaLog(
            broker_id=replica.broker_id,
            is_leader=replica.is_leader,
            leader_epoch=replica.leader_epoch,
            high_watermark=replica.log.high_watermark,
            log_start_offset=replica.log.log_start_offset,
            log_end_offset=replica.log.log_end_offset,
            log_end_offsets=log_end_offsets,
            bytes_behind=replica.bytes_behind(),
        )

    def events(self) -> list[MetadataEvent]:
        return self._events.events()

    async def send_to_controller(self, request: Payload) -> Any:
        return await self._controller.send(
            request, deadline_s=_ADMIN_CONTROLLER_DEADLINE_S, patient=True
        )

    @property
    def partition_defaults(self) -> PartitionDefaults:
        return self._partition_defaults

    async def inspect_replica_logs(
        self, image: MetadataImage, asked: Mapping[int, Sequence[ControllerTopicPartition]]
    ) -> dict[ControllerTopicPartition, list[ReplicaLogState]]:
        inspector = ReplicaLogInspector(
            self._inter_broker_listener,
            self._recovery_timeout_s,
            self._inter_broker_ssl_context,
            self._inter_broker_sasl,
        )
        try:
            return await inspector.inspect(image, asked)
        finally:
            await inspector.close()


def controller_client(config: NodeConfig, client_id: str) -> ControllerClient:
    """A client of the active controller among the configured voters."""
    return ControllerClient(
        {
            voter.node_id: (voter.endpoint.host, voter.endpoint.port)
            for voter in config.controller_quorum_voters
        },
        client_id=client_id,
        request_timeout=config.controller_quorum_request_timeout_ms / 1000,
        ssl_context=config.controller_client_ssl_context(),
        sasl=config.controller_sasl(),
    )


class InitialLoad:
    """Kafka's initial metadata load: done once this node's image reached the high watermark
    of a known quorum leader; it stays done."""

    def __init__(self, replayer: MetadataReplayer, quorum: Callable[[], QuorumView]) -> None:
        self._replayer = replayer
        self._quorum = quorum
        self._done = False

    def done(self) -> bool:
        if not self._done:
            view = self._quorum()
            self._done = (
                view.leader_id is not None
                and view.high_watermark > 0
                and self._replayer.image.end_offset >= view.high_watermark
            )
            if self._done:
                log.info(
                    "metadata_initial_load_done",
                    leader_id=view.leader_id,
                    leader_epoch=view.leader_epoch,
                    end_offset=self._replayer.image.end_offset,
                )
        return self._done


def quorum_request_authorizer(
    config: NodeConfig, replayer: MetadataReplayer, quorum: Callable[[], QuorumView]
) -> Authorizer | None:
    """How the quorum's requests are authorized, as Kafka's controllers do: CLUSTER_ACTION
    (DESCRIBE for DescribeQuorum) on the cluster; `super.users` always, the ACLs once this
    node replayed the metadata up to the quorum's high watermark (until then it may not know
    them all); None without an authorizer."""
    settings = config.authorizer_settings()
    if settings is None:
        return None
    return Authorizer(settings, lambda: replayer.image.acls, InitialLoad(replayer, quorum).done)


def controller_credentials(
    config: NodeConfig, image: Callable[[], MetadataImage]
) -> CredentialLookup:
    """What a SASL controller listener verifies: first the users of this node's configuration
    (the nodes' own, `inter.broker.sasl.*`, and `bootstrap.scram.credentials`), so that voters
    and brokers authenticate before any metadata is replayed (a new cluster's log holds no
    credential until a controller is elected), then the users of the metadata log."""
    known: dict[tuple[str, str], ScramCredential] = {}
    if config.inter_broker_sasl_username is not None and config.inter_broker_sasl_password:
        for mechanism in SCRAM_MECHANISMS:
            known[(config.inter_broker_sasl_username, mechanism)] = scram_credential(
                mechanism,
                config.inter_broker_sasl_password.get_secret_value(),
                DEFAULT_SCRAM_ITERATIONS,
            )
    for user in config.bootstrap_scram_credentials:
        known[(user.name, user.mechanism.mechanism_name)] = credential_of(user.record())
    return known_users_first(known, credential_lookup(image))


def quorum_state(driver: RaftDriver) -> QuorumState:
    """This node's view of the quorum, for `/metrics`."""
    view = driver.quorum_view()
    return QuorumState(
        role=driver.role,
        leader_id=-1 if view.leader_id is None else view.leader_id,
        epoch=view.leader_epoch,
        high_watermark=view.high_watermark,
        log_end_offset=driver.log_end_offset,
    )


def quorum_model(view: QuorumView) -> Quorum:
    def progress(replicas: tuple[ReplicaView, ...]) -> list[ReplicaProgress]:
        return [
            ReplicaProgress(
                id=replica.node_id,
                log_end_offset=replica.log_end_offset,
                last_caught_up_ms=replica.last_caught_up_ms,
                last_fetch_ms=replica.last_fetch_ms,
            )
            for replica in replicas
        ]

    return Quorum(
        leader_id=-1 if view.leader_id is None else view.leader_id,
        leader_epoch=view.leader_epoch,
        high_watermark=view.high_watermark,
        voters=progress(view.voters),
        observers=progress(view.observers),
    )


def broker_listeners(config: NodeConfig) -> list[tuple[str, str, int]]:
    """What the broker registers, as Kafka: each Kafka listener under its name with its
    advertised endpoint and, so that other nodes' admin APIs can ask it for its partitions'
    log views, its admin listener (Metadata never shows that one)."""
    listeners = []
    for listener in config.listeners:
        advertised = config.advertised_listener(listener.name)
        listeners.append((listener.name, advertised.host, advertised.port))
    admin = config.admin_listener
    if admin is not None:
        # A wildcard bind address is no address to call: use the inter-broker listener's
        # advertised host.
        inter_broker = config.advertised_listener(config.inter_broker_listener)
        host = inter_broker.host if admin.host in ("", "0.0.0.0", "::") else admin.host
        listeners.append((ADMIN_LISTENER, host, admin.port))
    return listeners


class BrokerRole:
    """The broker half of a node: its registration with the controller and its client
    listener."""

    def __init__(
        self,
        config: NodeConfig,
        replayer: MetadataReplayer,
        logs: LogManager,
        request_metrics: RequestMetrics | None = None,
        incarnation_id: UUID | None = None,
    ) -> None:
        self._replayer = replayer
        self._node_id = config.node_id
        self._topic_defaults = broker_topic_config(config)
        self._controller = controller_client(config, f"broker-{config.node_id}")
        # Forwarded admin requests wait for slow answers: on their own connections, as Kafka's
        # forwarding channel is, so that a timed-out heartbeat, which closes its connection,
        # cannot take a forwarded CreateTopics down with it and have it sent twice.
        self._forwarding = controller_client(config, f"broker-{config.node_id}-forwarding")
        self.lifecycle = BrokerLifecycleManager(
            self._controller,
            BrokerIdentity(
                broker_id=config.node_id,
                cluster_id=config.cluster_id,
                listeners=broker_listeners(config),
                rack=config.broker_rack,
                previous_broker_epoch=-1
                if logs.broker_epoch_at_start is None
                else logs.broker_epoch_at_start,
                incarnation_id=incarnation_id or uuid4(),
                security_protocols={
                    listener.name: config.security_protocol(listener.name).kafka_id
                    for listener in config.listeners
                },
            ),
            lambda: replayer.image.end_offset - 1,
            heartbeat_interval_ms=config.broker_heartbeat_interval_ms,
            session_timeout_ms=config.broker_session_timeout_ms,
            on_registered=self._on_registered,
            peer_in_controlled_shutdown=lambda: any(
                registration.in_controlled_shutdown and not registration.fenced
                for broker_id, registration in replayer.image.brokers.items()
                if broker_id != config.node_id
            ),
        )
        # The broker epochs of this incarnation's registrations.
        self._broker_epochs: set[int] = set()
        self.replicas = ReplicaManager(
            config.node_id,
            logs,
            replayer,
            config.log_config(),
            self._topic_defaults,
            isr_changes=IsrChangeSender(
                self._controller,
                config.node_id,
                lambda: self.lifecycle.broker_epoch,
                # Not `replayer.image.broker_epoch`: that would be the image of this moment.
                lambda broker_id: replayer.image.broker_epoch(broker_id),  # noqa: PLW0108
            ),
            replica_lag_time_max_ms=config.replica_lag_time_max_ms,
            eligible_leader_replicas_enable=config.eligible_leader_replicas_enable,
            fenced_until_registered=True,
            throttle=ThrottleSettings(
                leader_rate=config.leader_replication_throttled_rate,
                follower_rate=config.follower_replication_throttled_rate,
                samples=config.replication_quota_window_num,
                sample_ms=config.replication_quota_window_size_seconds * 1000,
            ),
            rack_aware_replica_selector=config.replica_selector_class is not None,
            fetcher_ssl_context=config.inter_broker_ssl_context(),
            sasl=config.inter_broker_sasl(),
            replication_listener=config.inter_broker_listener,
        )
        self._offsets_topic_segment_bytes = config.offsets_topic_segment_bytes
        self._controlled_shutdown_timeout_ms = config.controlled_shutdown_timeout_ms
        self.replicas.hosting_listeners.append(ReplicaHeap().hosting_changed)
        self.maintenance = LogMaintenance(logs, self.replicas, maintenance_config(config))
        self._serving: asyncio.Task[None] | None = None
        self.groups = GroupCoordinator(
            config.node_id,
            self.replicas,
            lambda: replayer.image,
            self._create_offsets_topic,
            coordinator_config(config),
        )
        registry = ApiRegistry()
        authorizer_settings = config.authorizer_settings()
        self.authorizer = (
            None
            if authorizer_settings is None
            else Authorizer(authorizer_settings, lambda: replayer.image.acls)
        )
        self._auto_creation = (
            AutoTopicCreation(
                self._forwarding, config.num_partitions, config.default_replication_factor
            )
            if config.auto_create_topics_enable
            else None
        )
        BrokerApis(
            config.node_id,
            config.cluster_id,
            lambda: replayer.image,
            self._forwarding,
            BrokerSettings(config.node_id, topic_defaults(config), config.broker_config_entries()),
            auto_creation=self._auto_creation,
            authorizer=self.authorizer,
        ).register(registry)
        self.fetch_sessions = FetchSessionCache(config.max_incremental_fetch_session_cache_slots)
        DataApis(self.replicas, self.authorizer, self.fetch_sessions).register(registry)
        register_sasl_apis(registry)
        ReplicaAdminApis(self.replicas, self.authorizer).register(registry)
        ReplicaLogInfoApi(
            self.replicas, lambda: self.lifecycle.broker_epoch, self.authorizer
        ).register(registry)
        GroupApis(self.groups, lambda: replayer.image, self.authorizer).register(registry)
        InitProducerIdApi(
            ProducerIdBlocks(self._controller, config.node_id, lambda: self.lifecycle.broker_epoch),
            self.authorizer,
        ).register(registry)
        credentials = credential_lookup(lambda: replayer.image)
        # One server per Kafka listener, each with its own security, serving the same APIs.
        self._servers = [
            KafkaServer(
                registry,
                host=listener.endpoint.host,
                port=listener.endpoint.port,
                max_request_size=config.socket_request_max_bytes,
                connections_max_idle_ms=config.connections_max_idle_ms,
                limits=config.connection_limits(),
                metrics=request_metrics,
                listener=config.listener_security(listener.name, credentials),
            )
            for listener in config.listeners
        ]
        self._listeners = [str(listener) for listener in config.listeners]

    def _on_registered(self, broker_epoch: int) -> None:
        self._broker_epochs.add(broker_epoch)
        self.replicas.registered(broker_epoch)

    def unregistered_by(self, event: MetadataEvent) -> bool:
        """Whether `event` unregisters this broker (a registration of this incarnation); if
        so the broker stops registering (`BrokerLifecycleManager.unregistered`)."""
        if (
            event.type is not EventType.BROKER_UNREGISTERED
            or event.broker != self._node_id
            or event.broker_epoch not in self._broker_epochs
        ):
            return False
        self.lifecycle.unregistered()
        return True

    def notice_peer_shutdown(self, event: MetadataEvent) -> None:
        """A peer that entered controlled shutdown waits for this broker's next heartbeat
        (see `BrokerLifecycleManager.heartbeat_soon`)."""
        if event.type is EventType.BROKER_CONTROLLED_SHUTDOWN and event.broker != self._node_id:
            self.lifecycle.heartbeat_soon()

    def fetch_session_state(self) -> FetchSessionState:
        """The fetch session cache as `/metrics` shows it."""
        cache = self.fetch_sessions
        return FetchSessionState(
            sessions=len(cache.sessions),
            partitions=cache.partition_count,
            evictions=cache.evictions,
            incremental_fetches=cache.incremental_fetches,
        )

    def replica_states(self) -> list[ReplicaState]:
        """The hosted replicas as `/metrics` shows them."""
        image = self._replayer.image
        states = []
        # Per topic, not per replica: a topic's configuration is its overrides on the defaults.
        min_isr: dict[str, int] = {}
        for (topic, partition_id), replica in self.replicas.partitions.items():
            state = replica.state
            if topic not in min_isr:
                min_isr[topic] = image.topic_config(topic, self._topic_defaults).min_insync_replicas
            states.append(
                ReplicaState(
                    topic=topic,
                    partition=partition_id,
                    is_leader=replica.is_leader,
                    high_watermark=replica.log.high_watermark,
                    log_end_offset=replica.log.log_end_offset,
                    log_start_offset=replica.log.log_start_offset,
                    replicas=0 if state is None else len(state.replicas),
                    isr=replica.isr_size() if replica.is_leader else 0,
                    min_insync_replicas=min_isr[topic],
                    consumer_fetches_as_follower=replica.consumer_fetches_as_follower,
                    consumer_fetches_redirected=replica.consumer_fetches_redirected,
                )
            )
        return states

    async def _create_offsets_topic(self, partitions: int, replication_factor: int) -> None:
        request = create_topics_request(
            [(OFFSETS_TOPIC, partitions, replication_factor)],
            configs=offsets_topic_configs(self._offsets_topic_segment_bytes),
        )
        try:
            await self._forwarding.send(request, deadline_s=30.0, patient=True)
        except NoControllerError:
            log.warning("offsets_topic_creation_failed", reason="no active controller")
        else:
            log.info("offsets_topic_requested", partitions=partitions)

    async def start(self) -> None:
        """Bind the client listener, register, and serve clients once the replicas follow the
        metadata log (the start-up fence): before that, every answer would come from metadata
        this broker replayed from its own log, which may be stale (a restarted broker would
        name itself the leader of partitions it no longer leads), as Kafka's brokers process
        no request before their initial metadata catch-up."""
        for server in self._servers:
            await server.start(serving=False)
        self.lifecycle.start()
        self.replicas.start()
        self.maintenance.start()
        self._serving = start_essential(self._serve_once_published(), "broker-listener")

    async def _serve_once_published(self) -> None:
        await self.replicas.published.wait()
        for server in self._servers:
            await server.start_serving()
        log.info("broker_listening", listeners=self._listeners)

    async def stop(self, give_up: asyncio.Event) -> int | None:
        """A controlled shutdown; the broker epoch to write in the clean-shutdown marker (None
        if the broker never registered).

        The controller first moves this broker's leaderships away (bounded by
        `controlled.shutdown.timeout.ms`, or until `give_up` is set: a second signal), while
        the broker keeps serving; then the listener stops accepting and requests in flight
        finish, and the replicas stop. The node then flushes every log and writes the marker.
        """
        epoch = self.lifecycle.broker_epoch
        log.info(
            "controlled_shutdown_started",
            broker_epoch=epoch,
            timeout_ms=self._controlled_shutdown_timeout_ms,
        )
        incomplete = await self.lifecycle.shut_down(
            self._controlled_shutdown_timeout_ms / 1000, give_up
        )
        if incomplete is None:
            log.info("controlled_shutdown_leaderships_moved", broker_epoch=epoch)
        else:
            log.warning("controlled_shutdown_incomplete", broker_epoch=epoch, reason=incomplete)
        await self.lifecycle.stop()
        if self._serving is not None:
            self._serving.cancel()
        grace = 0.0 if give_up.is_set() else _IN_FLIGHT_GRACE_S
        await asyncio.gather(*(server.close(timeout=grace) for server in self._servers))
        await self.groups.stop()
        await self.maintenance.stop()
        await self.replicas.stop()
        if self._auto_creation is not None:
            await self._auto_creation.close()
        await self._controller.close()
        await self._forwarding.close()
        log.info("broker_stopped", broker_epoch=epoch)
        return None if epoch < 0 else epoch


def terminate_process(what: str, error: BaseException) -> None:
    """The fatal-fault handler of a running node: log, then exit at once with status 1.

    A background task that failed (a replica fetcher, the quorum driver) leaves state the node
    cannot trust, so it does not try a controlled shutdown: like a crash, the restart recovers
    from what is durable (Kafka's ProcessTerminatingFaultHandler halts the same way).
    """
    log.critical("node_fatal_fault", task=what, error=repr(error), exc_info=error)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(FATAL_FAULT_EXIT_STATUS)


def freeze_start_up_heap(*, collect_after: bool = True) -> None:
    """Move what start-up made (modules, classes, configuration, the logs, the servers) out of
    the garbage collector's sight: it lives as long as the process, and every full collection
    walked it again, a pause of the event loop of tens of milliseconds on a loaded machine
    (the tail of the produce latency). The young generations are collected first, so little
    garbage is kept forever; not the old one, whose full walk would delay start-up itself.
    Then the collector runs again if `collect_after` (`serve` keeps it off until here)."""
    gc.collect(1)
    gc.freeze()
    if collect_after:
        gc.enable()
    log.info("gc_frozen", objects=gc.get_freeze_count(), collecting=gc.isenabled())


def open_metadata_log(logs: LogManager, log_config: LogConfig, directory: Path) -> Log:
    """The metadata quorum's log (created in `directory` if new), with `log_config`, and
    durable whole: the quorum takes its log as durable from the start (it votes and
    acknowledges on it), so what a recovery after an unclean stop kept of it is fsynced here.
    Partition logs are not, as in Kafka: a broker back from an unclean stop is fenced out of
    leadership until it catches up."""
    metadata_log = logs.get_or_create_log(METADATA_PARTITION, log_config, directory=directory)
    metadata_log.config = log_config
    if not logs.clean_shutdown:
        metadata_log.flush()
    return metadata_log


async def serve(
    config: NodeConfig,
    *,
    collect_after_start: bool = True,
    opened_logs: Future[LogManager] | None = None,
) -> None:
    """Run the node until SIGTERM or SIGINT (or until a fatal fault ends the process).

    `opened_logs`: the node's logs, being opened since before this module was imported
    (`node.log_opening`); opened here when not given.

    The garbage collector is off from here until the start-up heap is frozen, then on again
    if `collect_after_start`: opening thousands of logs and wiring the node make objects that
    live as long as the process, and the collections they set off freed nothing while walking
    them and every module (~0.4 s of the start of a node hosting 3,000 replicas).
    """
    gc.disable()
    set_fatal_handler(terminate_process)
    logs = await asyncio.wrap_future(opened_logs or open_logs_in_background(config))
    metadata_log = open_metadata_log(
        logs, metadata_log_config(config), config.metadata_log_directory
    )
    is_voter = Role.CONTROLLER in config.process_roles
    listener = config.controller_listener if is_voter else None
    # What the node's earlier runs applied is replayed without an event per record.
    replayer = MetadataReplayer(logged_below=metadata_log.log_end_offset)
    controller_apis = ApiRegistry()
    # ApiVersions lists them, and a SASL controller listener answers them.
    register_sasl_apis(controller_apis)
    # The driver, made below, is asked only once it serves requests.
    quorum_authorizer = quorum_request_authorizer(
        config,
        replayer,
        lambda: driver.quorum_view(),  # noqa: PLW0108
    )
    driver = RaftDriver(
        node_id=config.node_id,
        cluster_id=config.cluster_id,
        voters={
            voter.node_id: (voter.endpoint.host, voter.endpoint.port)
            for voter in config.controller_quorum_voters
        },
        config=raft_config(config),
        metadata_log=metadata_log,
        listen=(listener.host, listener.port) if listener is not None else None,
        snapshot_source=replayer,
        api_registry=controller_apis,
        max_bytes_between_snapshots=config.metadata_log_max_record_bytes_between_snapshots,
        max_request_size=config.socket_request_max_bytes,
        connections_max_idle_ms=config.connections_max_idle_ms,
        listener=config.controller_listener_security(
            controller_credentials(config, lambda: replayer.image)
        ),
        client_ssl_context=config.controller_client_ssl_context(),
        client_sasl=config.controller_sasl(),
        authorize=None if quorum_authorizer is None else quorum_authorizer.allows_quorum_request,
    )
    driver.add_listener(replayer)
    is_broker = Role.BROKER in config.process_roles
    # This process's broker incarnation, known to its own controller too (see LifecycleConfig).
    incarnation_id = uuid4()
    # After the replayer: the event log compares each batch with the image before it.
    events = EventLog(lambda: replayer.image, records_of=replayer.records_of)
    driver.add_listener(events)
    controller: QuorumController | None = None
    if is_voter:
        controller = QuorumController(
            driver, replayer, controller_config(config, incarnation_id if is_broker else None)
        )
        controller.register_apis(controller_apis)
        driver.add_listener(controller)
    broker: BrokerRole | None = None
    node_metrics = NodeMetrics(
        lambda: replayer.image,
        lambda: [] if broker is None else broker.replica_states(),
        lambda: quorum_state(driver),
        lambda: (
            (0 if controller is None else controller.authorization_denials)
            + (0 if quorum_authorizer is None else quorum_authorizer.denials)
            + (0 if broker is None or broker.authorizer is None else broker.authorizer.denials)
        ),
        lambda: None if broker is None else broker.fetch_session_state(),
    )
    events.listeners.append(node_metrics.count_event)
    loop_stalls = start_essential(watch_loop_stalls(node_metrics.observe_loop_lag), "loop-stalls")
    if is_broker:
        broker = BrokerRole(config, replayer, logs, node_metrics.requests, incarnation_id)
        driver.add_listener(broker.replicas)
    await driver.start()
    if broker is not None:
        await broker.start()
    runner: web.AppRunner | None = None
    admin_controller = controller_client(config, f"admin-{config.node_id}")
    if config.admin_listener is not None:
        status = NodeStatusView(
            config, driver, replayer, events=events, controller=admin_controller, broker=broker
        )
        app = create_app(
            status,
            token=config.admin_token,
            metrics=node_metrics,
            peer_ssl=config.admin_peer_ssl_context(),
            tls=config.admin_ssl_context() is not None,
            authorizer=config.authorizer_settings(),
        )
        # An idle keep-alive connection is closed after connections.max.idle.ms, as on the
        # Kafka and controller listeners.
        runner = web.AppRunner(
            app, access_log=None, keepalive_timeout=config.connections_max_idle_ms / 1000
        )
        await runner.setup()
        site = web.TCPSite(
            runner,
            config.admin_listener.host,
            config.admin_listener.port,
            ssl_context=config.admin_ssl_context(),
        )
        await site.start()
    stop = asyncio.Event()
    give_up = asyncio.Event()

    def on_signal(signum: signal.Signals) -> None:
        # The first signal starts a controlled shutdown; a second skips to flush-and-exit.
        if stop.is_set():
            log.warning("shutdown_hurried", signal=signum.name)
            give_up.set()
        stop.set()

    if broker is not None:
        unregistering = broker

        def stop_when_unregistered(event: MetadataEvent) -> None:
            # An operator removed this broker from the cluster (it hosts no replica, or the
            # controller would have refused): the node stops rather than register again, its
            # controller voter too on a combined node (started again, it registers anew).
            if unregistering.unregistered_by(event):
                log.warning(
                    "broker_unregistered", node_id=config.node_id, broker_epoch=event.broker_epoch
                )
                stop.set()

        events.listeners.append(stop_when_unregistered)
        events.listeners.append(broker.notice_peer_shutdown)

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    log.info(
        "node_started",
        node_id=config.node_id,
        cluster_id=config.cluster_id,
        roles=[role.value for role in config.process_roles],
        controller_listener=str(listener) if listener else None,
        admin_listener=str(config.admin_listener) if config.admin_listener else None,
    )
    freeze_start_up_heap(collect_after=collect_after_start)
    await stop.wait()
    log.info("node_stopping", node_id=config.node_id)
    broker_epoch = None
    if broker is not None:
        broker_epoch = await broker.stop(give_up)
    if controller is not None:
        await controller.stop()
    await driver.stop()
    if runner is not None:
        await runner.cleanup()
    await admin_controller.close()
    loop_stalls.cancel()
    logs.shutdown(broker_epoch=broker_epoch)
    log.info("node_stopped", node_id=config.node_id)
