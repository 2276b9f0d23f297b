"""A node's logs opened while the rest of the node is imported.

`kraft serve` imports most of the product (kio's message classes, the admin API's models),
seconds of CPU on a loaded machine, before the node can start; opening thousands of logs
(a directory listing and a few small files each, mostly system calls) waited for those imports
to end. `open_logs_in_background` checks and formats the log directories at once, so a bad
directory still ends the start before anything else, then opens the logs on a thread of their
own while the caller imports; `node.process.serve` takes the opened `LogManager` from the
future. This module imports only storage and the configuration, so it costs nothing to import
before the node.
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from threading import Thread

from node.config import NodeConfig
from node.meta_properties import ensure_formatted
from storage import durability
from storage.log_manager import LogManager

# Set, the node keeps a durability journal (which bytes of which files were fsynced) there.
DURABILITY_JOURNAL_ENV = "KRAFT_DURABILITY_JOURNAL"


def open_logs_in_background(config: NodeConfig) -> Future[LogManager]:
    """Start the durability journal if asked for, check and format the log directories
    (raising `LogDirectoryError` for a directory of another cluster or node), then open every
    log in `log.dirs` on a new thread: the future holds the `LogManager`, or the error that
    opening raised."""
    if journal := os.environ.get(DURABILITY_JOURNAL_ENV):
        durability.enable_journal(journal)
    ensure_formatted(config.all_log_dirs, config.cluster_id, config.node_id)
    opened: Future[LogManager] = Future()

    def open_logs() -> None:
        try:
            opened.set_result(
                LogManager.open(
                    config.all_log_dirs, config.log_config(), partition_dirs=config.log_dirs
                )
            )
        except BaseException as error:  # handed to the start-up waiting for the future
            opened.set_exception(error)

    Thread(target=open_logs, name="log-opening", daemon=True).start()
    return opened
