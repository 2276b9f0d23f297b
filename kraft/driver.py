"""The asyncio driver around `RaftNode`: storage, fsync, sockets and time.

It stays thin. Every input (a request from a peer, a response to one of ours, a tick, an append
from the controller) goes into the pure state machine; every `Ready` is applied in the order
its contract demands: the quorum state is written durably, then log operations go to the
`__cluster_metadata-0` storage log, then the log is fsynced (and the node told so), and only
then are messages sent, so nothing is ever acknowledged or voted that a crash could undo.

The fsync runs in a thread: on a loaded disk it takes milliseconds, which on the event loop
would stall every produce and fetch of the node (the idle NoOp alone asks for one every
`metadata.max.idle.interval.ms`). Meanwhile the rest of that `Ready` and every later one wait:
the state machine keeps taking inputs and gathers their effects, the storage log is left alone
(so the flushed offset is exactly the log end at the start), and once the fsync is done the
node is told, the waiting `Ready` is finished and the gathered ones follow.

Peers talk through Kafka's own quorum RPCs (`kraft.wire`) on the controller listener. A request
received from a peer is answered with the state machine's response to that peer, which may come
later: the leader parks a Fetch until it has news (long polling).

For the controller above, the driver offers `append` (resolves once the records commit, fails if
leadership is lost first), listeners called with committed entries, leadership changes and
loaded snapshots, and a quorum view for DescribeQuorum (served on the controller listener) and
the admin API.

Snapshots (KIP-630; files in `kraft.snapshot_file`): once the committed entries since the last
snapshot exceed `max_bytes_between_snapshots`, the driver writes a snapshot of the metadata image
(asked of the `SnapshotSource`) at the high watermark and tells the state machine, which deletes
the log below it. Lagging replicas fetch the leader's snapshot with FetchSnapshot and load it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import random
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import structlog
from kio.schema.errors import ErrorCode

from kraft.messages import (
    Entry,
    FetchSnapshotResponse,
    Message,
    QuorumView,
    ReplicaView,
    SnapshotId,
)
from kraft.messages import ErrorCode as QuorumError
from kraft.metadata_log import MetadataLog
from kraft.quorum_state import QuorumState, QuorumStateError
from kraft.raft import (
    Appended,
    DeleteBefore,
    LoadSnapshot,
    RaftConfig,
    RaftNode,
    Ready,
    Role,
    Truncate,
)
from kraft.snapshot_file import decode_snapshot, encode_snapshot
from kraft.wire import (
    DESCRIBE_QUORUM_VERSION,
    QUORUM_RPCS,
    RPC_OF_REQUEST,
    WireFormatError,
    WireRequest,
    WireResponse,
    describe_quorum_request,
    describe_quorum_response,
    encode_entries,
    quorum_view_from_wire,
    request_from_wire,
    request_to_wire,
    response_from_wire,
    response_to_wire,
)
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.client import KafkaConnectionError, NodeConnection, RequestTimedOutError
from net.protocol import ProtocolError, error_response
from net.sasl import SaslClientCredentials
from net.server import (
    DEFAULT_CONNECTIONS_MAX_IDLE_MS,
    DEFAULT_MAX_REQUEST_SIZE,
    KafkaServer,
    ListenerSecurity,
)
from net.tasks import report_fatal
from storage.atomic_file import write_atomically
from storage.log import Log

QUORUM_STATE_FILE = "quorum-state"
# How often time advances in the state machine; well below every quorum timeout.
TICK_INTERVAL_S = 0.02
# How long the admin API waits for the leader's DescribeQuorum answer (connecting included)
# before it shows the local view: an admin request must not hang on a dead leader.
DESCRIBE_QUORUM_TIMEOUT_S = 0.5
# How long committed entries are applied (each `Ready` hands out a bounded number) before the
# event loop runs again: a whole large commit held the node for a second or more, its Raft
# fetches and heartbeats unanswered. Every yield costs the loop a GIL hand-back from busy
# storage threads, so not one per `Ready`.
COMMIT_SLICE_S = 0.1
# Kafka's `metadata.log.max.record.bytes.between.snapshots`.
DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS = 20 * 1024 * 1024
# The append time of the last entry a snapshot holds: entries are written with timestamp 0
# (`kraft.wire.encode_entries`), so that is the truthful value.
_SNAPSHOT_LAST_TIMESTAMP = 0
_RESPONSES = tuple(rpc.response for rpc in QUORUM_RPCS)
_UNANSWERED = (KafkaConnectionError, RequestTimedOutError, ProtocolError, WireFormatError)

log = structlog.get_logger(__name__)

_ENTRY_OVERHEAD = len(encode_entries((Entry(0, 0, b""),)))


class NotLeaderError(Exception):
    """The node is not the quorum leader; `leader_id` is the leader it knows, if any."""

    def __init__(self, leader_id: int | None, epoch: int) -> None:
        super().__init__(f"not the quorum leader (leader {leader_id}, epoch {epoch})")
        self.leader_id = leader_id
        self.epoch = epoch


class LeadershipLostError(Exception):
    """Leadership was lost before the appended records committed; they may or may not commit
    under the next leader, so the caller must re-read the log to know."""


@dataclass(frozen=True, slots=True)
class PendingAppend:
    """Records appended by the leader in `epoch` at `[base_offset, end_offset)`; `committed`
    resolves to `end_offset` once they commit."""

    epoch: int
    base_offset: int
    end_offset: int
    committed: asyncio.Future[int]


class RaftListener(Protocol):
    """What the controller (and brokers) hear from the quorum."""

    def on_commit(self, entries: Sequence[Entry]) -> None:
        """Entries now below the high watermark, in offset order, each exactly once."""

    def on_leader_change(self, leader_id: int | None, leader_epoch: int) -> None:
        """A new epoch began or a leader became known."""

    def on_snapshot_loaded(self, snapshot_id: SnapshotId, records: Sequence[bytes]) -> None:
        """Replace the metadata image with this snapshot's: at startup (the latest local
        snapshot) and when one fetched from the leader replaces the log. Commits that follow
        apply on top of it."""


class SnapshotSource(Protocol):
    """Where snapshot content comes from: the controller's metadata image."""

    def snapshot_records(self, end_offset: int) -> list[bytes] | None:
        """The records that rebuild the image holding every entry below `end_offset`; None
        when no image holds exactly those (the entries end inside a change the image takes
        whole once it is committed): a later commit is snapshotted instead."""


