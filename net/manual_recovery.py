"""ElectRecoveredLeader: this project's own controller API for a manual unclean recovery.

Kafka's ElectLeaders cannot name the replica to elect, and KIP-966's manual strategy leaves
the choice to the operator, so the admin API sends this to the active controller: elect
`leader` as the unclean leader of a leaderless partition. It is served only on the
controller listener, which only this project's nodes speak to; the api key is far above
Kafka's so that none of theirs collides with it. The classes follow kio's generated entities
so kio's reader and writer encode them (flexible, like every recent Kafka message).
"""

# No `from __future__ import annotations`: kio resolves field types at runtime.
import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta

from net.api_keys import ApiKey

VERSIONS = range(1)


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectRecoveredLeaderRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.ELECT_RECOVERED_LEADER)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    partition: i32 = field(metadata={"kafka_type": "int32"})
    leader: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectRecoveredLeaderResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.ELECT_RECOVERED_LEADER)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"})
