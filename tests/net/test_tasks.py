"""Essential tasks: a failure reaches the fatal handler; a cancellation does not."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from net.tasks import set_fatal_handler, start_essential


@pytest.fixture
def faults() -> Iterator[list[tuple[str, BaseException]]]:
    reported: list[tuple[str, BaseException]] = []
    set_fatal_handler(lambda what, error: reported.append((what, error)))
    yield reported
    set_fatal_handler(None)


async def test_a_failed_essential_task_is_reported_with_its_name(
    faults: list[tuple[str, BaseException]],
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
    faults: list[tuple[str, BaseException]],
) -> None:
    sleeper = start_essential(asyncio.sleep(10), "ticker")
    finished = start_essential(asyncio.sleep(0), "quick")
    await finished
    sleeper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sleeper
    await asyncio.sleep(0)
    assert faults == []
