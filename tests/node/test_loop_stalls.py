"""The node's watch on its event loop: every wake-up's lag is observed, and a stall (a callback
holding the loop for `REPORTED_STALL_S` or more) is logged with its length."""

from __future__ import annotations

import asyncio
import time

import pytest
from structlog.testing import capture_logs

import node.loop_stalls
from node.loop_stalls import watch_loop_stalls


async def test_a_callback_holding_the_loop_is_reported_with_its_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(node.loop_stalls, "CHECK_INTERVAL_S", 0.01)
    monkeypatch.setattr(node.loop_stalls, "REPORTED_STALL_S", 0.2)
    lags: list[float] = []
    with capture_logs() as logged:
        watching = asyncio.create_task(watch_loop_stalls(lags.append))
        async with asyncio.timeout(10):
            while len(lags) < 3:
                await asyncio.sleep(0.01)
        # Holds the loop for 0.3 s, as a large synchronous step would.
        asyncio.get_running_loop().call_soon(time.sleep, 0.3)
        async with asyncio.timeout(10):
            while max(lags) < 0.2:
                await asyncio.sleep(0.01)
        watching.cancel()
    # The quiet wake-ups are late by far less than the stall, which is measured whole.
    assert min(lags) < 0.1
    assert 0.25 <= max(lags) < 1.0
    stalls = [entry for entry in logged if entry["event"] == "event_loop_stalled"]
    assert [entry["log_level"] for entry in stalls] == ["warning"]
    assert stalls[0]["seconds"] == round(max(lags), 3)
