"""The metadata records: what each entry of the metadata log says, and their binary encoding.

The types follow Kafka's metadata records (the JSON specs in `kafka-protocol/metadata/`), with
Kafka's names and api keys, and are encoded as Kafka's `MetadataRecordSerde` frames them:

    frame version (unsigned varint, always 1)
    record type   (unsigned varint: the record's api key)
    record version (unsigned varint)
    the record's fields, in the flexible ("compact") message format: fixed-width big-endian
    integers, uuids as 16 bytes, compact strings and arrays (length + 1 as an unsigned varint,
    0 for null), then a tagged-field section (count, then tag / size / bytes per field).

Each record is declared once below, as its spec declares it, with `net.schema` (kio has no
metadata-record schemas), and that one codec reads and writes them all. One version of each
record is written (`VERSION`: the newest that carries every field we keep, e.g. PartitionRecord
v2 for the ELR); every version Kafka's spec defines is read. Fields that we do not model
(LeaderRecoveryState, Directories, LogDirs, IsMigratingZkBroker) are written as their default
or not at all when tagged, and dropped when read; unknown tagged fields are skipped, as Kafka
skips them. Any other type or version, truncation or leftover bytes is a `RecordDecodeError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType
from typing import ClassVar, TypeAlias
from uuid import UUID

from controller.acls import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from controller.partition_state import NO_LEADER, PartitionState
from net.schema import (
    BOOL,
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    Array,
    Codec,
    Field,
    SchemaDecodeError,
    Struct,
    read_uvarint,
)
from net.schema import UUID as UUID_TYPE

FRAME_VERSION = 1
# PartitionChangeRecord's Leader when the leader did not change (Kafka's NO_LEADER_CHANGE).
_NO_LEADER_CHANGE = -2


class RecordDecodeError(ValueError):
    """Bytes that are not a metadata record this codec knows (type, version or layout)."""


class ConfigResourceType(IntEnum):
    """Kafka's ConfigResource.Type values, as ConfigRecord stores them."""

    TOPIC = 2
    BROKER = 4


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """A listener a broker advertises: `security_protocol` is Kafka's id (0 = PLAINTEXT)."""

    name: str
    host: str
    port: int
    security_protocol: int = 0


