"""Checks every test module shares: no Kafka client thread outlives the module that made it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

# kafka-python's network threads: a consumer's or admin client's I/O loop, a producer's sender.
_CLIENT_THREAD_PREFIX = "kafka-io-"
_CLIENT_THREAD_SUFFIX = "-network-thread"


def _client_threads() -> set[threading.Thread]:
    return {
        thread
        for thread in threading.enumerate()
        if thread.name.startswith(_CLIENT_THREAD_PREFIX)
        or thread.name.endswith(_CLIENT_THREAD_SUFFIX)
    }


@pytest.fixture(scope="module", autouse=True)
def no_client_thread_left() -> Iterator[None]:
    """Fails a module that leaves a kafka-python client open once its tests and fixtures are
    done: its thread would retry the module's stopped nodes for the rest of the run (and call
    the shared `random` meanwhile, which Hypothesis reports in whatever test it then runs)."""
    before = _client_threads()
    yield
    left = sorted(thread.name for thread in _client_threads() - before if thread.is_alive())
    assert not left, f"Kafka client threads left running (a client not closed): {left}"
