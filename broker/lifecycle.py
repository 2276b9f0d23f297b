"""The broker's side of its lifecycle with the controller: register, heartbeat, shut down.

As Kafka's BrokerLifecycleManager (KIP-631): the broker registers with a fresh incarnation id,
its advertised listeners, its rack and the broker epoch its clean-shutdown marker holds (or -1),
retrying until the active controller accepts; then it heartbeats every
`broker.heartbeat.interval.ms`, reporting the offset of the last metadata entry it applied, and
the controller unfences it once it has caught up to its own registration. Until then (the
controller answers "not caught up") it heartbeats every CATCH_UP_HEARTBEAT_S instead, as
Kafka's broker does while STARTING: a restarted broker catches up within milliseconds and would
otherwise stay fenced, not ready, for a whole interval more.

Controlled shutdown goes through the same heartbeats: `shut_down` sends them with
`want_shut_down` at once and then every CONTROLLED_SHUTDOWN_HEARTBEAT_S, until the controller,
having moved every leadership away and taken the broker out of every ISR, answers
`should_shut_down`. The controller answers so only once every other active broker reported
(by heartbeat) the moves applied, so a broker whose metadata shows a peer in controlled
shutdown heartbeats at once (`heartbeat_soon`, called by the node on that record) and every
CONTROLLED_SHUTDOWN_HEARTBEAT_S while it lasts. At the interval, both waits took up to two
heartbeat intervals (4 s by default) for a node leading thousands of partitions, whose moves
rarely commit before the controller answers the first heartbeat. When no
controller has answered for a whole broker session, waiting longer gains nothing: a controller
that cannot hear the broker fences it after that long and moves its leaderships itself (and
with none at all, nothing can move), so the wait ends there.

A heartbeat answered with STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED means the controller
no longer knows this registration (a newer incarnation replaced it, or the log was lost): the
broker registers again with the same incarnation. Except when an operator removed the broker
(UnregisterBroker): the node tells this manager (`unregistered`) when it replays that record,
and the broker neither registers again nor waits for the controller's agreement to shut down.
After BROKER_ID_NOT_REGISTERED the broker waits a heartbeat interval before registering again,
so that the record, committed before the controller answered so, reaches it first.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import structlog
from kio.schema.errors import ErrorCode

from controller.client import (
    ControllerClient,
    NoControllerError,
    broker_heartbeat_request,
    broker_registration_request,
)
from net import messages
from net.tasks import start_essential

log = structlog.get_logger(__name__)

# How long to wait before registering again after a refusal (Kafka retries with a backoff).
REGISTRATION_RETRY_S = 0.5
# The heartbeat interval of a registered broker not caught up yet (Kafka's STARTING: 10 ms).
CATCH_UP_HEARTBEAT_S = 0.01
# The heartbeat interval while this broker or a peer waits for a controlled shutdown (Kafka
# sends the second heartbeat of a controlled shutdown after 50 ms).
CONTROLLED_SHUTDOWN_HEARTBEAT_S = 0.05


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    """What the broker registers with."""

    broker_id: int
    cluster_id: str
    listeners: Sequence[tuple[str, str, int]]
    rack: str | None
    previous_broker_epoch: int
    # This process's incarnation: a new one each time the node starts.
    incarnation_id: uuid.UUID = field(default_factory=uuid.uuid4)
    # Kafka's id of each listener's security protocol, by listener name (0: PLAINTEXT).
    security_protocols: Mapping[str, int] = field(default_factory=dict)


class BrokerLifecycleManager:
    """Registers this broker and keeps its session alive; `applied_offset` gives the offset
    of the last metadata entry the broker applied (-1 for none)."""

    def __init__(
        self,
        client: ControllerClient,
        identity: BrokerIdentity,
        applied_offset: Callable[[], int],
        *,
        heartbeat_interval_ms: int,
        session_timeout_ms: int,
        on_registered: Callable[[int], None] | None = None,
        peer_in_controlled_shutdown: Callable[[], bool] = lambda: False,
    ) -> None:
        """`on_registered` is called with the broker epoch of each registration;
        `peer_in_controlled_shutdown` says whether this broker's metadata shows another active
        broker in controlled shutdown."""
        self._on_registered = on_registered
        self._peer_in_controlled_shutdown = peer_in_controlled_shutdown
        self._client = client
        self._identity = identity
        self._applied_offset = applied_offset
        self._interval_s = heartbeat_interval_ms / 1000
        self._session_timeout_s = session_timeout_ms / 1000
        # Loop time of the last heartbeat a controller answered.
        self._last_answer_at = asyncio.get_running_loop().time()
        self.incarnation_id = identity.incarnation_id
        self.broker_epoch = -1
        self.fenced = True
        self._task: asyncio.Task[None] | None = None
        self._want_shut_down = False
        self._unregistered = False
        self._may_shut_down = asyncio.Event()
        self._heartbeat_now = asyncio.Event()
        # Until the next heartbeat: the interval, or less while catching up.
        self._next_heartbeat_s = self._interval_s

    def start(self) -> None:
        self._task = start_essential(self._run(), "broker-lifecycle")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def unregistered(self) -> None:
        """The controller removed this broker's registration (an UnregisterBrokerRecord of its
        epoch): it must not register again."""
        self._unregistered = True
        self.fenced = True
        self._heartbeat_now.set()

    def heartbeat_soon(self) -> None:
        """Heartbeat now: a peer entered controlled shutdown, and the controller lets it stop
        only once this broker reported the leaderships it moved applied."""
        self._heartbeat_now.set()

    async def shut_down(self, timeout_s: float, give_up: asyncio.Event) -> str | None:
        """Ask the controller for a controlled shutdown and wait until it agrees: None then,
        else why the wait ended ("timeout" after `timeout_s`, "second signal" when `give_up` is
        set, "no controller" after a broker session without an answer). A broker that never
        registered, is fenced or was unregistered leads nothing and needs no agreement."""
        if self.broker_epoch < 0 or self.fenced or self._unregistered:
            return None
        self._want_shut_down = True
        self._heartbeat_now.set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        agreed = asyncio.create_task(self._may_shut_down.wait())
        abandoned = asyncio.create_task(give_up.wait())
        try:
            while not agreed.done():
                if abandoned.done():
                    return "second signal"
                now = loop.time()
                if now >= deadline:
                    return "timeout"
                if now - self._last_answer_at >= self._session_timeout_s:
                    return "no controller"
                await asyncio.wait(
                    {agreed, abandoned},
                    timeout=min(deadline - now, self._interval_s),
                    return_when="FIRST_COMPLETED",
                )
        finally:
            agreed.cancel()
            abandoned.cancel()
        return None

    async def _run(self) -> None:
        while not self._unregistered:
            await self._register()
            while await self._heartbeat_or_retry():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._next_heartbeat_s):
                        await self._heartbeat_now.wait()
                self._heartbeat_now.clear()
        log.info("broker_lifecycle_ended", broker_epoch=self.broker_epoch)

    async def _heartbeat_or_retry(self) -> bool:
        # The session must outlive any one failed exchange: a lost heartbeat task would get
        # the broker fenced while it runs.
        try:
            return await self._heartbeat()
        except Exception:
            log.exception("broker_heartbeat_failed", broker_epoch=self.broker_epoch)
            return True

    async def _register(self) -> None:
        identity = self._identity
        while True:
            try:
                response: messages.BrokerRegistrationResponse = await self._client.send(
                    broker_registration_request(
                        identity.broker_id,
                        identity.cluster_id,
                        self.incarnation_id,
                        identity.listeners,
                        rack=identity.rack,
                        previous_broker_epoch=identity.previous_broker_epoch,
                        security_protocols=identity.security_protocols,
                    )
                )
            except NoControllerError as error:
                log.warning("broker_registration_failed", error=str(error))
                continue
            if response.error_code == ErrorCode.none:
                self.broker_epoch = response.broker_epoch
                log.info(
                    "broker_registered",
                    broker_id=identity.broker_id,
                    broker_epoch=self.broker_epoch,
                    incarnation_id=str(self.incarnation_id),
                    previous_broker_epoch=identity.previous_broker_epoch,
                )
                if self._on_registered is not None:
                    self._on_registered(self.broker_epoch)
                return
            log.warning(
                "broker_registration_refused",
                broker_id=identity.broker_id,
                error=ErrorCode(response.error_code).name,
            )
            await asyncio.sleep(REGISTRATION_RETRY_S)

    async def _heartbeat(self) -> bool:
        """One heartbeat; False when the broker must register again."""
        self._next_heartbeat_s = self._interval_s
        try:
            response: messages.BrokerHeartbeatResponse = await self._client.send(
                broker_heartbeat_request(
                    self._identity.broker_id,
                    self.broker_epoch,
                    self._applied_offset(),
                    want_shut_down=self._want_shut_down,
                ),
                deadline_s=self._interval_s * 2,
            )
        except NoControllerError as unanswered:
            log.warning(
                "broker_heartbeat_unanswered", broker_epoch=self.broker_epoch, error=str(unanswered)
            )
            return True
        self._last_answer_at = asyncio.get_running_loop().time()
        error = ErrorCode(response.error_code)
        if error in (ErrorCode.stale_broker_epoch, ErrorCode.broker_id_not_registered):
            log.warning(
                "broker_registration_lost", broker_epoch=self.broker_epoch, error=error.name
            )
            if error is ErrorCode.broker_id_not_registered:
                # Perhaps unregistered: give the record time to be replayed here first.
                await asyncio.sleep(self._interval_s)
            return False
        if error is not ErrorCode.none:
            return True
        if response.is_fenced and not response.is_caught_up and not self._want_shut_down:
            self._next_heartbeat_s = CATCH_UP_HEARTBEAT_S
        elif (self._want_shut_down and not response.should_shut_down) or (
            not response.is_fenced and self._peer_in_controlled_shutdown()
        ):
            self._next_heartbeat_s = CONTROLLED_SHUTDOWN_HEARTBEAT_S
        if response.is_fenced != self.fenced:
            self.fenced = response.is_fenced
            log.info(
                "broker_fenced" if self.fenced else "broker_unfenced",
                broker_epoch=self.broker_epoch,
                metadata_offset=self._applied_offset(),
            )
        if self._want_shut_down and response.should_shut_down and not self._may_shut_down.is_set():
            log.info("controlled_shutdown_granted", broker_epoch=self.broker_epoch)
            self._may_shut_down.set()
        return True