@dataclass(frozen=True, slots=True)
class BrokerFeature:
    """A feature range a broker supports, as it registered it."""

    name: str
    min_supported_version: int
    max_supported_version: int


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    """A broker (re-)registered: a new incarnation and a new broker epoch (RegisterBrokerRecord)."""

    API_KEY: ClassVar[int] = 0
    VERSION: ClassVar[int] = 1

    broker_id: int
    incarnation_id: UUID
    broker_epoch: int
    listeners: tuple[BrokerEndpoint, ...] = ()
    features: tuple[BrokerFeature, ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord:
    """A broker was removed from the cluster (UnregisterBrokerRecord)."""

    API_KEY: ClassVar[int] = 1
    VERSION: ClassVar[int] = 0

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """A topic was created; its partitions follow as PartitionRecords."""

    API_KEY: ClassVar[int] = 2
    VERSION: ClassVar[int] = 0

    name: str
    topic_id: UUID


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """A partition's full state: at creation, and in snapshots (PartitionRecord)."""

    API_KEY: ClassVar[int] = 3
    VERSION: ClassVar[int] = 2

    topic_id: UUID
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @classmethod
    def of(cls, topic_id: UUID, partition_id: int, state: PartitionState) -> PartitionRecord:
        """The record that sets partition `partition_id` of `topic_id` to `state`."""
        return cls(
            topic_id=topic_id,
            partition_id=partition_id,
            replicas=state.replicas,
            isr=state.isr,
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            partition_epoch=state.partition_epoch,
            elr=state.elr,
            last_known_elr=state.last_known_elr,
            adding_replicas=state.adding_replicas,
            removing_replicas=state.removing_replicas,
        )

    def state(self) -> PartitionState:
        """The partition state this record sets."""
        return PartitionState(
            replicas=self.replicas,
            isr=self.isr,
            leader=self.leader,
            leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch,
            elr=self.elr,
            last_known_elr=self.last_known_elr,
            adding_replicas=self.adding_replicas,
            removing_replicas=self.removing_replicas,
        )


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """A change to one partition (PartitionChangeRecord); every None field is unchanged.

    `leader` is the new leader (NO_LEADER for none) or None if the leader did not change. As in
    Kafka's `PartitionRegistration.merge`, replaying a change whose `leader` is set bumps the
    leader epoch, even when it names the current leader (that is how the controller fences the
    old leader epoch without moving leadership), and replaying any change bumps the partition
    epoch.
    """

    API_KEY: ClassVar[int] = 5
    VERSION: ClassVar[int] = 2

    topic_id: UUID
    partition_id: int
    isr: tuple[int, ...] | None = None
    leader: int | None = None
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.leader is not None and self.leader < NO_LEADER:
            raise ValueError(f"leader must be a broker id or NO_LEADER, not {self.leader}")

    def merge(self, state: PartitionState) -> PartitionState:
        """`state` after this change (Kafka's `PartitionRegistration.merge`)."""

        def pick(new: tuple[int, ...] | None, old: tuple[int, ...]) -> tuple[int, ...]:
            return old if new is None else new

        if self.leader is None:
            leader, leader_epoch = state.leader, state.leader_epoch
        else:
            leader, leader_epoch = self.leader, state.leader_epoch + 1
        return PartitionState(
            replicas=pick(self.replicas, state.replicas),
            isr=pick(self.isr, state.isr),
            leader=leader,
            leader_epoch=leader_epoch,
            partition_epoch=state.partition_epoch + 1,
            elr=pick(self.elr, state.elr),
            last_known_elr=pick(self.last_known_elr, state.last_known_elr),
            adding_replicas=pick(self.adding_replicas, state.adding_replicas),
            removing_replicas=pick(self.removing_replicas, state.removing_replicas),
        )


@dataclass(frozen=True, slots=True)
class FenceBrokerRecord:
    """A broker is fenced: no longer a leader candidate, out of the ISRs (FenceBrokerRecord)."""

    API_KEY: ClassVar[int] = 7
    VERSION: ClassVar[int] = 0

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class UnfenceBrokerRecord:
    """A broker caught up with the metadata log and is unfenced (UnfenceBrokerRecord)."""

    API_KEY: ClassVar[int] = 8
    VERSION: ClassVar[int] = 0

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    """A topic was deleted, with its partitions and configs (RemoveTopicRecord)."""

    API_KEY: ClassVar[int] = 9
    VERSION: ClassVar[int] = 0

    topic_id: UUID


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """One configuration key of a resource set, or deleted when `value` is None (ConfigRecord).

    A broker resource with the empty name holds the cluster-wide defaults, as in Kafka.
    """

    API_KEY: ClassVar[int] = 4
    VERSION: ClassVar[int] = 0

    resource_type: ConfigResourceType
    resource_name: str
    key: str
    value: str | None


@dataclass(frozen=True, slots=True)
class FeatureLevelRecord:
    """A finalized feature level; level 0 removes the feature (FeatureLevelRecord)."""

    API_KEY: ClassVar[int] = 12
    VERSION: ClassVar[int] = 0

    name: str
    level: int


@dataclass(frozen=True, slots=True)
class ProducerIdsRecord:
    """A block of producer ids was handed out; `next_producer_id` starts the next block."""

    API_KEY: ClassVar[int] = 15
    VERSION: ClassVar[int] = 0

    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord:
    """A registered broker's fencing or controlled-shutdown state changed.

    `fenced`: True fenced, False unfenced, None unchanged. `in_controlled_shutdown`: True entered
    controlled shutdown, None unchanged; Kafka's record cannot leave controlled shutdown (the
    broker re-registers instead), so False is refused.
    """

    API_KEY: ClassVar[int] = 17
    VERSION: ClassVar[int] = 1

    broker_id: int
    broker_epoch: int
    fenced: bool | None = None
    in_controlled_shutdown: bool | None = None

    def __post_init__(self) -> None:
        if self.in_controlled_shutdown is False:
            raise ValueError("a broker leaves controlled shutdown only by registering again")


class ScramMechanism(IntEnum):
    """Kafka's ids of the SCRAM mechanisms (`ScramMechanism.type`), as the records store them."""

    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        """The SASL name: SCRAM-SHA-256 or SCRAM-SHA-512."""
        return self.name.replace("_", "-")

    @classmethod
    def from_mechanism_name(cls, name: str) -> ScramMechanism | None:
        """The mechanism of SASL name `name`; None if it is not a SCRAM mechanism we know."""
        return cls.__members__.get(name.replace("-", "_"))


@dataclass(frozen=True, slots=True)
class UserScramCredentialRecord:
    """A user's SCRAM credential for one mechanism was set (UserScramCredentialRecord).

    The RFC 5802 server-side credential: what verifies a client's proof and proves the server,
    never the password nor the salted password (Kafka's record since 3.5; an older draft of
    the spec carried the salted password, which is a password equivalent).
    """

    API_KEY: ClassVar[int] = 11
    VERSION: ClassVar[int] = 0

    name: str
    mechanism: ScramMechanism
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        # The keys verify passwords offline: they stay out of logs and reprs.
        return (
            f"UserScramCredentialRecord(name={self.name!r}, "
            f"mechanism={self.mechanism.mechanism_name}, iterations={self.iterations})"
        )


@dataclass(frozen=True, slots=True)
class RemoveUserScramCredentialRecord:
    """A user's SCRAM credential for one mechanism was deleted."""

    API_KEY: ClassVar[int] = 22
    VERSION: ClassVar[int] = 0

    name: str
    mechanism: ScramMechanism


@dataclass(frozen=True, slots=True)
class NoOpRecord:
    """Nothing: appended by an idle leader so the high watermark keeps moving (KIP-835)."""

    API_KEY: ClassVar[int] = 20
    VERSION: ClassVar[int] = 0


@dataclass(frozen=True, slots=True)
class BeginTransactionRecord:
    """The records from here to the next EndTransactionRecord are one change that no image
    shows a part of (KIP-868's metadata transactions): a change of more records than one
    commit of the metadata log may hand out, such as a topic of thousands of partitions."""

    API_KEY: ClassVar[int] = 23
    VERSION: ClassVar[int] = 0

    name: str | None = None


@dataclass(frozen=True, slots=True)
class EndTransactionRecord:
    """The metadata transaction open since its BeginTransactionRecord is complete."""

    API_KEY: ClassVar[int] = 24
    VERSION: ClassVar[int] = 0


@dataclass(frozen=True, slots=True)
class AbortTransactionRecord:
    """The metadata transaction open since its BeginTransactionRecord is dropped whole: a new
    active controller found it unfinished (its controller lost the quorum mid-append)."""

    API_KEY: ClassVar[int] = 25
    VERSION: ClassVar[int] = 0

    reason: str | None = None


@dataclass(frozen=True, slots=True)
class AccessControlEntryRecord:
    """An ACL was created, with its id (AccessControlEntryRecord)."""

    API_KEY: ClassVar[int] = 18
    VERSION: ClassVar[int] = 0

    acl_id: UUID
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    @classmethod
    def of(cls, acl_id: UUID, acl: AclBinding) -> AccessControlEntryRecord:
        """The record creating `acl` as `acl_id`."""
        return cls(
            acl_id,
            acl.resource_type,
            acl.resource_name,
            acl.pattern_type,
            acl.principal,
            acl.host,
            acl.operation,
            acl.permission_type,
        )

    def binding(self) -> AclBinding:
        """The ACL this record creates."""
        return AclBinding(
            self.resource_type,
            self.resource_name,
            self.pattern_type,
            self.principal,
            self.host,
            self.operation,
            self.permission_type,
        )


@dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord:
    """The ACL `acl_id` was deleted (RemoveAccessControlEntryRecord)."""

    API_KEY: ClassVar[int] = 19
    VERSION: ClassVar[int] = 0

    acl_id: UUID


@dataclass(frozen=True, slots=True)
class ReplicaLogState:
    """One replica's log as its broker reported it for an unclean recovery."""

    broker_id: int
    broker_epoch: int
    last_written_leader_epoch: int
    log_end_offset: int


@dataclass(frozen=True, slots=True)
class UncleanRecoveryRecord:
    """What an unclean recovery saw and did, for every node's event log: written just before
    the PartitionChangeRecord that elects `leader`, so the potential data loss is reported with
    what the controller knew when it chose (the strategy, each answering replica's log); or,
    with `leader` NO_LEADER, when the recovery waits for the replicas in `waiting_for`.

    Not one of Kafka's records (Kafka logs this only on its controller): the api key is far
    above Kafka's so that none of theirs collides with it. Replaying it changes nothing.
    """

    API_KEY: ClassVar[int] = 10_000
    VERSION: ClassVar[int] = 0

    topic_id: UUID
    partition_id: int
    strategy: str
    leader: int
    replica_logs: tuple[ReplicaLogState, ...] = ()
    waiting_for: tuple[int, ...] = ()


MetadataRecord: TypeAlias = (
    RegisterBrokerRecord
    | UnregisterBrokerRecord
    | TopicRecord
    | PartitionRecord
    | PartitionChangeRecord
    | FenceBrokerRecord
    | UnfenceBrokerRecord
    | RemoveTopicRecord
    | ConfigRecord
    | FeatureLevelRecord
    | ProducerIdsRecord
    | BrokerRegistrationChangeRecord
    | NoOpRecord
    | BeginTransactionRecord
    | EndTransactionRecord
    | AbortTransactionRecord
    | UncleanRecoveryRecord
    | AccessControlEntryRecord
    | RemoveAccessControlEntryRecord
    | UserScramCredentialRecord
    | RemoveUserScramCredentialRecord
)


# --- the records as Kafka's specs declare them (kafka-protocol/metadata/*Record.json) -------------


def _resource_type(value: int) -> ConfigResourceType:
    try:
        return ConfigResourceType(value)
    except ValueError:
        raise ValueError(f"unknown config resource type {value}") from None


def _enum_decoder(
    enum_type: type[ResourceType]
    | type[PatternType]
    | type[AclOperation]
    | type[AclPermissionType],
) -> Callable[[int], IntEnum]:
    def decode(value: int) -> IntEnum:
        try:
            return enum_type(value)
        except ValueError:
            raise ValueError(f"unknown {enum_type.__name__} {value}") from None

    return decode


def _scram_mechanism(value: int) -> ScramMechanism:
    try:
        return ScramMechanism(value)
    except ValueError:
        raise SchemaDecodeError(f"unknown SCRAM mechanism {value}") from None


def _leader_change(value: int) -> int | None:
    # PartitionChangeRecord's Leader: -2 (Kafka's NO_LEADER_CHANGE) when the leader did not change.
    return None if value == _NO_LEADER_CHANGE else value


def _elr(value: tuple[int, ...] | None) -> tuple[int, ...]:
    # PartitionRecord's (Last Known) ELR: null and absent both mean empty.
    return value or ()


# BrokerRegistrationChangeRecord's Fenced: 1 fenced, -1 unfenced, 0 no change.
_FENCING_CHANGES: Mapping[int, bool | None] = MappingProxyType({1: True, -1: False, 0: None})


def _fencing(value: int) -> bool | None:
    if value not in _FENCING_CHANGES:
        raise ValueError(f"Fenced is {value}, not -1, 0 or 1")
    return _FENCING_CHANGES[value]


def _fencing_value(fenced: bool) -> int:
    return 1 if fenced else -1


def _controlled_shutdown(value: int) -> bool | None:
    # InControlledShutdown: 1 entered controlled shutdown, 0 no change.
    if value not in (0, 1):
        raise ValueError(f"InControlledShutdown is {value}, not 0 or 1")
    return True if value else None


_BROKER_IDS = Array(INT32)
_NULLABLE = "0+"

_SCHEMAS: tuple[tuple[type[MetadataRecord], str, Struct], ...] = (
    (
        RegisterBrokerRecord,
        "0-3",
        Struct(
            RegisterBrokerRecord,
            (
                Field("broker_id", INT32),
                Field("is_migrating_zk_broker", BOOL, versions="2+", default=False, ignored=True),
                Field("incarnation_id", UUID_TYPE),
                Field("broker_epoch", INT64),
                Field(
                    "listeners",
                    Array(
                        Struct(
                            BrokerEndpoint,
                            (
                                Field("name", STRING),
                                Field("host", STRING),
                                Field("port", UINT16),
                                Field("security_protocol", INT16),
                            ),
                        )
                    ),
                ),
                Field(
                    "features",
                    Array(
                        Struct(
                            BrokerFeature,
                            (
                                Field("name", STRING),
                                Field("min_supported_version", INT16),
                                Field("max_supported_version", INT16),
                            ),
                        )
                    ),
                ),
                Field("rack", STRING, nullable=_NULLABLE),
                Field("fenced", BOOL, default=True),
                Field("in_controlled_shutdown", BOOL, versions="1+", default=False),
                # LogDirs (v3+, tag 0): one log directory per node here, never written.
            ),
        ),
    ),
    (
        UnregisterBrokerRecord,
        "0",
        Struct(UnregisterBrokerRecord, (Field("broker_id", INT32), Field("broker_epoch", INT64))),
    ),
    (
        TopicRecord,
        "0",
        Struct(TopicRecord, (Field("name", STRING), Field("topic_id", UUID_TYPE))),
    ),
    (
        PartitionRecord,
        "0-2",
        Struct(
            PartitionRecord,
            (
                Field("partition_id", INT32),
                Field("topic_id", UUID_TYPE),
                Field("replicas", _BROKER_IDS),
                Field("isr", _BROKER_IDS),
                Field("removing_replicas", _BROKER_IDS),
                Field("adding_replicas", _BROKER_IDS),
                Field("leader", INT32),
                # LeaderRecoveryState (tag 0) is not modelled: never written, skipped when read.
                Field("leader_epoch", INT32),
                Field("partition_epoch", INT32),
                # One log directory per node here, so no assignment (Kafka allows empty).
                Field("directories", Array(UUID_TYPE), versions="1+", default=(), ignored=True),
                # As Kafka does, the ELR fields are written only when not empty.
                Field(
                    "elr", _BROKER_IDS, versions="2+", nullable="2+", tag=1, default=(), decode=_elr
                ),
                Field(
                    "last_known_elr",
                    _BROKER_IDS,
                    versions="2+",
                    nullable="2+",
                    tag=2,
                    default=(),
                    decode=_elr,
                ),
            ),
        ),
    ),
    (
        ConfigRecord,
        "0",
        Struct(
            ConfigRecord,
            (
                Field("resource_type", INT8, decode=_resource_type),
                Field("resource_name", STRING),
                Field("key", STRING),
                Field("value", STRING, nullable=_NULLABLE),
            ),
        ),
    ),
    (
        PartitionChangeRecord,
        "0-2",
        Struct(
            PartitionChangeRecord,
            (
                Field("partition_id", INT32),
                Field("topic_id", UUID_TYPE),
                # Every other field is tagged and written only when it changed: its default
                # (None) is "unchanged". LeaderRecoveryState (5) and Directories (8) are not
                # modelled.
                Field("isr", _BROKER_IDS, nullable=_NULLABLE, tag=0, default=None),
                Field("leader", INT32, tag=1, default=None, decode=_leader_change),
                Field("replicas", _BROKER_IDS, nullable=_NULLABLE, tag=2, default=None),
                Field("removing_replicas", _BROKER_IDS, nullable=_NULLABLE, tag=3, default=None),
                Field("adding_replicas", _BROKER_IDS, nullable=_NULLABLE, tag=4, default=None),
                Field("elr", _BROKER_IDS, versions="2+", nullable="2+", tag=6, default=None),
                Field(
                    "last_known_elr", _BROKER_IDS, versions="2+", nullable="2+", tag=7, default=None
                ),
            ),
        ),
    ),
    (
        FenceBrokerRecord,
        "0",
        Struct(FenceBrokerRecord, (Field("broker_id", INT32), Field("broker_epoch", INT64))),
    ),
    (
        UnfenceBrokerRecord,
        "0",
        Struct(UnfenceBrokerRecord, (Field("broker_id", INT32), Field("broker_epoch", INT64))),
    ),
    (RemoveTopicRecord, "0", Struct(RemoveTopicRecord, (Field("topic_id", UUID_TYPE),))),
    (
        FeatureLevelRecord,
        "0",
        Struct(FeatureLevelRecord, (Field("name", STRING), Field("level", INT16))),
    ),
    (
        ProducerIdsRecord,
        "0",
        Struct(
            ProducerIdsRecord,
            (
                Field("broker_id", INT32),
                Field("broker_epoch", INT64),
                Field("next_producer_id", INT64),
            ),
        ),
    ),
    (
        BrokerRegistrationChangeRecord,
        "0-2",
        Struct(
            BrokerRegistrationChangeRecord,
            (
                Field("broker_id", INT32),
                Field("broker_epoch", INT64),
                Field("fenced", INT8, tag=0, default=None, decode=_fencing, encode=_fencing_value),
                Field(
                    "in_controlled_shutdown",
                    INT8,
                    versions="1+",
                    tag=1,
                    default=None,
                    decode=_controlled_shutdown,
                    encode=int,
                ),
                # LogDirs (v2+, tag 2) is not modelled.
            ),
        ),
    ),
    (NoOpRecord, "0", Struct(NoOpRecord, ())),
    (
        BeginTransactionRecord,
        "0",
        Struct(
            BeginTransactionRecord,
            (Field("name", STRING, nullable=_NULLABLE, tag=0, default=None),),
        ),
    ),
    (EndTransactionRecord, "0", Struct(EndTransactionRecord, ())),
    (
        AbortTransactionRecord,
        "0",
        Struct(
            AbortTransactionRecord,
            (Field("reason", STRING, nullable=_NULLABLE, tag=0, default=None),),
        ),
    ),
    (
        AccessControlEntryRecord,
        "0",
        Struct(
            AccessControlEntryRecord,
            (
                Field("acl_id", UUID_TYPE),
                Field("resource_type", INT8, decode=_enum_decoder(ResourceType)),
                Field("resource_name", STRING),
                Field("pattern_type", INT8, decode=_enum_decoder(PatternType)),
                Field("principal", STRING),
                Field("host", STRING),
                Field("operation", INT8, decode=_enum_decoder(AclOperation)),
                Field("permission_type", INT8, decode=_enum_decoder(AclPermissionType)),
            ),
        ),
    ),
    (
        RemoveAccessControlEntryRecord,
        "0",
        Struct(RemoveAccessControlEntryRecord, (Field("acl_id", UUID_TYPE),)),
    ),
    (
        UserScramCredentialRecord,
        "0",
        Struct(
            UserScramCredentialRecord,
            (
                Field("name", STRING),
                Field("mechanism", INT8, decode=_scram_mechanism),
                Field("salt", BYTES),
                Field("stored_key", BYTES),
                Field("server_key", BYTES),
                Field("iterations", INT32),
            ),
        ),
    ),
    (
        RemoveUserScramCredentialRecord,
        "0",
        Struct(
            RemoveUserScramCredentialRecord,
            (Field("name", STRING), Field("mechanism", INT8, decode=_scram_mechanism)),
        ),
    ),
    (
        UncleanRecoveryRecord,
        "0",
        Struct(
            UncleanRecoveryRecord,
            (
                Field("topic_id", UUID_TYPE),
                Field("partition_id", INT32),
                Field("strategy", STRING),
                Field("leader", INT32),
                Field(
                    "replica_logs",
                    Array(
                        Struct(
                            ReplicaLogState,
                            (
                                Field("broker_id", INT32),
                                Field("broker_epoch", INT64),
                                Field("last_written_leader_epoch", INT32),
                                Field("log_end_offset", INT64),
                            ),
                        )
                    ),
                ),
                Field("waiting_for", _BROKER_IDS),
            ),
        ),
    ),
)

# Every metadata record version is flexible.
_CODECS: Mapping[type[MetadataRecord], Codec] = {
    record_type: Codec(schema, versions, flexible="0+")
    for record_type, versions, schema in _SCHEMAS
}
# The registry by record type (api key), as the frame names it.
RECORD_TYPES: Mapping[int, type[MetadataRecord]] = MappingProxyType(
    {record_type.API_KEY: record_type for record_type in _CODECS}
)
_BY_API_KEY = {record_type.API_KEY: codec for record_type, codec in _CODECS.items()}
# What starts each type's entries: frame version, api key, version (all below 128: one byte each).
_HEADERS = {
    record_type: bytes((FRAME_VERSION, record_type.API_KEY, record_type.VERSION))
    if record_type.API_KEY < 0x80
    else bytes((FRAME_VERSION, 0x80 | record_type.API_KEY & 0x7F, record_type.API_KEY >> 7))
    + bytes((record_type.VERSION,))
    for record_type in _CODECS
}


def encode_record(record: MetadataRecord) -> bytes:
    """The framed bytes of `record`: one metadata-log entry's data."""
    record_type = type(record)
    out = bytearray(_HEADERS[record_type])
    _CODECS[record_type].writer(record_type.VERSION)(record, out)
    return bytes(out)


def decode_record(data: bytes) -> MetadataRecord:
    """The record framed in `data`; `RecordDecodeError` if it is not one this codec reads."""
    try:
        frame_version, pos = read_uvarint(data, 0)
        if frame_version != FRAME_VERSION:
            raise RecordDecodeError(f"unknown metadata record frame version {frame_version}")
        api_key, pos = read_uvarint(data, pos)
        version, pos = read_uvarint(data, pos)
    except IndexError:
        raise RecordDecodeError(f"record truncated in its frame: {bytes(data)!r}") from None
    except SchemaDecodeError as error:
        raise RecordDecodeError(str(error)) from error
    codec = _BY_API_KEY.get(api_key)
    if codec is None:
        raise RecordDecodeError(f"unknown metadata record type {api_key}")
    if not codec.supports(version):
        raise RecordDecodeError(
            f"unsupported version {version} of {codec.name} (type {api_key}); "
            f"this node reads versions {codec.versions}"
        )
    try:
        record, end = codec.read(data, pos, version)
    except SchemaDecodeError as error:
        raise RecordDecodeError(str(error)) from error
    if end != len(data):
        raise RecordDecodeError(f"{len(data) - end} bytes left after {codec.name}")
    result: MetadataRecord = record
    return result
