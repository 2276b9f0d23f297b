"""A topic's typed configuration reaches its hosted replicas: their MinISR and their logs'
settings, from the broker's defaults and the topic's overrides, as the metadata log changes
them."""

from __future__ import annotations

from pathlib import Path

from controller.partition_state import PartitionState
from controller.topic_config import KAFKA_DEFAULTS, TopicConfig
from net.record_batch import TimestampType
from tests.broker.replicas import Broker, image

LED = PartitionState(replicas=(1,), isr=(1,), leader=1)


async def test_a_changed_override_reaches_the_replica_and_its_log(tmp_path: Path) -> None:
    broker = Broker(1, tmp_path)
    try:
        broker.apply(image({0: LED}))
        replica = broker.partition()
        assert (replica.min_insync_replicas, replica.under_min_isr) == (1, False)
        assert replica.log.config.segment_bytes == KAFKA_DEFAULTS.segment_bytes
        broker.apply(
            image(
                {0: LED},
                min_isr=2,
                end_offset=2,
                configs={
                    "segment.bytes": "1048576",
                    "retention.ms": "-1",
                    "message.timestamp.type": "LogAppendTime",
                },
            )
        )
        assert broker.partition() is replica
        assert (replica.min_insync_replicas, replica.under_min_isr) == (2, True)
        config = replica.log.config
        assert (config.segment_bytes, config.retention_ms) == (1_048_576, None)
        assert config.message_timestamp_type is TimestampType.LOG_APPEND_TIME
    finally:
        broker.close()


async def test_what_a_topic_leaves_unset_comes_from_the_brokers_defaults(tmp_path: Path) -> None:
    defaults = TopicConfig.of_broker({"retention.ms": "5000", "flush.messages": "10"})
    broker = Broker(1, tmp_path, topic_defaults=defaults)
    try:
        broker.apply(image({0: LED}, configs={"flush.messages": "3"}))
        config = broker.partition().log.config
        assert (config.retention_ms, config.flush_messages) == (5000, 3)
    finally:
        broker.close()
