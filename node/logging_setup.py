"""Structured logging for the node process: one event per line, with its fields.

JSON lines when stderr is not a terminal (containers, files, log shippers), a readable
console rendering when it is. Every line carries the node id.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog


def configure_logging(node_id: int, *, level: str = "info", stream: TextIO | None = None) -> None:
    """Route structlog (and the standard library's logging) to `stream` (default stderr)."""
    output = sys.stderr if stream is None else stream
    renderer: structlog.types.Processor
    if output.isatty():
        renderer = structlog.dev.ConsoleRenderer()
    else:
        renderer = structlog.processors.JSONRenderer()
    numeric_level = logging.getLevelNamesMapping()[level.upper()]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=structlog.PrintLoggerFactory(output),
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.bind_contextvars(node_id=node_id)
    logging.basicConfig(stream=output, level=numeric_level, format="%(name)s %(message)s")
