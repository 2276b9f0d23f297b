"""structlog in Spark's Python processes, which nothing else configures.

Unconfigured, structlog prints every level to stdout, which Spark's Python workers share with
the JVM's console. Each entry point of the connector calls `configure` first: unless the
application configured structlog itself, events below `KRAFT_SPARK_LOG_LEVEL` (default
warning) are dropped and the rest go to stderr.
"""

import logging
import os
import sys

import structlog

LEVEL_VARIABLE = "KRAFT_SPARK_LOG_LEVEL"


def configure() -> None:
    """Quiet structlog down for a Spark process, unless it is configured already."""
    if structlog.is_configured():
        return
    level_name = os.environ.get(LEVEL_VARIABLE, "warning").upper()
    level = logging.getLevelNamesMapping().get(level_name, logging.WARNING)
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
