"""How late the node's event loop runs: the one loop serves the Raft replica, the controller and
the broker, so a callback that holds it holds up Raft fetches, heartbeats and every client.

`watch_loop_stalls` wakes every `CHECK_INTERVAL_S` and measures how much later than asked it
woke (the loop's lag), for the `/metrics` histogram; a lag of `REPORTED_STALL_S` or more is
logged as `event_loop_stalled` with its seconds, so that an operator can tie a Raft election or a
fenced broker to the work that held the loop (the events logged just before it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)

CHECK_INTERVAL_S = 0.1
# A quarter of the quorum's default request timeout (controller.quorum.request.timeout.ms).
REPORTED_STALL_S = 0.5


async def watch_loop_stalls(observe: Callable[[float], None]) -> None:
    """Forever: `observe` each wake-up's lag in seconds, and log the stalls."""
    loop = asyncio.get_running_loop()
    while True:
        asked = loop.time() + CHECK_INTERVAL_S
        await asyncio.sleep(CHECK_INTERVAL_S)
        lag = max(loop.time() - asked, 0.0)
        observe(lag)
        if lag >= REPORTED_STALL_S:
            log.warning("event_loop_stalled", seconds=round(lag, 3))
