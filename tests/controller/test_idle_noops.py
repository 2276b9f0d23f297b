"""The active controller keeps an idle metadata log moving (KIP-835).

A single-voter quorum over a real metadata log and socket, with the controller on top as a
node runs it: while nothing is asked of it, the controller appends a NoOpRecord every
`metadata.max.idle.interval.ms`, so the committed offset advances; with the interval 0 it never
does.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.records import NoOpRecord, decode_record
from tests.controller.lone_controller import active_controller


async def test_an_idle_active_controller_appends_noops(tmp_path: Path) -> None:
    async with active_controller(tmp_path, "noops", max_idle_interval_ms=50) as lone:
        driver, committed = lone.driver, lone.committed
        start = driver.quorum_view().high_watermark
        await asyncio.sleep(1.0)
        # About one NoOp per interval; a loaded machine may fire the timer late.
        assert len(committed.records) >= 3
        assert {decode_record(record) for record in committed.records} == {NoOpRecord()}
        assert driver.quorum_view().high_watermark >= start + 3


async def test_no_noops_with_the_idle_interval_zero(tmp_path: Path) -> None:
    async with active_controller(tmp_path, "noops", max_idle_interval_ms=0) as lone:
        driver, committed = lone.driver, lone.committed
        start = driver.quorum_view().high_watermark
        await asyncio.sleep(0.5)
        assert committed.records == []
        assert driver.quorum_view().high_watermark == start
