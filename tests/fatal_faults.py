"""A pytest fixture that records the fatal faults reported while a test runs (`net.tasks`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from net.tasks import set_fatal_handler

Faults = list[tuple[str, BaseException]]


@pytest.fixture
def faults() -> Iterator[Faults]:
    """The (what, error) pairs reported to the fatal handler during the test, in order."""
    reported: Faults = []
    set_fatal_handler(lambda what, error: reported.append((what, error)))
    yield reported
    set_fatal_handler(None)
