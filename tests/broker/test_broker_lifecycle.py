"""The broker's lifecycle manager against a controller that answers as ours does: a broker
registers, and the controller unfences it at the first heartbeat reporting its own registration
applied."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from broker.lifecycle import BrokerIdentity, BrokerLifecycleManager
from net import messages
from net.protocol import make_entity

REGISTRATION_OFFSET = 40
# Longer than the test waits: only heartbeats sent sooner than the interval can unfence.
HEARTBEAT_INTERVAL_MS = 600_000


class RegisteringController:
    """Stands in for the active controller at the network boundary (`ControllerClient.send`):
    registers at REGISTRATION_OFFSET and unfences a heartbeat caught up to it (as
    controller.broker_lifecycle decides)."""

    def __init__(self) -> None:
        self.heartbeats: list[int] = []

    async def send(self, request: Any, **_: Any) -> Any:
        if isinstance(request, messages.BROKER_REGISTRATION_REQUESTS[request.__version__]):
            return make_entity(
                messages.BROKER_REGISTRATION_RESPONSES[request.__version__],
                throttle_time=timedelta(0),
                error_code=ErrorCode.none,
                broker_epoch=REGISTRATION_OFFSET,
            )
        offset = request.current_metadata_offset
        self.heartbeats.append(offset)
        caught_up = offset >= REGISTRATION_OFFSET
        return make_entity(
            messages.BROKER_HEARTBEAT_RESPONSES[request.__version__],
            throttle_time=timedelta(0),
            error_code=ErrorCode.none,
            is_caught_up=caught_up,
            is_fenced=not caught_up,
            should_shut_down=False,
        )


async def test_a_broker_catching_up_heartbeats_soon_and_is_unfenced_once_caught_up() -> None:
    controller = RegisteringController()
    lifecycle = BrokerLifecycleManager(
        controller,  # type: ignore[arg-type]
        BrokerIdentity(
            broker_id=1, cluster_id="c", listeners=(), rack=None, previous_broker_epoch=7
        ),
        # The metadata log replays on: one entry more for each heartbeat answered.
        lambda: REGISTRATION_OFFSET - 3 + min(len(controller.heartbeats), 3),
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        session_timeout_ms=HEARTBEAT_INTERVAL_MS * 3,
    )
    lifecycle.start()
    try:

        async def unfenced() -> None:
            while lifecycle.fenced:
                await asyncio.sleep(0.001)

        await asyncio.wait_for(unfenced(), timeout=30)
    finally:
        await lifecycle.stop()
    assert lifecycle.broker_epoch == REGISTRATION_OFFSET
    assert not lifecycle.fenced
    # Fenced heartbeats came one after the other until one reported the registration applied.
    assert controller.heartbeats[-1] == REGISTRATION_OFFSET
    assert len(controller.heartbeats) >= 2
    assert all(offset < REGISTRATION_OFFSET for offset in controller.heartbeats[:-1])


class ShuttingDownController(RegisteringController):
    """Registers and unfences at once; agrees to a controlled shutdown at the
    `agree_at`-th heartbeat that asks for one (as ours does once the leaderships moved and every
    other broker reported them applied)."""

    def __init__(self, agree_at: int) -> None:
        super().__init__()
        self.agree_at = agree_at
        self.shutdown_asks = 0

    async def send(self, request: Any, **kwargs: Any) -> Any:
        if isinstance(request, messages.BROKER_REGISTRATION_REQUESTS[request.__version__]):
            return await super().send(request, **kwargs)
        self.heartbeats.append(request.current_metadata_offset)
        self.shutdown_asks += request.want_shut_down
        agreed = request.want_shut_down and self.shutdown_asks >= self.agree_at
        return make_entity(
            messages.BROKER_HEARTBEAT_RESPONSES[request.__version__],
            throttle_time=timedelta(0),
            error_code=ErrorCode.none,
            is_caught_up=True,
            is_fenced=agreed,
            should_shut_down=agreed,
        )


@contextlib.asynccontextmanager
async def _unfenced(
    controller: RegisteringController, peer_in_controlled_shutdown: bool = False
) -> AsyncIterator[BrokerLifecycleManager]:
    """A lifecycle manager running against `controller`, once unfenced; stopped after."""
    lifecycle = BrokerLifecycleManager(
        controller,  # type: ignore[arg-type]
        BrokerIdentity(
            broker_id=1, cluster_id="c", listeners=(), rack=None, previous_broker_epoch=-1
        ),
        lambda: REGISTRATION_OFFSET,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        session_timeout_ms=HEARTBEAT_INTERVAL_MS * 3,
        peer_in_controlled_shutdown=lambda: peer_in_controlled_shutdown,
    )
    lifecycle.start()
    try:
        await asyncio.wait_for(_until(lambda: not lifecycle.fenced), timeout=30)
        yield lifecycle
    finally:
        await lifecycle.stop()


async def _until(condition: Any) -> None:
    while not condition():
        await asyncio.sleep(0.001)


async def test_a_controlled_shutdown_heartbeats_soon_until_the_controller_agrees() -> None:
    controller = ShuttingDownController(agree_at=4)
    async with _unfenced(controller) as lifecycle:
        # Only heartbeats sooner than the (ten-minute) interval can reach the fourth ask.
        outcome = await asyncio.wait_for(
            lifecycle.shut_down(timeout_s=600, give_up=asyncio.Event()), timeout=30
        )
    assert outcome is None
    assert controller.shutdown_asks == 4


async def test_a_broker_heartbeats_soon_while_a_peer_is_in_controlled_shutdown() -> None:
    controller = ShuttingDownController(agree_at=1)
    async with _unfenced(controller, peer_in_controlled_shutdown=True):
        answered = len(controller.heartbeats)
        # The controller waits for this broker to report the peer's moves applied.
        await asyncio.wait_for(_until(lambda: len(controller.heartbeats) >= answered + 3), 30)
    assert controller.shutdown_asks == 0


async def test_a_broker_told_of_a_peer_shutting_down_heartbeats_at_once() -> None:
    controller = ShuttingDownController(agree_at=1)
    async with _unfenced(controller) as lifecycle:
        answered = len(controller.heartbeats)
        await asyncio.sleep(0.2)
        # No peer in controlled shutdown: the next heartbeat waits for the interval.
        assert len(controller.heartbeats) == answered
        lifecycle.heartbeat_soon()
        await asyncio.wait_for(_until(lambda: len(controller.heartbeats) > answered), 30)


async def test_a_stop_as_a_heartbeat_is_called_for_ends_the_heartbeats() -> None:
    # A peer's controlled shutdown record applied as this node stops (all nodes of a cluster
    # stopping at once): the stop must not be lost to the wake-up, or the node heartbeats on
    # and never stops (Python 3.11's asyncio.wait_for returned the wake-up instead).
    controller = ShuttingDownController(agree_at=1)
    async with _unfenced(controller) as lifecycle:
        lifecycle.heartbeat_soon()
        stopping = asyncio.ensure_future(lifecycle.stop())
        # asyncio.wait leaves `stopping` alone at the timeout (a second cancellation would
        # end the heartbeats and hide the lost first one).
        stopped, _ = await asyncio.wait({stopping}, timeout=5)
        assert stopped, "the heartbeats went on after stop"
