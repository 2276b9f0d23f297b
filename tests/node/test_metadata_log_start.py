"""The metadata quorum's log at a node's start: after an unclean stop, what recovery kept of it
is fsynced before the quorum uses it (it votes and acknowledges on all of it), while the
partition logs' recovered tails stay unflushed above their recovery points."""

from __future__ import annotations

from pathlib import Path

from node.process import METADATA_PARTITION, open_metadata_log
from storage.log import LogConfig
from storage.log_manager import LogManager, TopicPartition
from tests.storage.helpers import make_batch

ORDERS_0 = TopicPartition("orders", 0)


def written_then_killed(directory: Path) -> None:
    """Both logs hold batches never fsynced, and the manager stops without its marker."""
    manager = LogManager.open([directory])
    metadata = open_metadata_log(manager, LogConfig(), directory)
    metadata.append(make_batch(3), leader_epoch=1)
    manager.get_or_create_log(ORDERS_0).append(make_batch(2), leader_epoch=1)
    manager.checkpoint()
    manager.close()


def test_an_unclean_start_makes_the_metadata_log_durable_whole(tmp_path: Path) -> None:
    written_then_killed(tmp_path)
    manager = LogManager.open([tmp_path])
    assert not manager.clean_shutdown
    metadata = open_metadata_log(manager, LogConfig(), tmp_path)
    assert metadata.log_end_offset == 3
    assert metadata.recovery_point == 3
    orders = manager.get_log(ORDERS_0)
    assert orders is not None
    assert (orders.log_end_offset, orders.recovery_point) == (2, 0)
    manager.close()


def test_a_clean_start_finds_the_metadata_log_durable_already(tmp_path: Path) -> None:
    manager = LogManager.open([tmp_path])
    open_metadata_log(manager, LogConfig(), tmp_path).append(make_batch(3), leader_epoch=1)
    manager.shutdown(broker_epoch=7)
    reopened = LogManager.open([tmp_path])
    assert reopened.clean_shutdown
    metadata = reopened.get_log(METADATA_PARTITION)
    assert metadata is not None
    assert metadata.recovery_point == metadata.log_end_offset == 3
    reopened.close()
