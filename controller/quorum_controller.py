"""The active controller: the quorum leader turns requests into metadata records.

Every voter runs a `QuorumController`. While its node leads the quorum it is *active*: it
serves the controller APIs (`controller.wire.SERVED`) on the controller listener; otherwise it
answers NOT_CONTROLLER and the callers find the leader. As in Kafka's QuorumController:

- On becoming leader it waits until every entry of earlier epochs is committed and replayed
  (the committed image then holds all the metadata there is), and starts from that image with
  fresh broker sessions (`BrokerLifecycle.activate`). Nothing else carries over.
- Each request runs to completion on the event loop without awaiting: the pure rules compute
  the records from the *working image* (committed plus everything this controller appended),
  the records are appended, and the working image replays them at once, so the next request
  sees them. The response goes out only once the records commit (or, for a request that
  appends nothing, once everything appended before it committed), so no caller ever sees
  metadata a failover could undo. Leadership lost before the commit answers NOT_CONTROLLER:
  the records may or may not survive, and the caller retries against the new controller, which
  sees either all of a user request's records or none: they are one metadata transaction
  (`controller.metadata_transactions`), and a newly active controller aborts one its
  predecessor left unfinished before it serves anything.
- A user request (CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders,
  IncrementalAlterConfigs, AlterPartitionReassignments) may write at most
  `limits.MAX_RECORDS_PER_USER_OP` records; a larger one is refused whole with
  POLICY_VIOLATION and writes nothing, as in Kafka, so one request cannot hold the event loop
  of every node for long.
- Timers, on the active controller only: broker sessions expire (fencing), with
  `auto.leader.rebalance.enable` preferred leaders are restored periodically, and (KIP-835,
  `metadata.max.idle.interval.ms`) a NoOpRecord is appended when nothing was appended for an
  interval, so the high watermark (and the replicas' view of the leader's liveness through it)
  keeps moving on an idle cluster.
- Unclean recovery, on the active controller only, in a loop of its own (it waits on brokers):
  every leaderless partition that needs it (`unclean_recovery.pending_recoveries`, found in
  the image, so a newly active controller takes over every recovery a failover interrupted)
  has its replicas asked for their logs with GetReplicaLogInfo; the answers, checked against
  the broker epochs of the image at the time of the write, elect by the partition's strategy.
  An operator's ElectLeaders UNCLEAN asks the replicas the same way first, and
  ElectRecoveredLeader (`net.manual_recovery`) elects the replica the operator chose.

Every state change is logged three times, with its epochs: `*_requested` when the records
are appended (with their offsets), `*_committed` when they commit, and `metadata_applied`
(by `MetadataReplayer`, on every node) when they are replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import ssl
import typing
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar
from uuid import uuid4

import structlog
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta
from kio.static.protocol import Payload

from controller import acl_wire, wire
from controller.acl_changes import (
    AclCreationResult,
    AclDeletionResult,
    create_acls,
    delete_acls,
)
from controller.acls import AclOperation, Authorizer, AuthorizerSettings
from controller.admin_authorization import AUTHORIZED_APIS, AdminRequestAuthorization
from controller.alter_partition import AlterPartitionBatchOutcome, alter_partitions
from controller.broker_lifecycle import (
    BrokerLifecycle,
    HeartbeatOutcome,
    LifecycleChange,
    LifecycleConfig,
    RegistrationOutcome,
    TopicPartitionEvent,
    UnregistrationOutcome,
)
from controller.client import is_not_controller
from controller.elections import (
    ElectionResult,
    ElectionType,
    elect_leaders,
    rebalance_leaders,
    unclean_candidates,
)
from controller.image import MetadataDelta, MetadataImage, MetadataReplayer
from controller.limits import MAX_RECORDS_PER_USER_OP, TOO_MANY_RECORDS, OperationTooLargeError
from controller.partition_change import ChangeCause, TopicPartition
from controller.producer_ids import ProducerIdsOutcome, allocate_producer_ids
from controller.reassignment import (
    OngoingReassignment,
    ReassignmentResult,
    alter_reassignments,
    complete_ready,
    list_reassignments,
)
from controller.records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    MetadataRecord,
    NoOpRecord,
    ReplicaLogState,
    UserScramCredentialRecord,
    encode_record,
)
from controller.replica_log_inspector import ReplicaLogInspector
from controller.scram import ScramResult, alter_scram_credentials
from controller.topics import (
    AlterConfigsResult,
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
    TopicDefaults,
    create_partitions,
    create_topics,
    delete_topics,
    incremental_alter_configs,
    replace_configs,
)
from controller.unclean_recovery import (
    PendingRecovery,
    choose_manually,
    pending_recoveries,
    recover,
    replicas_to_inspect,
)
from kraft.driver import LeadershipLostError, NotLeaderError, PendingAppend, RaftDriver
from kraft.messages import Entry, SnapshotId
from net import messages
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, Handler, RequestContext
from net.envelope import EnvelopeError, envelope_error, open_envelope, sealed_response
from net.manual_recovery import (
    VERSIONS as MANUAL_RECOVERY_VERSIONS,
)
from net.manual_recovery import ElectRecoveredLeaderRequest, ElectRecoveredLeaderResponse
from net.protocol import NO_THROTTLE
from net.sasl import SaslClientCredentials
from net.tasks import start_essential

log = structlog.get_logger(__name__)

_NO_AUTHORIZER = "No Authorizer is configured."

_Result = TypeVar("_Result")
_Response = TypeVar("_Response")

# How often the active controller looks for expired broker sessions.
SESSION_CHECK_INTERVAL_S = 0.1
# How often the active controller looks for partitions that need unclean recovery.
RECOVERY_CHECK_INTERVAL_S = 0.5
_NOOP = encode_record(NoOpRecord())
# The reason a newly active controller gives for the transaction it drops.
_ABORTED_AT_FAILOVER = "left open by the previous active controller"
# The log event of a change that starts or cancels a reassignment (a change completing one,
# whatever its cause, logs `reassignment_completed`).
_REASSIGNMENT_LOGS = {
    ChangeCause.REASSIGNMENT_STARTED: "reassignment_started",
    ChangeCause.REASSIGNMENT_CANCELLED: "reassignment_cancelled",
}


def _recovery_refusal(error: ErrorCode) -> ElectRecoveredLeaderResponse:
    return ElectRecoveredLeaderResponse(
        throttle_time=i32Timedelta.parse(NO_THROTTLE), error_code=error, error_message=None
    )


class NotControllerError(Exception):
    """This node is not the active controller (or stopped being it before the commit)."""


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """What the active controller needs of the node's configuration."""

    node_id: int
    cluster_id: str
    lifecycle: LifecycleConfig
    topic_defaults: TopicDefaults
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_ms: int = 300_000
    # How long a request waits for this node to finish becoming the active controller.
    activation_timeout_ms: int = 5_000
    # `unclean.recovery.timeout.ms`: how long a broker's GetReplicaLogInfo answer is waited
    # for, and the proactive strategy's window.
    unclean_recovery_timeout_ms: int = 10_000
    # The listener brokers register for clients, where they answer GetReplicaLogInfo.
    broker_listener: str = "PLAINTEXT"
    # TLS to that listener when it has it.
    broker_ssl_context: ssl.SSLContext | None = None
    # `metadata.max.idle.interval.ms`: a NoOpRecord after this long without an append; 0: never.
    max_idle_interval_ms: int = 500
    # The authorizer's settings; None: no authorizer (CreateAcls and DeleteAcls are then
    # refused with SECURITY_DISABLED, as Kafka refuses them).
    authorizer: AuthorizerSettings | None = None
    # The SCRAM credentials of a new cluster (`bootstrap.scram.credentials`), written by an
    # active controller that finds no SCRAM credential in the metadata.
    bootstrap_scram_credentials: tuple[UserScramCredentialRecord, ...] = ()
    # How it authenticates to the brokers' listener when that is SASL (None: it is not).
    broker_listener_sasl: SaslClientCredentials | None = None


