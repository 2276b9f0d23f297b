"""A compacted topic's produce rules and its cleaner on a broker's replicas."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kio.schema.errors import ErrorCode

from broker.log_maintenance import LogMaintenance, MaintenanceConfig
from controller.partition_state import PartitionState
from net.record_batch import read_header
from net.records import BatchFields, Record, encode_batch, seal_batch
from tests.broker.replicas import TOPIC, Broker, image, values

COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "1048576"}


def keyed(key: bytes | None, value: bytes) -> bytes:
    return encode_batch([Record(value, key=key)], now_ms=1_000)


def led(broker: Broker, partitions: int = 1) -> None:
    state = PartitionState(replicas=(1,), isr=(1,), leader=1)
    broker.apply(image(dict.fromkeys(range(partitions), state), configs=COMPACTED))


async def test_a_record_without_a_key_is_refused_by_a_compacted_topic(tmp_path: Path) -> None:
    broker = Broker(1, tmp_path)
    led(broker)
    mixed = encode_batch([Record(b"kept", key=b"k"), Record(b"lost", key=None)], now_ms=1_000)
    (refused,) = await broker.replicas.produce(1, 1_000, [(TOPIC, 0, mixed)])
    assert refused.error is ErrorCode.invalid_record
    assert broker.partition().log.log_end_offset == 0
    (accepted,) = await broker.replicas.produce(1, 1_000, [(TOPIC, 0, keyed(b"k", b"v"))])
    assert accepted.error is ErrorCode.none
    assert values(broker.partition().log) == [b"v"]
    broker.close()


async def test_a_log_the_cleaner_cannot_decode_is_left_alone_and_the_others_are_cleaned(
    tmp_path: Path,
) -> None:
    broker = Broker(1, tmp_path)
    led(broker, partitions=2)
    poisoned, healthy = broker.partition(0).log, broker.partition(1).log
    # A batch whose CRC holds but whose records do not parse (written before produce checked
    # keys, or copied from a leader): the cleaner fails on it every time.
    good = keyed(b"a", b"1")
    header = read_header(good)
    fields = BatchFields(0, -1, header.attributes, 0, 1_000, 1_000, -1, -1, -1, 1)
    poisoned.append(seal_batch(fields, b"\xff" * 12), leader_epoch=0)
    for replica_log in (poisoned, healthy):
        for value in (b"1", b"2", b"3"):
            replica_log.append(keyed(b"a", value), leader_epoch=0)
        replica_log.roll()
        replica_log.append(keyed(b"b", b"1"), leader_epoch=0)
        replica_log.update_high_watermark(replica_log.log_end_offset)
    maintenance = LogMaintenance(
        broker.logs, broker.replicas, MaintenanceConfig(cleaner_backoff_ms=10)
    )
    maintenance.start()
    try:
        for _ in range(100):
            await asyncio.sleep(0.02)
            if values(healthy) == [b"3", b"1"]:
                break
        assert values(healthy) == [b"3", b"1"]
        assert poisoned.log_end_offset == 5
        assert len(list(poisoned.batches())) == 5
    finally:
        await maintenance.stop()
    broker.close()
