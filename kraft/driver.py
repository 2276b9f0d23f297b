"""The asyncio driver around `RaftNode`: storage, fsync, sockets and time.

It stays thin. Every input (a request from a peer, a response to one of ours, a tick, an append
from the controller) goes into the pure state machine; every `Ready` is applied in the order
its contract demands: the quorum state is written durably, then log operations go to the
`__cluster_metadata-0` storage log, then the log is fsynced (and the node told so), and only
then are messages sent, so nothing is ever acknowledged or voted that a crash could undo.

Peers talk through Kafka's own quorum RPCs (`kraft.wire`) on the controller listener. A request
received from a peer is answered with the state machine's response to that peer, which may come
later: the leader parks a Fetch until it has news (long polling).

For the controller above, the driver offers `append` (resolves once the records commit, fails if
leadership is lost first), listeners called with committed entries and leadership changes, and
a quorum view for DescribeQuorum and the admin API.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import structlog
from kio.schema.errors import ErrorCode

from kraft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Entry,
    FetchRequest,
    FetchResponse,
    Message,
    VoteRequest,
    VoteResponse,
)
from kraft.quorum_state import QuorumState, QuorumStateError
from kraft.raft import Append, Appended, RaftConfig, RaftNode, Ready, Role, Truncate
from kraft.wire import (
    BEGIN_QUORUM_EPOCH_KEY,
    BEGIN_QUORUM_EPOCH_VERSION,
    END_QUORUM_EPOCH_KEY,
    END_QUORUM_EPOCH_VERSION,
    FETCH_KEY,
    FETCH_VERSION,
    VOTE_KEY,
    VOTE_VERSION,
    WireFormatError,
    WireRequest,
    WireResponse,
    decode_entries,
    encode_entries,
    request_from_wire,
    request_to_wire,
    response_from_wire,
    response_to_wire,
)
from net.api_registry import ApiRegistry, RequestContext
from net.client import KafkaConnectionError, NodeConnection, RequestTimedOutError
from net.protocol import ProtocolError, error_response
from net.server import KafkaServer
from storage.atomic_file import write_atomically
from storage.errors import StorageError
from storage.log import Log

QUORUM_STATE_FILE = "quorum-state"
# How often time advances in the state machine; well below every quorum timeout.
TICK_INTERVAL_S = 0.02
# A request's answer from the state machine never takes longer than a parked fetch.
_RESPONSE_OF = {
    VoteRequest: VoteResponse,
    BeginQuorumEpochRequest: BeginQuorumEpochResponse,
    EndQuorumEpochRequest: EndQuorumEpochResponse,
    FetchRequest: FetchResponse,
}
_RESPONSES = tuple(_RESPONSE_OF.values())
_UNANSWERED = (KafkaConnectionError, RequestTimedOutError, ProtocolError, WireFormatError)
_SERVED = (
    (VOTE_KEY, VOTE_VERSION),
    (BEGIN_QUORUM_EPOCH_KEY, BEGIN_QUORUM_EPOCH_VERSION),
    (END_QUORUM_EPOCH_KEY, END_QUORUM_EPOCH_VERSION),
    (FETCH_KEY, FETCH_VERSION),
)

log = structlog.get_logger(__name__)


class NotLeaderError(Exception):
    """The node is not the quorum leader; `leader_id` is the leader it knows, if any."""

    def __init__(self, leader_id: int | None, epoch: int) -> None:
        super().__init__(f"not the quorum leader (leader {leader_id}, epoch {epoch})")
        self.leader_id = leader_id
        self.epoch = epoch


class LeadershipLostError(Exception):
    """Leadership was lost before the appended records committed; they may or may not commit
    under the next leader, so the caller must re-read the log to know."""


class RaftListener(Protocol):
    """What the controller (and brokers) hear from the quorum."""

    def on_commit(self, entries: Sequence[Entry]) -> None:
        """Entries now below the high watermark, in offset order, each exactly once."""

    def on_leader_change(self, leader_id: int | None, leader_epoch: int) -> None:
        """A new epoch began or a leader became known."""


@dataclass(frozen=True, slots=True)
class ReplicaView:
    node_id: int
    log_end_offset: int
    last_caught_up_ms: int


@dataclass(frozen=True, slots=True)
class QuorumView:
    """The quorum as this node sees it (replica progress is known on the leader only)."""

    leader_id: int | None
    leader_epoch: int
    high_watermark: int
    role: str
    voters: tuple[ReplicaView, ...]
    observers: tuple[ReplicaView, ...]


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
    ) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.voters = dict(voters)
        self.config = config
        self._log = metadata_log
        self._listen = listen
        self._state_path = Path(metadata_log.directory) / QUORUM_STATE_FILE
        self._node: RaftNode | None = None
        self._server: KafkaServer | None = None
        self._connections: dict[int, NodeConnection] = {}
        self._waiters: dict[tuple[int, type], collections.deque[asyncio.Future[Message]]] = {}
        self._pending_appends: dict[int, asyncio.Future[int]] = {}
        self._listeners: list[RaftListener] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._ticker: asyncio.Task[None] | None = None
        self._random = random.Random()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._role = Role.UNATTACHED
        self._leader_id: int | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Read the quorum state and the log, listen (voters), and start ticking."""
        self._loop = asyncio.get_running_loop()
        entries: list[Entry] = []
        for batch, _ in self._log.batches():
            entries.extend(decode_entries(batch.read()))
        self._node = RaftNode(
            node_id=self.node_id,
            voters=self.voters,
            config=self.config,
            jitter=self._random.randrange,
            quorum_state=self._read_quorum_state(),
            log=entries,
            now_ms=self._now_ms(),
        )
        if self._listen is not None:
            registry = ApiRegistry()
            for api_key, version in _SERVED:
                registry.register(
                    api_key, self._on_request, min_version=version, max_version=version
                )
            host, port = self._listen
            self._server = KafkaServer(registry, host=host, port=port)
            await self._server.start()
        for peer, (host, port) in self.voters.items():
            if peer != self.node_id:
                self._connections[peer] = NodeConnection(
                    host,
                    port,
                    client_id=f"kraft-{self.node_id}",
                    request_timeout=self.config.request_timeout_ms / 1000,
                )
        log.info(
            "raft_started",
            node_id=self.node_id,
            voter=self.node_id in self.voters,
            log_end_offset=len(entries),
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
            await asyncio.sleep(0.05)
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        for task in list(self._tasks):
            task.cancel()
        for connection in self._connections.values():
            await connection.close()
        if self._server is not None:
            await self._server.close(timeout=1.0)
        self._fail_pending(LeadershipLostError("the quorum member is stopping"))

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
        node = self._require_node()
        result = node.append(list(records))
        if not isinstance(result, Appended):
            raise NotLeaderError(result.leader_id, result.epoch)
        assert self._loop is not None
        committed: asyncio.Future[int] = self._loop.create_future()
        self._pending_appends[result.end_offset] = committed
        self._process()
        return await committed

    def quorum_view(self) -> QuorumView:
        """Leader, epoch, high watermark and (on the leader) each replica's progress."""
        node = self._require_node()
        progress = node.replica_progress() if node.role is Role.LEADER else {}
        voters = tuple(
            ReplicaView(voter, *progress.get(voter, (-1, -1))) for voter in sorted(self.voters)
        )
        observers = tuple(
            ReplicaView(replica, *progress[replica])
            for replica in sorted(progress)
            if replica not in self.voters
        )
        return QuorumView(
            leader_id=node.leader_id,
            leader_epoch=node.epoch,
            high_watermark=node.high_watermark,
            role=node.role.value,
            voters=voters,
            observers=observers,
        )

    @property
    def is_leader(self) -> bool:
        return self._node is not None and self._node.role is Role.LEADER

    @property
    def leader_id(self) -> int | None:
        return self._node.leader_id if self._node is not None else None

    # -- the Ready loop ------------------------------------------------------------------------

    def _process(self) -> None:
        node = self._require_node()
        while True:
            ready = node.take_ready()
            if _is_empty(ready):
                return
            if ready.quorum_state is not None:
                write_atomically(self._state_path, ready.quorum_state.encode())
            self._apply_log_ops(ready)
            if ready.fsync_up_to is not None:
                self._log.flush()
                node.fsync_completed(self._log.log_end_offset, self._now_ms())
            for outgoing in ready.messages:
                self._dispatch(outgoing.to, outgoing.message)
            if ready.high_watermark is not None:
                self._log.update_high_watermark(ready.high_watermark)
            if ready.committed:
                self._on_committed(ready.committed)
            for change in ready.role_changes:
                self._on_role_change(change.role, change.epoch, change.leader_id)

    def _apply_log_ops(self, ready: Ready) -> None:
        for operation in ready.log_ops:
            if isinstance(operation, Truncate):
                self._log.truncate_to(operation.offset)
                self._fail_appends_from(operation.offset)
            elif isinstance(operation, Append) and operation.entries:
                self._log.append_as_follower(encode_entries(operation.entries))

    def _on_committed(self, entries: Sequence[Entry]) -> None:
        high = entries[-1].offset + 1
        for end_offset in sorted(self._pending_appends):
            if end_offset > high:
                break
            future = self._pending_appends.pop(end_offset)
            if not future.done():
                future.set_result(end_offset)
        for listener in self._listeners:
            listener.on_commit(entries)

    def _on_role_change(self, role: Role, epoch: int, leader_id: int | None) -> None:
        if role is not Role.LEADER:
            self._fail_pending(LeadershipLostError(f"now {role.value} in epoch {epoch}"))
        changed_leader = (role, leader_id) != (self._role, self._leader_id)
        self._role, self._leader_id = role, leader_id
        log.info("raft_role_changed", role=role.value, epoch=epoch, leader_id=leader_id)
        if changed_leader:
            for listener in self._listeners:
                listener.on_leader_change(leader_id, epoch)

    def _fail_pending(self, error: Exception) -> None:
        for future in self._pending_appends.values():
            if not future.done():
                future.set_exception(error)
        self._pending_appends.clear()

    def _fail_appends_from(self, offset: int) -> None:
        for end_offset in [end for end in self._pending_appends if end > offset]:
            future = self._pending_appends.pop(end_offset)
            if not future.done():
                future.set_exception(LeadershipLostError(f"truncated at offset {offset}"))

    # -- messages ------------------------------------------------------------------------------

    def _dispatch(self, to: int, message: Message) -> None:
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

    async def _on_request(self, context: RequestContext, request: Any) -> WireResponse | Any:
        wire_request: WireRequest = request
        message, sender = request_from_wire(wire_request)
        assert self._loop is not None
        waiter: asyncio.Future[Message] = self._loop.create_future()
        key = (sender, _RESPONSE_OF[type(message)])
        self._waiters.setdefault(key, collections.deque()).append(waiter)
        node = self._require_node()
        node.receive(message, sender, self._now_ms())
        try:
            self._process()
        except StorageError as error:
            log.error("raft_storage_failed", error=str(error))
            raise
        try:
            answer = await asyncio.wait_for(waiter, self.config.request_timeout_ms / 1000)
        except TimeoutError:
            header = context.header
            return error_response(header.api_key, header.api_version, ErrorCode.request_timed_out)
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None and waiter in waiters:
                waiters.remove(waiter)
        return response_to_wire(answer)

    # -- time and state ------------------------------------------------------------------------

    async def _tick_forever(self) -> None:
        node = self._require_node()
        while True:
            await asyncio.sleep(TICK_INTERVAL_S)
            node.tick(self._now_ms())
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