class EmptyImage:
    """The snapshot source until the controller exists: the metadata image is empty.

    No metadata state machine runs on top of the quorum yet, so the log carries no state (only
    LeaderChange entries and whatever the driver's user appends) and a snapshot of it honestly
    holds no records: just the SnapshotHeader and SnapshotFooter.
    """

    def snapshot_records(self, end_offset: int) -> list[bytes]:
        """No records: there is no state below any offset."""
        return []


class RaftDriver:
    """Runs one quorum member: the voter (or observer) `node_id` of `voters`."""

    def __init__(
        self,
        *,
        node_id: int,
        cluster_id: str,
        voters: Mapping[int, tuple[str, int]],
        config: RaftConfig,
        metadata_log: Log,
        listen: tuple[str, int] | None,
        snapshot_source: SnapshotSource | None = None,
        api_registry: ApiRegistry | None = None,
        max_bytes_between_snapshots: int = DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS,
        max_request_size: int = DEFAULT_MAX_REQUEST_SIZE,
        connections_max_idle_ms: int = DEFAULT_CONNECTIONS_MAX_IDLE_MS,
        listener: ListenerSecurity | None = None,
        client_ssl_context: ssl.SSLContext | None = None,
        client_sasl: SaslClientCredentials | None = None,
        authorize: Callable[[RequestContext], bool] | None = None,
    ) -> None:
        """`max_request_size` and `connections_max_idle_ms` apply to the controller listener,
        which also serves the APIs of `api_registry` (the controller's) besides the quorum's
        own. `client_ssl_context` and `client_sasl`: the security of this node's connections
        to the other voters. `authorize`, when given, says whether the sender of a quorum
        request (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, DescribeQuorum)
        may send it; one it refuses is answered CLUSTER_AUTHORIZATION_FAILED and never reaches
        the state machine."""
        self._max_request_size = max_request_size
        self._connections_max_idle_ms = connections_max_idle_ms
        # The controller listener's name and TLS, and TLS on the connections to the voters.
        self._listener_security = listener or ListenerSecurity()
        self._client_ssl_context = client_ssl_context
        self._client_sasl = client_sasl
        self._authorize = authorize
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.voters = dict(voters)
        self.config = config
        self._metadata_log = MetadataLog(metadata_log)
        self._snapshots = self._metadata_log.snapshots
        self._listen = listen
        self._state_path = Path(metadata_log.directory) / QUORUM_STATE_FILE
        self._snapshot_source: SnapshotSource = snapshot_source or EmptyImage()
        self._api_registry = api_registry if api_registry is not None else ApiRegistry()
        self._max_bytes_between_snapshots = max_bytes_between_snapshots
        # Committed record-batch bytes since the latest snapshot (or since startup).
        self._bytes_since_snapshot = 0
        # Set when the log start moved: older snapshot files go once the Ready's messages
        # (which may still read one) are sent.
        self._prune_snapshots = False
        self._node: RaftNode | None = None
        self._server: KafkaServer | None = None
        self._connections: dict[int, NodeConnection] = {}
        # DescribeQuorum goes on connections of its own: on the quorum ones it would queue
        # behind a Fetch the leader parks for up to `fetch_max_wait_ms`.
        self._describe_connections: dict[int, NodeConnection] = {}
        self._waiters: dict[tuple[int, type], collections.deque[asyncio.Future[Message]]] = {}
        # By end offset: the epoch each was appended in, and its commit.
        self._pending_appends: dict[int, tuple[int, asyncio.Future[int]]] = {}
        self._listeners: list[RaftListener] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._ticker: asyncio.Task[None] | None = None
        self._random = random.Random()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._role = Role.UNATTACHED
        self._leader_id: int | None = None
        self._failed = False
        # The fsync of the metadata log running in a thread, if any (see the module docstring).
        self._flushing: asyncio.Task[None] | None = None
        # A `_process` call due on the next loop iteration (`_process_soon`).
        self._process_due: asyncio.Handle | None = None
        # Its own thread: in the shared default executor the fsync could queue behind slow
        # work (log cleaning, password hashing) and hold up every vote and commit meanwhile.
        self._fsync_thread = ThreadPoolExecutor(1, thread_name_prefix="metadata-log-fsync")

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Read the quorum state and the log, listen (voters), and start ticking."""
        self._loop = asyncio.get_running_loop()
        snapshot = self._snapshots.open_latest()
        entries = self._metadata_log.entries()
        self._node = RaftNode(
            node_id=self.node_id,
            voters=self.voters,
            config=self.config,
            jitter=self._random.randrange,
            quorum_state=self._read_quorum_state(),
            log=entries,
            now_ms=self._now_ms(),
            snapshot=snapshot,
        )
        if snapshot is not None:
            # The image starts from the snapshot; the log above it commits on top.
            self._notify_snapshot_loaded(
                snapshot.snapshot_id, snapshot.size, "raft_snapshot_opened"
            )
        if self._listen is not None:
            registry = self._api_registry
            for rpc in QUORUM_RPCS:
                registry.register(
                    rpc.api_key, self._on_request, min_version=rpc.version, max_version=rpc.version
                )
            registry.register(
                ApiKey.DESCRIBE_QUORUM,
                self._on_describe_quorum,
                min_version=DESCRIBE_QUORUM_VERSION,
                max_version=DESCRIBE_QUORUM_VERSION,
            )
            host, port = self._listen
            self._server = KafkaServer(
                registry,
                host=host,
                port=port,
                max_request_size=self._max_request_size,
                connections_max_idle_ms=self._connections_max_idle_ms,
                listener=self._listener_security,
            )
            await self._server.start()
        for peer, (host, port) in self.voters.items():
            if peer != self.node_id:
                for connections in (self._connections, self._describe_connections):
                    connections[peer] = NodeConnection(
                        host,
                        port,
                        client_id=f"kraft-{self.node_id}",
                        request_timeout=self.config.request_timeout_ms / 1000,
                        ssl_context=self._client_ssl_context,
                        sasl=self._client_sasl,
                    )
        log.info(
            "raft_started",
            node_id=self.node_id,
            voter=self.node_id in self.voters,
            log_start_offset=self._node.log_start_offset,
            log_end_offset=self._node.log_end_offset,
            epoch=self._node.epoch,
        )
        self._process()
        self._ticker = asyncio.create_task(self._tick_forever())

    async def stop(self, *, resign: bool = True) -> None:
        """Resign leadership if held (telling the voters at once), then stop."""
        node = self._node
        if resign and node is not None and node.role is Role.LEADER:
            node.resign(self._now_ms())
            self._process()
            # The resignation goes out once an fsync in flight completed.
            await self._flushes_done()
            await asyncio.sleep(0.05)
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        if self._process_due is not None:
            self._process_due.cancel()
        await self._flushes_done()
        for task in list(self._tasks):
            task.cancel()
        for connections in (self._connections, self._describe_connections):
            for connection in connections.values():
                await connection.close()
        if self._server is not None:
            await self._server.close(timeout=1.0)
        self._fail_pending(LeadershipLostError("the quorum member is stopping"), None)
        await self._flushes_done()
        self._fsync_thread.shutdown(wait=False)

    @property
    def port(self) -> int | None:
        return self._server.port if self._server is not None else None

    def add_listener(self, listener: RaftListener) -> None:
        self._listeners.append(listener)

    # -- what the controller uses --------------------------------------------------------------

    async def append(self, records: Sequence[bytes]) -> int:
        """Append records as the leader; returns the offset after the last one once committed.

        Raises NotLeaderError at once on a non-leader, LeadershipLostError if leadership ends
        before the records commit.
        """
        return await self.submit(records).committed

    def submit(self, records: Sequence[bytes]) -> PendingAppend:
        """Append records as the leader, without waiting: their offsets are known at once.

        The controller uses this to apply the records to its working image before anything
        else can append. Raises NotLeaderError on a non-leader; `committed` fails with
        LeadershipLostError if leadership ends before the records commit.
        """
        node = self._require_node()
        result = node.append(list(records))
        if not isinstance(result, Appended):
            raise NotLeaderError(result.leader_id, result.epoch)
        assert self._loop is not None
        committed: asyncio.Future[int] = self._loop.create_future()
        self._pending_appends[result.end_offset] = (result.epoch, committed)
        self._process()
        return PendingAppend(result.epoch, result.base_offset, result.end_offset, committed)

    def quorum_view(self) -> QuorumView:
        """Leader, epoch, high watermark and (on the leader) each replica's progress, with
        times in wall-clock epoch ms (-1: unknown; progress is -1 off the leader)."""
        node = self._require_node()
        progress = node.replica_progress() if node.role is Role.LEADER else {}
        now_ms = self._now_ms()
        # The state machine keeps monotonic loop time; DescribeQuorum reports the wall clock.
        now_wall_ms = time.time_ns() // 1_000_000

        def wall(monotonic_ms: int) -> int:
            return -1 if monotonic_ms < 0 else monotonic_ms - now_ms + now_wall_ms

        def view(replica: int) -> ReplicaView:
            if replica not in progress:
                return ReplicaView(replica, -1, -1, -1)
            log_end_offset, caught_up_ms, fetch_ms = progress[replica]
            if replica == self.node_id:
                # As Kafka reports it: the leader is caught up now and never fetches.
                return ReplicaView(replica, log_end_offset, now_wall_ms, -1)
            return ReplicaView(replica, log_end_offset, wall(caught_up_ms), wall(fetch_ms))

        return QuorumView(
            leader_id=node.leader_id,
            leader_epoch=node.epoch,
            high_watermark=node.high_watermark,
            voters=tuple(view(voter) for voter in sorted(self.voters)),
            observers=tuple(
                view(replica) for replica in sorted(progress) if replica not in self.voters
            ),
        )

    async def describe_quorum(self) -> QuorumView:
        """The quorum with the leader's view of replica progress: this node's own on the
        leader, else the leader's answer to DescribeQuorum; the local view (progress -1) when
        no leader is known or it does not answer."""
        local = self.quorum_view()
        leader = local.leader_id
        connection = self._describe_connections.get(leader) if leader is not None else None
        if connection is None:
            return local
        try:
            async with asyncio.timeout(DESCRIBE_QUORUM_TIMEOUT_S):
                answer = await connection.send(describe_quorum_request())
            return quorum_view_from_wire(answer)
        except (*_UNANSWERED, TimeoutError) as error:
            log.debug("raft_describe_quorum_failed", leader_id=leader, error=str(error))
            return local

    @property
    def is_leader(self) -> bool:
        return self._node is not None and self._node.role is Role.LEADER

    @property
    def leader_id(self) -> int | None:
        return self._node.leader_id if self._node is not None else None

    @property
    def role(self) -> str:
        """This node's role in the quorum, in KIP-595's words ("leader", "follower", ...)."""
        return self._require_node().role.value

    @property
    def epoch(self) -> int:
        """The current quorum epoch."""
        return self._require_node().epoch

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended entry will get."""
        return self._require_node().log_end_offset

    # -- the Ready loop ------------------------------------------------------------------------

    def _process(self) -> None:
        """Drain and apply every `Ready`, unless an fsync is in flight (its completion drains
        them). A failure is fatal: the state machine moved on when the `Ready` was taken, so
        whatever of it was not applied (log operations, the high watermark, commits for the
        image) would leave the node and its disk disagreeing for good."""
        if self._flushing is not None:
            return
        try:
            self._apply_ready()
        except Exception as error:
            self._fail(error)
            raise

    def _fail(self, error: Exception) -> None:
        if not self._failed:
            self._failed = True
            report_fatal("raft_driver", error)

    async def _flushes_done(self) -> None:
        """Until no fsync is in flight (one that completes may start the next). Not
        cancelled: the thread runs on regardless, and the node's shutdown flushes and closes
        the log after the driver stopped."""
        while self._flushing is not None and not self._flushing.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(self._flushing)

    def _apply_ready(self) -> None:
        node = self._require_node()
        # A listener told of a commit may append, which applies the next `Ready` (nested)
        # and may start an fsync: nothing more is applied until it completes.
        slice_ends = time.monotonic() + COMMIT_SLICE_S
        while self._flushing is None:
            ready = node.take_ready()
            if _is_empty(ready):
                return
            if ready.quorum_state is not None:
                write_atomically(self._state_path, ready.quorum_state.encode())
            self._apply_log_ops(ready)
            if ready.fsync_up_to is not None:
                self._flushing = asyncio.create_task(self._flush_then_finish(ready))
                return
            self._finish_ready(ready)
            if node.has_committed_to_hand_out and time.monotonic() >= slice_ends:
                # The rest of a large commit is applied on later loop iterations, after the
                # requests and responses that arrived meanwhile.
                self._process_soon()
                return

    def _process_soon(self) -> None:
        if self._process_due is None:
            self._process_due = asyncio.get_running_loop().call_soon(self._process_when_due)

    def _process_when_due(self) -> None:
        self._process_due = None
        self._process()

    async def _flush_then_finish(self, ready: Ready) -> None:
        """fsync the metadata log in a thread, tell the node, finish `ready` (messages, high
        watermark, commits, role changes) and drain the `Ready`s gathered meanwhile."""
        metadata_log = self._metadata_log.log
        flushed = metadata_log.log_end_offset
        try:
            await asyncio.get_running_loop().run_in_executor(
                self._fsync_thread, metadata_log.flush, flushed
            )
            self._flushing = None
            self._require_node().fsync_completed(flushed, self._now_ms())
            self._finish_ready(ready)
            self._process()
        except Exception as error:
            self._fail(error)
            raise

    def _finish_ready(self, ready: Ready) -> None:
        """The steps of `ready` after its log operations and their fsync."""
        for outgoing in ready.messages:
            self._dispatch(outgoing.to, outgoing.message)
        if self._prune_snapshots:
            self._delete_older_snapshots()
        if ready.high_watermark is not None:
            self._metadata_log.log.update_high_watermark(ready.high_watermark)
        if ready.committed:
            self._on_committed(ready.committed)
            self._maybe_snapshot(ready.committed)
        for change in ready.role_changes:
            self._on_role_change(change.role, change.epoch, change.leader_id)

    def _apply_log_ops(self, ready: Ready) -> None:
        for operation in ready.log_ops:
            self._metadata_log.apply(operation)
            if isinstance(operation, Truncate):
                self._fail_appends_from(operation.offset)
            elif isinstance(operation, DeleteBefore):
                self._prune_snapshots = True
            elif isinstance(operation, LoadSnapshot):
                self._snapshot_loaded(operation.snapshot_id, operation.size)
        node = self._require_node()
        self._metadata_log.check_holds(node.log_start_offset, node.log_end_offset)

    def _snapshot_loaded(self, snapshot_id: SnapshotId, size: int) -> None:
        """A fetched snapshot replaced the log: appends above its end are gone, and the
        listeners replace their image with it."""
        self._fail_appends_from(snapshot_id.end_offset)
        self._bytes_since_snapshot = 0
        self._prune_snapshots = True
        self._notify_snapshot_loaded(snapshot_id, size, "raft_snapshot_loaded")

    def _notify_snapshot_loaded(self, snapshot_id: SnapshotId, size: int, event: str) -> None:
        records = decode_snapshot(self._snapshots.read_all(snapshot_id))
        log.info(
            event,
            end_offset=snapshot_id.end_offset,
            epoch=snapshot_id.epoch,
            size=size,
            records=len(records),
        )
        for listener in self._listeners:
            listener.on_snapshot_loaded(snapshot_id, records)

    def _maybe_snapshot(self, committed: Sequence[Entry]) -> None:
        """Snapshot the image at the high watermark once enough was committed since the last
        snapshot (Kafka's `metadata.log.max.record.bytes.between.snapshots`)."""
        # Each entry is stored as one record batch: its bytes in the log are its data plus a
        # batch's overhead (give or take a varint byte, which a threshold can ignore).
        self._bytes_since_snapshot += sum(_ENTRY_OVERHEAD + len(entry.data) for entry in committed)
        if self._bytes_since_snapshot < self._max_bytes_between_snapshots:
            return
        node = self._require_node()
        last = committed[-1]
        snapshot_id = SnapshotId(last.offset + 1, last.epoch)
        records = self._snapshot_source.snapshot_records(snapshot_id.end_offset)
        if records is None:
            return
        data = encode_snapshot(snapshot_id, records, _SNAPSHOT_LAST_TIMESTAMP)
        size = self._snapshots.write(snapshot_id, data)
        if node.snapshot_created(snapshot_id.end_offset, snapshot_id.epoch, size):
            self._bytes_since_snapshot = 0
            log.info(
                "raft_snapshot_created",
                end_offset=snapshot_id.end_offset,
                epoch=snapshot_id.epoch,
                size=size,
                records=len(records),
            )
        elif node.snapshot is None or node.snapshot.snapshot_id != snapshot_id:
            # A newer snapshot (loaded from the leader) already covers these entries.
            self._snapshots.delete(snapshot_id)

    def _delete_older_snapshots(self) -> None:
        self._prune_snapshots = False
        current = self._require_node().snapshot
        if current is None:
            return
        for removed in self._snapshots.delete_older_than(current.snapshot_id):
            log.info("raft_snapshot_deleted", end_offset=removed.end_offset, epoch=removed.epoch)

    def _on_committed(self, entries: Sequence[Entry]) -> None:
        high = entries[-1].offset + 1
        for end_offset in sorted(self._pending_appends):
            if end_offset > high:
                break
            _, future = self._pending_appends.pop(end_offset)
            if not future.done():
                future.set_result(end_offset)
        for listener in self._listeners:
            listener.on_commit(entries)

    def _on_role_change(self, role: Role, epoch: int, leader_id: int | None) -> None:
        if role is not Role.LEADER:
            # A candidate of `epoch` has not led it yet; any other role in `epoch` ends its
            # leadership (resignation) or a former epoch's.
            lost_up_to = epoch - 1 if role is Role.CANDIDATE else epoch
            self._fail_pending(
                LeadershipLostError(f"now {role.value} in epoch {epoch}"), lost_up_to
            )
        changed_leader = (role, leader_id) != (self._role, self._leader_id)
        self._role, self._leader_id = role, leader_id
        log.info("raft_role_changed", role=role.value, epoch=epoch, leader_id=leader_id)
        if changed_leader:
            for listener in self._listeners:
                listener.on_leader_change(leader_id, epoch)

    def _fail_pending(self, error: Exception, up_to_epoch: int | None) -> None:
        """Fail the appends of epochs up to `up_to_epoch` (None: all). A role change is told
        after its `Ready`'s fsync, by which time the node may lead a later epoch and have
        taken appends in it: those stand."""
        for end_offset, (epoch, future) in list(self._pending_appends.items()):
            if up_to_epoch is None or epoch <= up_to_epoch:
                del self._pending_appends[end_offset]
                if not future.done():
                    future.set_exception(error)

    def _fail_appends_from(self, offset: int) -> None:
        for end_offset in [end for end in self._pending_appends if end > offset]:
            _, future = self._pending_appends.pop(end_offset)
            if not future.done():
                future.set_exception(LeadershipLostError(f"truncated at offset {offset}"))

    # -- messages ------------------------------------------------------------------------------

    def _dispatch(self, to: int, message: Message) -> None:
        if isinstance(message, FetchSnapshotResponse) and message.unread_bytes > 0:
            message = self._with_snapshot_bytes(message)
        if isinstance(message, _RESPONSES):
            waiters = self._waiters.get((to, type(message)))
            while waiters:
                waiter = waiters.popleft()
                if not waiter.done():
                    waiter.set_result(message)
                    return
            return
        task = asyncio.create_task(self._send_request(to, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _with_snapshot_bytes(self, response: FetchSnapshotResponse) -> FetchSnapshotResponse:
        """Fill in the chunk the state machine validated (`unread_bytes` at `position`)."""
        data = self._snapshots.read(response.snapshot_id, response.position, response.unread_bytes)
        if data is None or len(data) != response.unread_bytes:
            # Deleted (or replaced) since the state machine looked: the fetcher starts over.
            return replace(response, error=QuorumError.SNAPSHOT_NOT_FOUND, unread_bytes=0)
        return replace(response, data=data, unread_bytes=0)

    async def _send_request(self, to: int, message: Message) -> None:
        connection = self._connections.get(to)
        if connection is None:
            return
        try:
            response = await connection.send(request_to_wire(message, self.cluster_id, to))
            answer = response_from_wire(_as_response(response), message)
        except (
            KafkaConnectionError,
            RequestTimedOutError,
            ProtocolError,
            WireFormatError,
        ) as error:
            log.debug(
                "raft_request_failed", to=to, request=type(message).__name__, error=str(error)
            )
            return
        node = self._require_node()
        node.receive(answer, to, self._now_ms())
        self._process()

    def _refusal(self, context: RequestContext) -> Any | None:
        """CLUSTER_AUTHORIZATION_FAILED for a sender `authorize` refuses, else None."""
        if self._authorize is None or self._authorize(context):
            return None
        header = context.header
        log.info(
            "raft_request_unauthorized",
            peer=context.peer,
            principal=str(context.principal),
            api_key=header.api_key,
        )
        return error_response(
            header.api_key, header.api_version, ErrorCode.cluster_authorization_failed
        )

    async def _on_request(self, context: RequestContext, request: Any) -> WireResponse | Any:
        refusal = self._refusal(context)
        if refusal is not None:
            return refusal
        wire_request: WireRequest = request
        message, sender = request_from_wire(wire_request)
        assert self._loop is not None
        waiter: asyncio.Future[Message] = self._loop.create_future()
        key = (sender, RPC_OF_REQUEST[type(message)].response)
        self._waiters.setdefault(key, collections.deque()).append(waiter)
        node = self._require_node()
        node.receive(message, sender, self._now_ms())
        self._process()
        try:
            async with asyncio.timeout(self.config.request_timeout_ms / 1000):
                answer = await waiter
        except TimeoutError:
            header = context.header
            return error_response(header.api_key, header.api_version, ErrorCode.request_timed_out)
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None and waiter in waiters:
                waiters.remove(waiter)
        return response_to_wire(answer)

    async def _on_describe_quorum(self, context: RequestContext, request: Any) -> Any:
        """DescribeQuorum: the leader's view; other nodes answer NOT_LEADER_OR_FOLLOWER."""
        refusal = self._refusal(context)
        if refusal is not None:
            return refusal
        view = self.quorum_view()
        if self.is_leader:
            return describe_quorum_response(view)
        return describe_quorum_response(view, QuorumError.NOT_LEADER_OR_FOLLOWER)

    # -- time and state ------------------------------------------------------------------------

    async def _tick_forever(self) -> None:
        node = self._require_node()
        while True:
            await asyncio.sleep(TICK_INTERVAL_S)
            try:
                node.tick(self._now_ms())
            except Exception as error:
                self._fail(error)
                raise
            self._process()

    def _now_ms(self) -> int:
        loop = self._loop or asyncio.get_running_loop()
        return int(loop.time() * 1000)

    def _read_quorum_state(self) -> QuorumState:
        try:
            return QuorumState.decode(self._state_path.read_bytes())
        except FileNotFoundError:
            return QuorumState()
        except QuorumStateError as error:
            # Voting again in an epoch could elect two leaders: never guess a lost vote.
            raise QuorumStateError(f"{self._state_path}: {error}") from error

    def _require_node(self) -> RaftNode:
        if self._node is None:
            raise RuntimeError("the raft driver is not started")
        return self._node


def _is_empty(ready: Ready) -> bool:
    return not (
        ready.quorum_state is not None
        or ready.log_ops
        or ready.fsync_up_to is not None
        or ready.messages
        or ready.committed
        or ready.role_changes
        or ready.high_watermark is not None
    )


def _as_response(response: object) -> WireResponse:
    if response is None:
        raise WireFormatError("no response")
    wire: WireResponse = response  # type: ignore[assignment]
    return wire
