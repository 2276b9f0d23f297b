"""GetReplicaLogInfo v0 (API key 93, KIP-966), which kio does not ship.

The active controller asks brokers for the state of their replicas' logs with it before an
unclean recovery: per partition the last leader epoch written to the log, the broker's current
leader epoch for it, and its log end offset, plus the broker epoch the answer comes from. The
classes follow kio's generated entities so kio's reader and writer encode them; their layouts
are those of `kafka-protocol/message/GetReplicaLogInfo{Request,Response}.json` (v0, flexible).
"""

# No `from __future__ import annotations`: kio resolves field types at runtime.
import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta, i64

from net.api_keys import ApiKey

VERSIONS = range(1)
# Kafka answers at most this many partitions and sets `truncated` for the rest.
MAX_PARTITIONS = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.GET_REPLICA_LOG_INFO)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class GetReplicaLogInfoRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.GET_REPLICA_LOG_INFO)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_partitions: tuple[TopicPartitions, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionLogInfo:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.GET_REPLICA_LOG_INFO)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition: i32 = field(metadata={"kafka_type": "int32"})
    last_written_leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    current_leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    log_end_offset: i64 = field(metadata={"kafka_type": "int64"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitionLogInfo:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.GET_REPLICA_LOG_INFO)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    partition_log_info: tuple[PartitionLogInfo, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GetReplicaLogInfoResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.GET_REPLICA_LOG_INFO)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"})
    truncated: bool = field(metadata={"kafka_type": "bool"})
    topic_partition_log_info_list: tuple[TopicPartitionLogInfo, ...]
