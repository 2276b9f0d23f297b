"""Background tasks a node cannot live without.

A replica fetcher, the Raft driver's ticker or a broker's heartbeat loop that ends with an
exception would otherwise leave the node half alive: still answering, no longer replicating,
and nothing in its log says so until the task object is garbage collected. Such a task is
started with `start_essential`; if it ends with an exception, the process-wide fatal handler
runs. The node installs one that logs the fault and terminates the process (as Kafka's
ProcessTerminatingFaultHandler does), so a supervisor restarts it from its durable state
instead of it serving wedged. Without a handler installed (library use, unit tests) the fault
is logged and the exception left on the task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import structlog

log = structlog.get_logger(__name__)

_T = TypeVar("_T")

FatalHandler = Callable[[str, BaseException], None]


def _log_fault(what: str, error: BaseException) -> None:
    log.critical("essential_task_failed", task=what, error=repr(error), exc_info=error)


_fatal_handler: FatalHandler = _log_fault


def set_fatal_handler(handler: FatalHandler | None) -> None:
    """Install what runs when an essential task fails (None: only log it)."""
    global _fatal_handler  # noqa: PLW0603 -- one handler per process, as a process has one exit
    _fatal_handler = handler or _log_fault


def report_fatal(what: str, error: BaseException) -> None:
    """A fault the node cannot continue after (`what` names the failed work)."""
    _fatal_handler(what, error)


def start_essential(coroutine: Coroutine[Any, Any, _T], name: str) -> asyncio.Task[_T]:
    """Run `coroutine` as a task whose failure is fatal; cancelling it is not a failure."""
    task = asyncio.get_running_loop().create_task(coroutine, name=name)
    task.add_done_callback(_check_outcome)
    return task


def _check_outcome(task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        report_fatal(task.get_name(), error)
