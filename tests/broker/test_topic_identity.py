"""Topic identity on a broker: a local log is served only as the topic whose id its directory
records, and logs of topics deleted (or deleted and created again under the same name) while
the broker was down are deleted once it applies metadata again."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any
from uuid import UUID

import pytest
from structlog.testing import capture_logs

from controller.image import ConfigResource, MetadataImage, TopicImage
from controller.partition_state import PartitionState
from controller.records import ConfigResourceType
from storage.log_manager import TopicPartition
from storage.partition_metadata import PARTITION_METADATA_FILE, read_partition_metadata
from tests.broker.replicas import TOPIC, TOPIC_ID, Broker, batch, values

BROKER = 1
NEW_TOPIC_ID = UUID(int=2)
LED_HERE = PartitionState(replicas=(BROKER,), isr=(BROKER,), leader=BROKER)
ELSEWHERE = PartitionState(replicas=(2, 3), isr=(2, 3), leader=2)
METADATA_PARTITION = TopicPartition("__cluster_metadata", 0)


def topics(
    *described: tuple[str, UUID, Mapping[int, PartitionState]], end_offset: int = 1
) -> MetadataImage:
    """An image holding these (name, id, partitions) topics."""
    return MetadataImage(
        end_offset=end_offset,
        topics=MappingProxyType(
            {
                topic_id: TopicImage(name, topic_id, dict(parts))
                for name, topic_id, parts in described
            }
        ),
        topic_ids=MappingProxyType({name: topic_id for name, topic_id, _ in described}),
        configs=MappingProxyType(
            {
                ConfigResource(ConfigResourceType.TOPIC, name): {"min.insync.replicas": "1"}
                for name, _, _ in described
            }
        ),
    )


class Restarts:
    """Broker 1 in one directory, started again as often as a test wants."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.current: Broker | None = None

    def start(self) -> Broker:
        self.stop()
        self.current = Broker(BROKER, self.root)
        return self.current

    def stop(self) -> None:
        if self.current is not None:
            self.current.logs.wait_for_deletions(timeout=10)
            self.current.close()
            self.current = None

    @property
    def data_dir(self) -> Path:
        return self.root / f"b{BROKER}"


@pytest.fixture
def restarts(tmp_path: Path) -> Iterator[Restarts]:
    made = Restarts(tmp_path)
    yield made
    made.stop()


async def with_records(broker: Broker, *written: bytes, partition_id: int = 0) -> None:
    """`broker` leads partition `partition_id` of the topic and took `written`."""
    for value in written:
        (result,) = await broker.replicas.produce(1, 1_000, [(TOPIC, partition_id, batch(value))])
        assert result.base_offset >= 0


