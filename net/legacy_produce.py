"""Produce v0-2 message schemas, which kio no longer ships, kept only to refuse those versions.

Kafka 4.0 removed Produce v0-2 but still advertises Produce from v0, because librdkafka before
2.11.1 (Debian's kcat among them) enables compression only when Produce v0 is advertised
(KAFKA-18659). This broker does the same, and answers a v0-2 request with a proper
ProduceResponse of that version carrying UNSUPPORTED_VERSION for every partition, never a
dropped connection. The classes follow kio's generated entities so kio's reader and writer
encode them; their layouts are those of `kafka-protocol/message/Produce{Request,Response}.json`.
"""

# No `from __future__ import annotations`: kio resolves field types at runtime.
import datetime
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.produce.v3.request import TopicProduceData
from kio.schema.produce.v3.response import PartitionProduceResponse as PartitionResponseV2
from kio.schema.produce.v3.response import ProduceResponse as ProduceResponseV2
from kio.schema.produce.v3.response import TopicProduceResponse as TopicResponseV2
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.schema.types import TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta, i64

from net.api_keys import ApiKey

LEGACY_VERSIONS = range(3)
NO_OFFSET = i64(-1)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceRequestV0:
    """ProduceRequest v0: the same layout as v1 and v2 (v3 added TransactionalId in front)."""

    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(ApiKey.PRODUCE)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    acks: i16 = field(metadata={"kafka_type": "int16"})
    timeout: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    # v0-2 topic data is byte-identical to v3's (partition index + nullable records).
    topic_data: tuple[TopicProduceData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceRequestV1(ProduceRequestV0):
    __version__: ClassVar[i16] = i16(1)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceRequestV2(ProduceRequestV0):
    __version__: ClassVar[i16] = i16(2)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionResponseV0:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(ApiKey.PRODUCE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    base_offset: i64 = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicResponseV0:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(ApiKey.PRODUCE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    name: TopicName = field(metadata={"kafka_type": "string"})
    partition_responses: tuple[PartitionResponseV0, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceResponseV0:
    """ProduceResponse v0: per-partition results, no throttle time."""

    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(ApiKey.PRODUCE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    responses: tuple[TopicResponseV0, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceResponseV1:
    """ProduceResponse v1: v0 plus the throttle time after the results."""

    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(ApiKey.PRODUCE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    responses: tuple[TopicResponseV0, ...]
    throttle_time: i32Timedelta = field(
        metadata={"kafka_type": "timedelta_i32"},
        default=i32Timedelta.parse(datetime.timedelta(0)),
    )


# v2 added LogAppendTimeMs per partition; v3 changed nothing in the response, so kio's v3
# response entity encodes v2 byte for byte.
REQUEST_SCHEMAS: dict[int, type[ProduceRequestV0]] = {
    0: ProduceRequestV0,
    1: ProduceRequestV1,
    2: ProduceRequestV2,
}
RESPONSE_SCHEMAS: dict[int, type[ProduceResponseV0 | ProduceResponseV1 | ProduceResponseV2]] = {
    0: ProduceResponseV0,
    1: ProduceResponseV1,
    2: ProduceResponseV2,
}


def refusal(
    request: ProduceRequestV0, error_code: ErrorCode
) -> ProduceResponseV0 | ProduceResponseV1 | ProduceResponseV2:
    """The response of the request's version that fails every partition with `error_code`."""
    version = request.__version__
    if version == 2:
        return ProduceResponseV2(
            responses=tuple(
                TopicResponseV2(
                    name=topic.name,
                    partition_responses=tuple(
                        PartitionResponseV2(
                            index=partition.index, error_code=error_code, base_offset=NO_OFFSET
                        )
                        for partition in topic.partition_data
                    ),
                )
                for topic in request.topic_data
            )
        )
    responses = tuple(
        TopicResponseV0(
            name=topic.name,
            partition_responses=tuple(
                PartitionResponseV0(
                    index=partition.index, error_code=error_code, base_offset=NO_OFFSET
                )
                for partition in topic.partition_data
            ),
        )
        for topic in request.topic_data
    )
    if version == 1:
        return ProduceResponseV1(responses=responses)
    return ProduceResponseV0(responses=responses)