@dataclass(slots=True)
class _Active:
    """The state of the active controller, for one leader epoch."""

    epoch: int
    image: MetadataImage
    lifecycle: BrokerLifecycle
    # The commit of the latest append: a request appending nothing answers after it.
    last_commit: asyncio.Future[int] | None = None


class QuorumController:
    """The controller of one voter: active while its node leads the quorum.

    Register it as a `RaftListener` after the `MetadataReplayer`, so the committed image is
    current when it hears of a commit, and `register_apis` on the controller listener's
    registry before the driver starts.
    """

    def __init__(
        self,
        driver: RaftDriver,
        replayer: MetadataReplayer,
        config: ControllerConfig,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._driver = driver
        self._replayer = replayer
        self._config = config
        self._clock = clock
        self._authorizer = (
            None
            if config.authorizer is None
            else Authorizer(config.authorizer, lambda: replayer.image.acls)
        )
        self._active: _Active | None = None
        # The admin handlers an Envelope may carry, with their versions (`register_apis`).
        self._enveloped: dict[int, tuple[Handler, int, int]] = {}
        self._activated = asyncio.Event()
        self._committed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._timers: asyncio.Task[None] | None = None
        self._recovery: asyncio.Task[None] | None = None
        self._noops: asyncio.Task[None] | None = None
        # When this node last appended (event-loop seconds): the idle interval counts from it.
        self._last_append_s = 0.0
        self._inspector = ReplicaLogInspector(
            config.broker_listener,
            config.unclean_recovery_timeout_ms / 1000,
            config.broker_ssl_context,
            config.broker_listener_sasl,
        )

    # -- wiring ------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether this node is the active controller, activated (it serves the controller
        APIs)."""
        return self._active is not None

    def register_apis(self, registry: ApiRegistry) -> None:
        """Serve the controller APIs on `registry`."""
        handlers: dict[int, Handler] = {
            ApiKey.BROKER_REGISTRATION: self._on_broker_registration,
            ApiKey.BROKER_HEARTBEAT: self._on_broker_heartbeat,
            ApiKey.ALTER_PARTITION: self._on_alter_partition,
            ApiKey.ALLOCATE_PRODUCER_IDS: self._on_allocate_producer_ids,
            ApiKey.CREATE_TOPICS: self._on_create_topics,
            ApiKey.DELETE_TOPICS: self._on_delete_topics,
            ApiKey.CREATE_PARTITIONS: self._on_create_partitions,
            ApiKey.ELECT_LEADERS: self._on_elect_leaders,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self._on_incremental_alter_configs,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: self._on_alter_partition_reassignments,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: self._on_list_partition_reassignments,
            ApiKey.UNREGISTER_BROKER: self._on_unregister_broker,
            ApiKey.ALTER_CONFIGS: self._on_alter_configs,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self._on_alter_user_scram_credentials,
            ApiKey.CREATE_ACLS: self._on_create_acls,
            ApiKey.DELETE_ACLS: self._on_delete_acls,
            ApiKey.ELECT_RECOVERED_LEADER: self._on_elect_recovered_leader,
        }
        # The brokers' own APIs need CLUSTER_ACTION on the cluster, as in Kafka's ControllerApis.
        # So do the admin APIs: only nodes send them here (brokers forwarding their clients'
        # requests, after authorizing them with the client's principal, and the admin API), as
        # no Envelope carries the client's principal to authorize them again here.
        refusals: dict[int, Callable[[int, Any, ErrorCode], Any]] = {
            ApiKey.BROKER_REGISTRATION: lambda v, _, e: wire.registration_error(v, e),
            ApiKey.BROKER_HEARTBEAT: lambda v, _, e: wire.heartbeat_error(v, e),
            ApiKey.ALTER_PARTITION: lambda v, _, e: wire.alter_partition_error(v, e),
            ApiKey.ALLOCATE_PRODUCER_IDS: lambda v, _, e: wire.producer_ids_error(v, e),
            ApiKey.ELECT_RECOVERED_LEADER: lambda _v, _r, e: _recovery_refusal(e),
        }
        versions = [
            (served.api_key, served.min_version, served.max_version) for served in wire.SERVED
        ]
        versions += [
            (ApiKey.CREATE_ACLS, *acl_wire.ACL_VERSIONS),
            (ApiKey.DELETE_ACLS, *acl_wire.ACL_VERSIONS),
            (
                ApiKey.ELECT_RECOVERED_LEADER,
                MANUAL_RECOVERY_VERSIONS[0],
                MANUAL_RECOVERY_VERSIONS[-1],
            ),
        ]
        # What an Envelope may carry, unwrapped: the client's principal is authorized instead.
        self._enveloped = {
            api_key: (handlers[api_key], min_version, max_version)
            for api_key, min_version, max_version in versions
            if api_key in AUTHORIZED_APIS
        }
        handlers[ApiKey.ENVELOPE] = self._on_envelope
        refusals[ApiKey.ENVELOPE] = lambda _v, _r, e: envelope_error(e)
        versions.append((ApiKey.ENVELOPE, 0, 0))
        for api_key, min_version, max_version in versions:
            handler = handlers[api_key]
            if self._authorizer is not None:
                refuse = refusals.get(api_key, wire.forwarded_refusal)
                handler = self._cluster_action_only(self._authorizer, handler, refuse)
            registry.register(api_key, handler, min_version=min_version, max_version=max_version)

    async def _on_envelope(
        self, context: RequestContext, request: EnvelopeRequest
    ) -> EnvelopeResponse:
        """A forwarded admin request (its sender, a broker, holds CLUSTER_ACTION): answered as
        if its client had sent it here, authorized with the client's principal and address."""
        try:
            opened = open_envelope(request)
        except EnvelopeError as error:
            log.info("envelope_refused", peer=context.peer, error=str(error))
            return envelope_error(ErrorCode.invalid_request)
        served = self._enveloped.get(opened.header.api_key)
        if served is None or not served[1] <= opened.header.api_version <= served[2]:
            log.info(
                "envelope_refused",
                peer=context.peer,
                api_key=opened.header.api_key,
                api_version=opened.header.api_version,
                error="not a forwardable admin request",
            )
            return envelope_error(ErrorCode.invalid_request)
        handler = served[0]
        inner = context._replace(
            header=opened.header,
            peer=opened.peer,
            request_bytes=len(request.request_data),
            principal=opened.principal,
        )

        async def handle(handled: RequestContext, body: Any) -> Payload:
            result = handler(handled, body)
            # The admin handlers always answer with a kio response.
            answered = typing.cast(Payload, await result if inspect.isawaitable(result) else result)
            if is_not_controller(answered):
                # Not the active controller: the whole envelope is, so that the forwarding
                # broker asks the new one (an answer merged with authorization errors would
                # hide it).
                raise NotControllerError
            return answered

        try:
            if self._authorizer is None:
                response = await handle(inner, opened.request)
            else:
                authorization = AdminRequestAuthorization(
                    self._authorizer, lambda: self._replayer.image
                )
                response = await authorization.authorized(inner, opened.request, handle)
        except NotControllerError:
            return envelope_error(ErrorCode.not_controller)
        return sealed_response(opened.header, response)

    @property
    def authorization_denials(self) -> int:
        """The broker requests this controller refused for want of CLUSTER_ACTION."""
        return 0 if self._authorizer is None else self._authorizer.denials

    @staticmethod
    def _cluster_action_only(
        authorizer: Authorizer, handler: Handler, refuse: Callable[[int, Any, ErrorCode], Any]
    ) -> Handler:
        """`handler` for senders with CLUSTER_ACTION on the cluster; CLUSTER_AUTHORIZATION_FAILED
        (`refuse(version, request, error)`) for the others."""

        async def authorized(context: RequestContext, request: Any) -> Any:
            if not authorizer.allows_cluster(context, AclOperation.CLUSTER_ACTION):
                return refuse(
                    context.header.api_version, request, ErrorCode.cluster_authorization_failed
                )
            result = handler(context, request)
            return await result if inspect.isawaitable(result) else result

        return authorized

    async def stop(self) -> None:
        self._deactivate("stopping")
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._inspector.close()

    # -- RaftListener -----------------------------------------------------------------------

    def on_commit(self, entries: Sequence[Entry]) -> None:
        self._committed.set()

    def on_leader_change(self, leader_id: int | None, leader_epoch: int) -> None:
        if leader_id == self._config.node_id and self._driver.is_leader:
            # The new leader's LeaderChange entry counts as its first append.
            self._last_append_s = asyncio.get_running_loop().time()
            self._spawn(self._activate(leader_epoch))
        else:
            self._deactivate(f"leader is now {leader_id} in epoch {leader_epoch}")

    def on_snapshot_loaded(self, snapshot_id: SnapshotId, records: Sequence[bytes]) -> None:
        """Nothing: the replayer owns the image, and a leader never loads a snapshot."""

    # -- becoming active and inactive ---------------------------------------------------------

    async def _activate(self, epoch: int) -> None:
        # Everything of earlier epochs is below this leader's first entry of its own epoch;
        # once that commits, the committed image holds all the metadata there is.
        target = self._driver.log_end_offset
        while self._replayer.replayed_end_offset < target:
            self._committed.clear()
            await self._committed.wait()
            if not self._driver.is_leader or self._driver.epoch != epoch:
                return
        if self._replayer.transaction_open and not await self._abort_transaction(epoch):
            return
        image = self._replayer.image
        self._active = _Active(
            epoch, image, BrokerLifecycle.activate(image, self._now_ms(), self._config.lifecycle)
        )
        self._activated.set()
        log.info(
            "controller_activated",
            node_id=self._config.node_id,
            leader_epoch=epoch,
            metadata_offset=image.end_offset,
            brokers=len(image.brokers),
            topics=len(image.topics),
        )
        self._timers = self._spawn(self._run_timers(epoch))
        self._spawn(self._complete_ready_reassignments())
        self._recovery = self._spawn(self._run_unclean_recovery(epoch))
        if self._config.max_idle_interval_ms > 0:
            self._noops = self._spawn(self._append_noops_when_idle(epoch))
        if self._config.bootstrap_scram_credentials and not image.scram_credentials:
            self._spawn(self._bootstrap_scram_credentials())

    async def _abort_transaction(self, epoch: int) -> bool:
        """Drop the metadata transaction the previous controller left open (it lost the
        quorum before the rest of its append was replicated; its caller was told
        NOT_CONTROLLER and retries here): no image shows a part of it. False if this node
        stopped leading meanwhile."""
        try:
            aborted = self._submit([encode_record(AbortTransactionRecord(_ABORTED_AT_FAILOVER))])
        except NotLeaderError:
            return False
        log.warning(
            "metadata_transaction_aborted",
            leader_epoch=epoch,
            offset=aborted.base_offset,
            reason=_ABORTED_AT_FAILOVER,
        )
        try:
            await aborted.committed
        except LeadershipLostError:
            return False
        # Replayed by now: the replayer heard of the commit before this task resumed.
        return self._driver.is_leader and self._driver.epoch == epoch

    def _deactivate(self, reason: str) -> None:
        for task in (self._timers, self._recovery, self._noops):
            if task is not None:
                task.cancel()
        self._timers = self._recovery = self._noops = None
        self._activated.clear()
        if self._active is not None:
            log.info(
                "controller_deactivated",
                node_id=self._config.node_id,
                leader_epoch=self._active.epoch,
                reason=reason,
            )
            self._active = None

    async def _active_state(self) -> _Active:
        if self._active is None:
            if not self._driver.is_leader:
                raise NotControllerError
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._config.activation_timeout_ms / 1000):
                    await self._activated.wait()
        if self._active is None:
            raise NotControllerError
        return self._active

    # -- writing ------------------------------------------------------------------------------

    async def _write(
        self,
        operation: str,
        build: Callable[[_Active, int], tuple[Sequence[MetadataRecord], _Result]],
        max_records: int | None = None,
        *,
        transaction: bool = False,
        **context: Any,
    ) -> _Result:
        """Runs `build` on the working image, appends its records, answers once committed.

        `build` gets the active state and the offset the first record will get. With
        `transaction`, the records are appended as one metadata transaction (between a
        BeginTransactionRecord and an EndTransactionRecord, `controller.metadata_transactions`),
        so that no image shows a part of them however the log's commits cut them. Raises
        NotControllerError when this node is not (or stops being) the active controller, and
        OperationTooLargeError (from `build`, or when it gives more than `max_records`
        records) with nothing appended.
        """
        active = await self._active_state()
        next_offset = self._driver.log_end_offset
        records, result = build(active, next_offset + 1 if transaction else next_offset)
        if max_records is not None and len(records) > max_records:
            raise OperationTooLargeError(TOO_MANY_RECORDS)
        if transaction and records:
            records = [BeginTransactionRecord(operation), *records, EndTransactionRecord()]
        if not records:
            pending = active.last_commit
            if pending is not None and not pending.done():
                await self._await_commit(asyncio.shield(pending))
            return result
        try:
            appended = self._submit([encode_record(record) for record in records])
        except NotLeaderError as error:
            raise NotControllerError from error
        delta = MetadataDelta(active.image)
        for record in records:
            delta.replay(record)
        active.image = delta.apply(appended.end_offset, appended.epoch)
        active.last_commit = appended.committed
        log.info(
            f"{operation}_requested",
            leader_epoch=appended.epoch,
            base_offset=appended.base_offset,
            end_offset=appended.end_offset,
            records=len(records),
            **context,
        )
        await self._await_commit(appended.committed)
        log.info(
            f"{operation}_committed",
            leader_epoch=appended.epoch,
            end_offset=appended.end_offset,
            **context,
        )
        return result

    def _submit(self, records: Sequence[bytes]) -> PendingAppend:
        appended = self._driver.submit(records)
        self._last_append_s = asyncio.get_running_loop().time()
        return appended

    async def _await_commit(self, commit: asyncio.Future[int]) -> None:
        try:
            await commit
        except LeadershipLostError as error:
            raise NotControllerError from error

    async def _serve(
        self,
        operation: str,
        build: Callable[[_Active, int], tuple[Sequence[MetadataRecord], _Result]],
        respond: Callable[[_Result], _Response],
        refuse: Callable[[ErrorCode], _Response],
        **context: Any,
    ) -> _Response:
        """A request's response: `respond` to what `_write` gave, or `refuse` with
        NOT_CONTROLLER."""
        try:
            result = await self._write(operation, build, **context)
        except NotControllerError:
            return refuse(ErrorCode.not_controller)
        return respond(result)

    async def _serve_user(
        self,
        operation: str,
        build: Callable[[_Active, int], tuple[Sequence[MetadataRecord], _Result]],
        respond: Callable[[_Result], _Response],
        refuse: Callable[[ErrorCode, str | None], _Response],
        **context: Any,
    ) -> _Response:
        """`_serve` for a user request: at most MAX_RECORDS_PER_USER_OP records, else `refuse`
        with POLICY_VIOLATION and Kafka's message; appended as one metadata transaction (a
        topic of thousands of partitions is seen whole or not at all)."""
        try:
            result = await self._write(
                operation, build, max_records=MAX_RECORDS_PER_USER_OP, transaction=True, **context
            )
        except NotControllerError:
            return refuse(ErrorCode.not_controller, None)
        except OperationTooLargeError as error:
            log.warning(
                f"{operation}_refused",
                reason=error.message,
                max_records=MAX_RECORDS_PER_USER_OP,
                **context,
            )
            return refuse(ErrorCode.policy_violation, error.message)
        return respond(result)

    # -- broker lifecycle ---------------------------------------------------------------------

    async def _on_broker_registration(
        self, context: RequestContext, request: messages.BrokerRegistrationRequest
    ) -> messages.BrokerRegistrationResponse:
        version = context.header.api_version
        if request.cluster_id != self._config.cluster_id:
            return wire.registration_error(version, ErrorCode.inconsistent_cluster_id)
        registration = wire.registration_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], RegistrationOutcome]:
            outcome = active.lifecycle.register(
                active.image, registration, self._now_ms(), next_offset
            )
            self._log_lifecycle(outcome.change)
            return outcome.change.records, outcome

        return await self._serve(
            "broker_registration",
            build,
            partial(wire.registration_response, version),
            partial(wire.registration_error, version),
            broker_id=registration.broker_id,
            incarnation_id=str(registration.incarnation_id),
            previous_broker_epoch=registration.previous_broker_epoch,
        )

    async def _on_broker_heartbeat(
        self, context: RequestContext, request: messages.BrokerHeartbeatRequest
    ) -> messages.BrokerHeartbeatResponse:
        version = context.header.api_version
        heartbeat = wire.heartbeat_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], HeartbeatOutcome]:
            outcome = active.lifecycle.heartbeat(
                active.image, heartbeat, self._now_ms(), next_offset
            )
            self._log_lifecycle(outcome.change)
            return outcome.change.records, outcome

        return await self._serve(
            "broker_heartbeat",
            build,
            partial(wire.heartbeat_response, version),
            partial(wire.heartbeat_error, version),
            broker_id=heartbeat.broker_id,
            broker_epoch=heartbeat.broker_epoch,
        )

    async def _on_alter_partition(
        self, context: RequestContext, request: messages.AlterPartitionRequest
    ) -> messages.AlterPartitionResponse:
        version = context.header.api_version
        batch = wire.alter_partition_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], AlterPartitionBatchOutcome]:
            outcome = alter_partitions(active.image, active.lifecycle, batch)
            self._log_partition_events(outcome.events)
            return outcome.records, outcome

        return await self._serve(
            "alter_partition",
            build,
            partial(wire.alter_partition_response, version),
            partial(wire.alter_partition_error, version),
            broker_id=batch.broker_id,
            broker_epoch=batch.broker_epoch,
            partitions=len(batch.partitions),
        )

    async def _on_allocate_producer_ids(
        self, context: RequestContext, request: messages.AllocateProducerIdsRequest
    ) -> messages.AllocateProducerIdsResponse:
        version = context.header.api_version

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], ProducerIdsOutcome]:
            outcome = allocate_producer_ids(active.image, request.broker_id, request.broker_epoch)
            return outcome.records, outcome

        return await self._serve(
            "producer_ids",
            build,
            partial(wire.producer_ids_response, version),
            partial(wire.producer_ids_error, version),
            broker_id=request.broker_id,
        )

    # -- topics -------------------------------------------------------------------------------

    async def _on_create_topics(
        self, context: RequestContext, request: messages.CreateTopicsRequest
    ) -> messages.CreateTopicsResponse:
        version = context.header.api_version
        new_topics = wire.create_topics_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], tuple[CreateTopicResult, ...]]:
            outcome = create_topics(
                active.image,
                new_topics,
                self._config.topic_defaults,
                validate_only=request.validate_only,
            )
            return outcome.records, outcome.results

        return await self._serve_user(
            "create_topics",
            build,
            partial(wire.create_topics_response, version),
            partial(wire.create_topics_error, version, request),
            topics=[topic.name for topic in new_topics],
        )

    async def _on_delete_topics(
        self, context: RequestContext, request: messages.DeleteTopicsRequest
    ) -> messages.DeleteTopicsResponse:
        version = context.header.api_version
        names_or_ids = wire.delete_topics_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], tuple[DeleteTopicResult, ...]]:
            outcome = delete_topics(active.image, names_or_ids)
            return outcome.records, outcome.results

        return await self._serve_user(
            "delete_topics",
            build,
            partial(wire.delete_topics_response, version),
            partial(wire.delete_topics_error, version, request),
            topics=[str(item) for item in names_or_ids],
        )

    async def _on_create_partitions(
        self, context: RequestContext, request: messages.CreatePartitionsRequest
    ) -> messages.CreatePartitionsResponse:
        version = context.header.api_version
        increases = wire.create_partitions_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], tuple[CreatePartitionsResult, ...]]:
            outcome = create_partitions(
                active.image, increases, validate_only=request.validate_only
            )
            return outcome.records, outcome.results

        return await self._serve_user(
            "create_partitions",
            build,
            partial(wire.create_partitions_response, version),
            partial(wire.create_partitions_error, version, request),
            topics={increase.name: increase.count for increase in increases},
        )

    async def _on_elect_leaders(
        self, context: RequestContext, request: messages.ElectLeadersRequest
    ) -> messages.ElectLeadersResponse:
        version = context.header.api_version
        election_type, partitions = wire.elect_leaders_request(request)
        replica_logs: dict[TopicPartition, list[ReplicaLogState]] = {}
        if election_type is ElectionType.UNCLEAN:
            # The replicas' logs decide an unclean leader; asked before the write, which
            # checks every answer against the image of its own moment.
            try:
                active = await self._active_state()
            except NotControllerError:
                return wire.elect_leaders_response(version, (), ErrorCode.not_controller)
            asked = unclean_candidates(active.image, active.lifecycle, partitions)
            replica_logs = await self._inspector.inspect(active.image, asked)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], tuple[ElectionResult, ...]]:
            outcome = elect_leaders(
                active.image, active.lifecycle, election_type, partitions, replica_logs
            )
            self._log_partition_events(outcome.events)
            return outcome.records, outcome.results

        return await self._serve_user(
            "elect_leaders",
            build,
            partial(wire.elect_leaders_response, version),
            # ElectLeaders has a top-level error code but no message to carry.
            lambda error, _message: wire.elect_leaders_response(version, (), error),
            election_type=election_type.name.lower(),
        )

    async def _on_incremental_alter_configs(
        self, context: RequestContext, request: messages.IncrementalAlterConfigsRequest
    ) -> messages.IncrementalAlterConfigsResponse:
        version = context.header.api_version
        resources = wire.incremental_alter_configs_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], tuple[AlterConfigsResult, ...]]:
            outcome = incremental_alter_configs(
                active.image, resources, validate_only=request.validate_only
            )
            return outcome.records, outcome.results

        return await self._serve_user(
            "incremental_alter_configs",
            build,
            partial(wire.incremental_alter_configs_response, version),
            partial(wire.incremental_alter_configs_error, version, request),
            resources=[resource.resource_name for resource in resources],
        )

    # -- partition reassignments --------------------------------------------------------------

    async def _on_alter_partition_reassignments(
        self, context: RequestContext, request: messages.AlterPartitionReassignmentsRequest
    ) -> messages.AlterPartitionReassignmentsResponse:
        version = context.header.api_version
        asked, allow_rf_change = wire.alter_reassignments_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], tuple[ReassignmentResult, ...]]:
            outcome = alter_reassignments(
                active.image,
                active.lifecycle,
                asked,
                allow_replication_factor_change=allow_rf_change,
            )
            self._log_partition_events(outcome.events)
            for result in outcome.results:
                if result.error_code is not ErrorCode.none:
                    log.info(
                        "reassignment_refused",
                        topic=result.topic,
                        partition=result.partition_id,
                        error=result.error_code.name,
                        reason=result.error_message,
                    )
            return outcome.records, outcome.results

        return await self._serve_user(
            "alter_partition_reassignments",
            build,
            partial(
                wire.alter_reassignments_response,
                version,
                allow_replication_factor_change=allow_rf_change,
            ),
            partial(wire.alter_reassignments_error, version),
            partitions=len(asked),
        )

    async def _on_list_partition_reassignments(
        self, context: RequestContext, request: messages.ListPartitionReassignmentsRequest
    ) -> messages.ListPartitionReassignmentsResponse:
        version = context.header.api_version
        partitions = wire.list_reassignments_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], list[OngoingReassignment]]:
            return (), list_reassignments(active.image, partitions)

        return await self._serve(
            "list_partition_reassignments",
            build,
            partial(wire.list_reassignments_response, version),
            partial(wire.list_reassignments_error, version),
        )

    async def _on_unregister_broker(
        self, context: RequestContext, request: messages.UnregisterBrokerRequest
    ) -> messages.UnregisterBrokerResponse:
        version = context.header.api_version
        broker_id = int(request.broker_id)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], UnregistrationOutcome]:
            outcome = active.lifecycle.unregister(active.image, broker_id)
            if outcome.error is ErrorCode.none:
                self._log_lifecycle(outcome.change)
            else:
                log.info(
                    "broker_unregistration_refused",
                    broker_id=broker_id,
                    error=outcome.error.name,
                    reason=outcome.message,
                )
            return outcome.change.records, outcome

        return await self._serve(
            "unregister_broker",
            build,
            partial(wire.unregister_broker_response, version),
            partial(wire.unregister_broker_error, version),
            broker_id=broker_id,
        )

    # -- ACLs ---------------------------------------------------------------------------------

    async def _on_create_acls(
        self, context: RequestContext, request: messages.CreateAclsRequest
    ) -> messages.CreateAclsResponse:
        version = context.header.api_version
        if self._config.authorizer is None:
            return acl_wire.create_acls_error(
                version, request, ErrorCode.security_disabled, _NO_AUTHORIZER
            )
        acls = acl_wire.create_acls_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], list[AclCreationResult]]:
            return create_acls(active.image.acls, acls, uuid4)

        return await self._serve_user(
            "create_acls",
            build,
            partial(acl_wire.create_acls_response, version),
            partial(acl_wire.create_acls_error, version, request),
            acls=len(acls),
        )

    async def _on_delete_acls(
        self, context: RequestContext, request: messages.DeleteAclsRequest
    ) -> messages.DeleteAclsResponse:
        version = context.header.api_version
        if self._config.authorizer is None:
            return acl_wire.delete_acls_error(
                version, request, ErrorCode.security_disabled, _NO_AUTHORIZER
            )
        filters = acl_wire.delete_acls_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], list[AclDeletionResult]]:
            return delete_acls(active.image.acls, filters)

        return await self._serve_user(
            "delete_acls",
            build,
            partial(acl_wire.delete_acls_response, version),
            partial(acl_wire.delete_acls_error, version, request),
            filters=len(filters),
        )

    async def _complete_ready_reassignments(self) -> None:
        """On activation: completes the moves an older controller left ready (none, unless it
        failed between a change and its completion, which are one record)."""

        def build(active: _Active, next_offset: int) -> tuple[Sequence[MetadataRecord], None]:
            outcome = complete_ready(active.image, active.lifecycle)
            self._log_partition_events(outcome.events)
            return outcome.records, None

        with contextlib.suppress(NotControllerError):
            await self._write("reassignment_completion", build)

    async def _on_alter_configs(
        self, context: RequestContext, request: messages.AlterConfigsRequest
    ) -> messages.AlterConfigsResponse:
        version = context.header.api_version
        resources = wire.alter_configs_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], tuple[AlterConfigsResult, ...]]:
            outcome = replace_configs(active.image, resources, validate_only=request.validate_only)
            return outcome.records, outcome.results

        return await self._serve_user(
            "alter_configs",
            build,
            partial(wire.alter_configs_response, version),
            partial(wire.alter_configs_error, version, request),
            resources=[resource.resource_name for resource in resources],
        )

    # -- unclean recovery ---------------------------------------------------------------------

    async def _on_elect_recovered_leader(
        self, context: RequestContext, request: ElectRecoveredLeaderRequest
    ) -> ElectRecoveredLeaderResponse:
        def answer(error: ErrorCode, message: str | None) -> ElectRecoveredLeaderResponse:
            return ElectRecoveredLeaderResponse(
                throttle_time=i32Timedelta.parse(NO_THROTTLE),
                error_code=error,
                error_message=message,
            )

        tp = TopicPartition(request.topic_id, int(request.partition))
        try:
            active = await self._active_state()
        except NotControllerError:
            return answer(ErrorCode.not_controller, None)
        state = active.image.partition(tp.topic_id, tp.partition_id)
        asked = {} if state is None else {b: [tp] for b in state.replicas}
        replica_logs = (await self._inspector.inspect(active.image, asked)).get(tp, [])

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], tuple[ErrorCode, str | None]]:
            error, message, outcome = choose_manually(
                active.image, active.lifecycle, tp, int(request.leader), replica_logs
            )
            self._log_partition_events(outcome.events)
            return outcome.records, (error, message)

        response: ElectRecoveredLeaderResponse = await self._serve(
            "manual_unclean_recovery",
            build,
            lambda result: answer(*result),
            lambda error: answer(error, None),
            topic_id=str(tp.topic_id),
            partition=tp.partition_id,
            leader=int(request.leader),
        )
        return response

    async def _run_unclean_recovery(self, epoch: int) -> None:
        """Recovers, round after round, every partition that needs an unclean recovery."""
        # When each pending partition was first seen to need recovery (monotonic seconds),
        # and what the last rounds recorded it waits for.
        began: dict[TopicPartition, float] = {}
        reported: Mapping[TopicPartition, tuple[int, ...]] = {}
        while True:
            await asyncio.sleep(RECOVERY_CHECK_INTERVAL_S)
            active = self._active
            if active is None or active.epoch != epoch:
                return
            pending = pending_recoveries(active.image, active.lifecycle)
            now = asyncio.get_running_loop().time()
            began = {p.partition: began.get(p.partition, now) for p in pending}
            if not pending:
                reported = {}
                continue
            try:
                reported = await self._recover_round(active, pending, began, reported)
            except NotControllerError:
                return

    async def _recover_round(
        self,
        active: _Active,
        pending: Sequence[PendingRecovery],
        began: Mapping[TopicPartition, float],
        reported: Mapping[TopicPartition, tuple[int, ...]],
    ) -> Mapping[TopicPartition, tuple[int, ...]]:
        """Asks the replicas of the `pending` partitions for their logs and elects where the
        answers allow; what each partition still waits for."""
        asked = replicas_to_inspect(pending, active.lifecycle.broker_facts(active.image))
        replica_logs = await self._inspector.inspect(active.image, asked)
        window_s = self._config.unclean_recovery_timeout_ms / 1000
        now = asyncio.get_running_loop().time()
        windows_over = {tp for tp, start in began.items() if now - start >= window_s}

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], Mapping[TopicPartition, tuple[int, ...]]]:
            outcome = recover(
                active.image,
                active.lifecycle,
                replica_logs,
                windows_over=windows_over,
                reported_waiting=reported,
            )
            self._log_partition_events(outcome.events)
            for tp, waiting in outcome.waiting.items():
                if reported.get(tp) != waiting:
                    log.warning(
                        "unclean_recovery_waiting",
                        topic_id=str(tp.topic_id),
                        partition=tp.partition_id,
                        waiting_for=list(waiting),
                    )
            return outcome.records, outcome.waiting

        return await self._write("unclean_recovery", build)

    # -- timers -------------------------------------------------------------------------------

    async def _run_timers(self, epoch: int) -> None:
        loop = asyncio.get_running_loop()
        interval_s = self._config.leader_imbalance_check_interval_ms / 1000
        next_rebalance = loop.time() + interval_s
        while self._active is not None and self._active.epoch == epoch:
            await asyncio.sleep(SESSION_CHECK_INTERVAL_S)
            try:
                await self._expire_sessions()
                if self._config.auto_leader_rebalance_enable and loop.time() >= next_rebalance:
                    next_rebalance = loop.time() + interval_s
                    await self._rebalance_leaders()
            except NotControllerError:
                return

    async def _append_noops_when_idle(self, epoch: int) -> None:
        """Appends a NoOpRecord whenever `max_idle_interval_ms` passed without an append."""
        loop = asyncio.get_running_loop()
        interval_s = self._config.max_idle_interval_ms / 1000
        while self._active is not None and self._active.epoch == epoch:
            idle_s = loop.time() - self._last_append_s
            if idle_s < interval_s:
                await asyncio.sleep(interval_s - idle_s)
                continue
            try:
                appended = self._submit([_NOOP])
            except NotLeaderError:
                return
            # Nothing waits for a NoOp to commit: a leadership lost before it did is no news.
            appended.committed.add_done_callback(_retrieve_outcome)

    async def _expire_sessions(self) -> None:
        def build(active: _Active, next_offset: int) -> tuple[Sequence[MetadataRecord], None]:
            change = active.lifecycle.expire_sessions(active.image, self._now_ms())
            self._log_lifecycle(change)
            return change.records, None

        await self._write("session_expiry", build)

    async def _on_alter_user_scram_credentials(
        self, context: RequestContext, request: messages.AlterUserScramCredentialsRequest
    ) -> messages.AlterUserScramCredentialsResponse:
        version = context.header.api_version
        alterations = wire.alter_scram_credentials_request(request)

        def build(
            active: _Active, next_offset: int
        ) -> tuple[Sequence[MetadataRecord], list[ScramResult]]:
            return alter_scram_credentials(active.image, alterations)

        return await self._serve_user(
            "alter_user_scram_credentials",
            build,
            partial(wire.alter_scram_credentials_response, version),
            partial(wire.alter_scram_credentials_error, version, request),
            users=sorted({alteration.name for alteration in alterations}),
        )

    async def _bootstrap_scram_credentials(self) -> None:
        def build(active: _Active, next_offset: int) -> tuple[Sequence[MetadataRecord], None]:
            # Checked again on the working image: a request may have added users meanwhile.
            if active.image.scram_credentials:
                return (), None
            return self._config.bootstrap_scram_credentials, None

        with contextlib.suppress(NotControllerError):
            await self._write(
                "bootstrap_scram_credentials",
                build,
                users=sorted({record.name for record in self._config.bootstrap_scram_credentials}),
            )

    async def _rebalance_leaders(self) -> None:
        def build(active: _Active, next_offset: int) -> tuple[Sequence[MetadataRecord], None]:
            outcome = rebalance_leaders(active.image, active.lifecycle)
            self._log_partition_events(outcome.events)
            return outcome.records, None

        await self._write("leader_rebalance", build)

    # -- logging and helpers ------------------------------------------------------------------

    def _log_lifecycle(self, change: LifecycleChange) -> None:
        for event in change.broker_events:
            log.info(
                "broker_transition",
                transition=event.transition.value,
                broker_id=event.broker_id,
                broker_epoch=event.broker_epoch,
                clean_shutdown=event.clean_shutdown,
            )
        self._log_partition_events(change.partition_events)

    def _log_partition_events(self, events: Sequence[TopicPartitionEvent]) -> None:
        for item in events:
            event = item.event
            # An unclean election may have lost committed records: operators must see it.
            emit = log.warning if event.potential_data_loss else log.info
            emit(
                "partition_change",
                topic_id=str(item.partition.topic_id),
                partition=item.partition.partition_id,
                cause=event.cause.value,
                old_leader=event.old_leader,
                new_leader=event.new_leader,
                leader_epoch=event.leader_epoch,
                partition_epoch=event.partition_epoch,
                election=None if event.election is None else event.election.value,
                potential_data_loss=event.potential_data_loss,
                needs_unclean_recovery=event.needs_unclean_recovery,
            )
            if event.joined_isr:
                log.info(
                    "reassignment_replica_in_sync",
                    topic_id=str(item.partition.topic_id),
                    partition=item.partition.partition_id,
                    replicas=list(event.joined_isr),
                    leader_epoch=event.leader_epoch,
                    partition_epoch=event.partition_epoch,
                )
            if event.cause in _REASSIGNMENT_LOGS:
                reassignment = _REASSIGNMENT_LOGS[event.cause]
            elif event.reassignment_completed:
                reassignment = "reassignment_completed"
            else:
                continue
            log.info(
                reassignment,
                topic_id=str(item.partition.topic_id),
                partition=item.partition.partition_id,
                replicas=list(event.replicas),
                adding_replicas=list(event.adding_replicas),
                removing_replicas=list(event.removing_replicas),
                leader=event.new_leader,
                leader_epoch=event.leader_epoch,
                partition_epoch=event.partition_epoch,
            )

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        # Activation and the session timers: a controller that lost either leads the quorum
        # while fencing no one, so their failure is fatal.
        task: asyncio.Task[None] = start_essential(coroutine, "quorum-controller")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _now_ms(self) -> int:
        now = self._clock() if self._clock is not None else asyncio.get_running_loop().time()
        return int(now * 1000)


def _retrieve_outcome(future: asyncio.Future[int]) -> None:
    # Retrieving the exception keeps asyncio from reporting it as never retrieved.
    if not future.cancelled():
        future.exception()