def deletions(logs: Sequence[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    """The `partition_replica_deleted` events among captured `logs`."""
    return [entry for entry in logs if entry["event"] == "partition_replica_deleted"]


async def test_a_topic_created_again_while_the_broker_was_down_starts_an_empty_log(
    restarts: Restarts,
) -> None:
    broker = restarts.start()
    broker.apply(topics((TOPIC, TOPIC_ID, {0: LED_HERE})))
    await with_records(broker, b"old-1", b"old-2")
    assert read_partition_metadata(restarts.data_dir / f"{TOPIC}-0") == TOPIC_ID
    restarts.stop()

    broker = restarts.start()
    with capture_logs() as logs:
        broker.apply(topics((TOPIC, NEW_TOPIC_ID, {0: LED_HERE})))
    replica = broker.partition()
    assert replica.topic_id == NEW_TOPIC_ID
    assert replica.log.log_end_offset == 0
    await with_records(broker, b"new-1")
    assert values(replica.log) == [b"new-1"]
    assert read_partition_metadata(restarts.data_dir / f"{TOPIC}-0") == NEW_TOPIC_ID
    (deleted,) = deletions(logs)
    assert deleted["topic"] == TOPIC and deleted["partition"] == 0
    assert deleted["reason"] == "topic_recreated"
    assert (deleted["topic_id"], deleted["new_topic_id"]) == (str(TOPIC_ID), str(NEW_TOPIC_ID))
    aside = Path(deleted["directory"])
    assert aside.parent == restarts.data_dir and aside.name.endswith("-delete")
    assert broker.logs.wait_for_deletions(timeout=10)
    assert not aside.exists()


async def test_a_topic_deleted_while_the_broker_was_down_is_deleted_from_its_disk(
    restarts: Restarts,
) -> None:
    broker = restarts.start()
    broker.apply(
        topics((TOPIC, TOPIC_ID, {0: LED_HERE, 1: LED_HERE}), ("kept", UUID(int=9), {0: LED_HERE}))
    )
    await with_records(broker, b"gone")
    restarts.stop()

    broker = restarts.start()
    with capture_logs() as logs:
        broker.apply(topics(("kept", UUID(int=9), {0: LED_HERE})))
    assert sorted((entry["partition"], entry["reason"]) for entry in deletions(logs)) == [
        (0, "topic_deleted"),
        (1, "topic_deleted"),
    ]
    assert all(entry["new_topic_id"] is None for entry in deletions(logs))
    assert broker.logs.wait_for_deletions(timeout=10)
    assert sorted(path.name for path in restarts.data_dir.iterdir() if path.is_dir()) == ["kept-0"]
    assert broker.logs.get_log(TopicPartition(TOPIC, 0)) is None


async def test_a_replica_of_a_topic_created_again_while_the_broker_runs_starts_empty(
    restarts: Restarts,
) -> None:
    broker = restarts.start()
    broker.apply(topics((TOPIC, TOPIC_ID, {0: LED_HERE})))
    await with_records(broker, b"old")
    with capture_logs() as logs:
        broker.apply(topics(end_offset=2))
        broker.apply(topics((TOPIC, NEW_TOPIC_ID, {0: LED_HERE}), end_offset=3))
    assert [entry["reason"] for entry in deletions(logs)] == ["topic_deleted"]
    assert broker.partition().log.log_end_offset == 0
    assert broker.logs.topic_id_of(TopicPartition(TOPIC, 0)) == NEW_TOPIC_ID
    # Deleted and created again between two images this broker applies: the same.
    with capture_logs() as logs:
        broker.apply(topics((TOPIC, TOPIC_ID, {0: LED_HERE}), end_offset=4))
    (deleted,) = deletions(logs)
    assert deleted["reason"] == "topic_recreated"
    assert (deleted["topic_id"], deleted["new_topic_id"]) == (str(NEW_TOPIC_ID), str(TOPIC_ID))


async def test_a_replica_reassigned_away_while_the_broker_was_down_is_deleted_at_start(
    restarts: Restarts,
) -> None:
    broker = restarts.start()
    broker.apply(topics((TOPIC, TOPIC_ID, {0: LED_HERE, 1: LED_HERE})))
    await with_records(broker, b"moved")
    await with_records(broker, b"kept", partition_id=1)
    restarts.stop()
    # Partition 0 moved to other brokers while this one was down; partition 1 stays here.
    broker = restarts.start()
    with capture_logs() as logs:
        broker.apply(topics((TOPIC, TOPIC_ID, {0: ELSEWHERE, 1: LED_HERE})))
    (deleted,) = deletions(logs)
    assert (deleted["partition"], deleted["reason"]) == (0, "replica_unassigned")
    assert deleted["topic_id"] == deleted["new_topic_id"] == str(TOPIC_ID)
    assert broker.logs.get_log(TopicPartition(TOPIC, 0)) is None
    assert broker.logs.wait_for_deletions(timeout=10)
    assert not (restarts.data_dir / f"{TOPIC}-0").exists()
    assert not Path(deleted["directory"]).exists()
    kept = broker.logs.get_log(TopicPartition(TOPIC, 1))
    assert kept is not None and values(kept) == [b"kept"]
    restarts.stop()
    # Nothing of it comes back at the next start.
    broker = restarts.start()
    with capture_logs() as logs:
        broker.apply(topics((TOPIC, TOPIC_ID, {0: ELSEWHERE, 1: LED_HERE})))
    assert deletions(logs) == []


async def test_a_log_without_partition_metadata_takes_the_topic_id_and_keeps_its_records(
    restarts: Restarts,
) -> None:
    broker = restarts.start()
    broker.apply(topics((TOPIC, TOPIC_ID, {0: LED_HERE}), ("moved", UUID(int=5), {0: LED_HERE})))
    await with_records(broker, b"before-ids")
    restarts.stop()
    # Directories from before topic ids were recorded.
    for name in (f"{TOPIC}-0", "moved-0"):
        (restarts.data_dir / name / PARTITION_METADATA_FILE).unlink()

    broker = restarts.start()
    with capture_logs() as logs:
        broker.apply(
            topics((TOPIC, TOPIC_ID, {0: LED_HERE}), ("moved", UUID(int=5), {0: ELSEWHERE}))
        )
    # The hosted one keeps its records; the one moved away goes, as with an id.
    assert [(entry["topic"], entry["reason"]) for entry in deletions(logs)] == [
        ("moved", "replica_unassigned")
    ]
    assert values(broker.partition().log) == [b"before-ids"]
    assert read_partition_metadata(restarts.data_dir / f"{TOPIC}-0") == TOPIC_ID


async def test_a_partition_the_topic_of_its_name_lacks_is_of_an_earlier_topic(
    restarts: Restarts,
) -> None:
    broker = restarts.start()
    broker.apply(topics((TOPIC, TOPIC_ID, {0: LED_HERE, 1: LED_HERE})))
    restarts.stop()
    (restarts.data_dir / f"{TOPIC}-1" / PARTITION_METADATA_FILE).unlink()
    broker = restarts.start()
    with capture_logs() as logs:
        broker.apply(topics((TOPIC, TOPIC_ID, {0: LED_HERE})))
    assert [(entry["partition"], entry["reason"]) for entry in deletions(logs)] == [
        (1, "topic_recreated")
    ]


def test_the_metadata_log_is_never_taken_for_a_deleted_topic(restarts: Restarts) -> None:
    broker = restarts.start()
    broker.logs.get_or_create_log(METADATA_PARTITION)
    restarts.stop()
    broker = restarts.start()
    broker.apply(topics())
    assert broker.logs.get_log(METADATA_PARTITION) is not None


async def test_logs_on_an_offline_log_directory_are_left_alone(restarts: Restarts) -> None:
    broker = restarts.start()
    broker.apply(topics((TOPIC, TOPIC_ID, {0: LED_HERE})))
    await with_records(broker, b"on-a-failed-disk")
    # As a failed write to it would (broker.replicas._replica_went_offline).
    broker.partition().take_offline("test")
    broker.replicas._offline_dirs.add(restarts.data_dir)
    with capture_logs() as logs:
        broker.apply(topics(end_offset=2))
        broker.apply(topics((TOPIC, NEW_TOPIC_ID, {0: LED_HERE}), end_offset=3))
    assert deletions(logs) == []
    assert (TOPIC, 0) not in broker.replicas.partitions
    assert (restarts.data_dir / f"{TOPIC}-0").is_dir()
    restarts.stop()
    # Back after a restart: the log of the earlier topic goes, the new one starts empty.
    broker = restarts.start()
    broker.apply(topics((TOPIC, NEW_TOPIC_ID, {0: LED_HERE}), end_offset=3))
    assert broker.partition().log.log_end_offset == 0
    assert broker.logs.topic_id_of(TopicPartition(TOPIC, 0)) == NEW_TOPIC_ID
