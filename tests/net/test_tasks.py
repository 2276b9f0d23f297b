"""Essential tasks: a failure reaches the fatal handler; a cancellation does not."""

from __future__ import annotations

import asyncio

import pytest

from net.tasks import start_essential
from tests.fatal_faults import Faults, faults  # noqa: F401 (the fixture)


async def test_a_failed_essential_task_is_reported_with_its_name(
    faults: Faults,  # noqa: F811
) -> None:
    async def fail() -> None:
        await asyncio.sleep(0)
        raise ValueError("lost")

    task = start_essential(fail(), "replica-fetcher-2")
    with pytest.raises(ValueError, match="lost"):
        await task
    await asyncio.sleep(0)
    assert [(what, str(error)) for what, error in faults] == [("replica-fetcher-2", "lost")]


async def test_cancelling_or_finishing_an_essential_task_is_no_fault(
    faults: Faults,  # noqa: F811
) -> None:
    sleeper = start_essential(asyncio.sleep(10), "ticker")
    finished = start_essential(asyncio.sleep(0), "quick")
    await finished
    sleeper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sleeper
    await asyncio.sleep(0)
    assert faults == []
