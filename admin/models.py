"""The admin API's JSON shapes: one pydantic model per request and response."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ErrorResponse(BaseModel):
    """Every error answer: a machine-readable code and a sentence for people."""

    error: str = Field(description="snake_case code, e.g. 'not_found', 'topic_already_exists'")
    message: str


class Health(BaseModel):
    """Liveness or readiness of this node; `reason` says what is missing when not ready."""

    status: str = Field(description="'ok' or 'unavailable'")
    reason: str | None = None


class ReplicaProgress(BaseModel):
    """How far one member of the quorum has replicated the metadata log."""

    id: int
    log_end_offset: int = Field(description="-1 when not yet known to the leader")
    last_caught_up_ms: int = Field(
        description="epoch ms when it last reached the leader's LEO (-1: unknown)"
    )
    last_fetch_ms: int = Field(
        default=-1, description="epoch ms of its last fetch from the leader (-1: unknown)"
    )


class Quorum(BaseModel):
    """The controller quorum; replica progress is the leader's, asked of it by a non-leader."""

    leader_id: int = Field(description="-1 while no leader is known")
    leader_epoch: int
    high_watermark: int
    voters: list[ReplicaProgress]
    observers: list[ReplicaProgress]


class Cluster(BaseModel):
    """The cluster as the answering node's metadata image says."""

    cluster_id: str
    controller_id: int = Field(description="the quorum leader (active controller), -1: unknown")
    metadata_offset: int = Field(description="the image holds every entry below this offset")
    brokers: int = Field(description="registered brokers")
    topics: int


class Broker(BaseModel):
    """A registered broker as the metadata log says."""

    id: int
    epoch: int = Field(description="the broker epoch: offset of its registration record")
    incarnation_id: str
    fenced: bool
    in_controlled_shutdown: bool
    rack: str | None
    listeners: list[str] = Field(description="'NAME://host:port' per advertised listener")


class Partition(BaseModel):
    """One partition's replication state as the metadata log says."""

    partition: int
    leader: int = Field(description="-1 when the partition has no leader")
    leader_epoch: int
    partition_epoch: int
    replicas: list[int]
    isr: list[int]
    elr: list[int]
    last_known_elr: list[int]


class Topic(BaseModel):
    """A topic with its configuration overrides and partitions."""

    name: str
    topic_id: str
    configs: dict[str, str] = Field(description="the topic's overrides of the broker defaults")
    partitions: list[Partition]


class ScramCredential(BaseModel):
    """One SCRAM credential of a user: never its salt nor its keys."""

    mechanism: str = Field(description="SCRAM-SHA-256 or SCRAM-SHA-512")
    iterations: int


class User(BaseModel):
    """A SASL user: the SCRAM credentials it can authenticate with (PLAIN verifies against
    them too)."""

    name: str
    credentials: list[ScramCredential]


class Metadata(BaseModel):
    """The metadata image of the node that answers, as of `metadata_offset`."""

    metadata_offset: int = Field(description="the image holds every entry below this offset")
    brokers: list[Broker]
    topics: list[Topic]


class ReplicaLog(BaseModel):
    """A replica's own view of its log, as the broker hosting it holds it now."""

    broker_id: int = Field(description="the broker whose replica this is")
    is_leader: bool
    leader_epoch: int
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    log_end_offsets: dict[int, int] = Field(
        description="on the leader: broker id -> log end offset as the leader last saw it "
        "(-1: not yet fetched in this leadership); empty on a follower"
    )
    bytes_behind: dict[int, int] = Field(
        description="on the leader: broker id -> bytes between that replica's log end (as its "
        "last fetch said) and the leader's log end (-1: not yet fetched in this leadership); "
        "empty on a follower"
    )


class PartitionDetail(Partition):
    """A partition's metadata with its leader's log view (HW, log start, replicas' LEOs)."""

    topic: str
    high_watermark: int | None = Field(
        description="the leader's high watermark; null when no leader could be asked"
    )
    log_start_offset: int | None = Field(description="the leader's log start; null as above")
    log_end_offsets: dict[int, int] = Field(
        description="broker id -> log end offset as the leader last saw it (-1: unknown)"
    )
    log_view_error: str | None = Field(
        default=None, description="why the log fields are null (no leader, leader unreachable)"
    )


# Request bodies: unknown fields and lax coercions ("5" or 5.0 for 5) are refused, so a
# client's mistake is reported rather than guessed at.
_REQUEST = ConfigDict(extra="forbid", strict=True)

# Kafka's legal topic names; "." and ".." and names colliding with others are the
# controller's to refuse.
TOPIC_NAME_PATTERN = r"^[a-zA-Z0-9._-]{1,249}$"


class CreateTopic(BaseModel):
    """POST /v1/topics: -1 or absent `partitions` / `replication_factor` take the defaults
    (`num.partitions`, `default.replication.factor`)."""

    model_config = _REQUEST

    name: str = Field(pattern=TOPIC_NAME_PATTERN)
    partitions: int = Field(default=-1, ge=-1, le=1_000_000)
    replication_factor: int = Field(default=-1, ge=-1, le=32_767)
    configs: dict[str, str] = Field(default_factory=dict)


class AddPartitions(BaseModel):
    """POST /v1/topics/{name}/partitions: raise the topic to `count` partitions in total."""

    model_config = _REQUEST

    count: int = Field(ge=1, le=1_000_000, description="the new total number of partitions")


class AlterConfigs(BaseModel):
    """PATCH /v1/topics/{name}/configs: overrides to set and to delete (back to the default)."""

    model_config = _REQUEST

    set: dict[str, str] = Field(default_factory=dict)
    delete: list[str] = Field(default_factory=list)


class ElectionType(StrEnum):
    """Preferred: the first assigned replica leads again if it is in the ISR. Unclean: a
    replica outside ISR and ELR may lead when nothing else can (possible data loss)."""

    PREFERRED = "preferred"
    UNCLEAN = "unclean"


class TopicPartitionRef(BaseModel):
    """A partition by topic name and index."""

    model_config = _REQUEST

    topic: str = Field(pattern=TOPIC_NAME_PATTERN)
    partition: int = Field(ge=0, le=2**31 - 1)


class Election(BaseModel):
    """POST /v1/elections."""

    model_config = _REQUEST

    type: ElectionType
    partitions: list[TopicPartitionRef] = Field(min_length=1, max_length=10_000)


class ElectionResult(TopicPartitionRef):
    """One partition's outcome: `error` null when a leader was elected."""

    error: str | None = Field(
        description="null: elected; else Kafka's error in snake_case (election_not_needed, ...)"
    )
    message: str | None


class ElectionResults(BaseModel):
    """The outcome of an election request, per partition."""

    results: list[ElectionResult]


class RecoveryElection(BaseModel):
    """POST /v1/recoveries: elect `leader` as the unclean leader of a leaderless partition."""

    model_config = _REQUEST

    topic: str = Field(pattern=TOPIC_NAME_PATTERN)
    partition: int = Field(ge=0, le=2**31 - 1)
    leader: int = Field(ge=0, le=2**31 - 1, description="the replica (broker id) to elect")


class ReplicaRecoveryView(BaseModel):
    """One replica of a partition, as an unclean recovery sees it."""

    broker: int
    fenced: bool = Field(description="fenced or unknown: it cannot be elected")
    broker_epoch: int | None = Field(description="its registered broker epoch, null if none")
    asked: bool = Field(description="the partition's strategy inspects this replica's log")
    answered: bool = Field(
        description="it answered GetReplicaLogInfo from its registered incarnation just now"
    )
    last_written_leader_epoch: int | None = None
    log_end_offset: int | None = None


class PartitionRecovery(BaseModel):
    """GET /v1/topics/{name}/partitions/{p}/recovery: what an unclean recovery of the
    partition would see and choose now."""

    topic: str
    partition: int
    strategy: str = Field(description="the topic's effective unclean.recovery.strategy")
    needs_recovery: bool = Field(
        description="leaderless with no clean election possible under the strategy"
    )
    leader: int
    isr: list[int]
    elr: list[int]
    last_known_elr: list[int]
    replicas: list[ReplicaRecoveryView]
    best: int | None = Field(
        description="the replica the choice rule ranks first among the answers (highest last "
        "written leader epoch, then log end offset), null when none answered"
    )
    waiting_for: list[int] = Field(description="asked replicas that did not answer")


class Reassignment(BaseModel):
    """POST /v1/reassignments: move a partition to `replicas` (the first is preferred)."""

    model_config = _REQUEST

    topic: str = Field(pattern=TOPIC_NAME_PATTERN)
    partition: int = Field(ge=0, le=2**31 - 1)
    replicas: list[int] = Field(min_length=1, max_length=32_767)


# The replication throttle in bytes/s, for `leader.replication.throttled.rate` and
# `follower.replication.throttled.rate`; 0 removes it.
_THROTTLE = Field(
    default=None,
    ge=0,
    le=2**63 - 1,
    description="sets the cluster-wide replication throttle of the replicas being added, in "
    "bytes/s (leader.replication.throttled.rate and follower.replication.throttled.rate); 0 "
    "removes it; absent leaves it as it is",
)


class StartReassignments(BaseModel):
    """POST /v1/reassignments: one partition (`topic`, `partition`, `replicas`, as
    `Reassignment`) or many (`partitions`), with an optional replication throttle."""

    model_config = _REQUEST

    topic: str | None = Field(default=None, pattern=TOPIC_NAME_PATTERN)
    partition: int | None = Field(default=None, ge=0, le=2**31 - 1)
    replicas: list[int] | None = Field(default=None, min_length=1, max_length=32_767)
    partitions: list[Reassignment] | None = Field(default=None, max_length=10_000)
    throttle_bytes_per_sec: int | None = _THROTTLE

    @model_validator(mode="after")
    def _one_form(self) -> StartReassignments:
        single = (self.topic, self.partition, self.replicas)
        if self.partitions is not None:
            if any(value is not None for value in single):
                raise ValueError("give either topic, partition and replicas, or partitions")
        elif any(value is None for value in single):
            raise ValueError("give topic, partition and replicas, or partitions")
        named = [(move.topic, move.partition) for move in self.partitions or ()]
        if len(set(named)) != len(named):
            raise ValueError("partitions: a partition is named twice")
        return self

    def reassignments(self) -> list[Reassignment]:
        """The partitions to move, whichever form the request took."""
        if self.partitions is not None:
            return self.partitions
        assert self.topic is not None and self.partition is not None and self.replicas
        return [Reassignment(topic=self.topic, partition=self.partition, replicas=self.replicas)]


class RefusedReassignment(BaseModel):
    """A partition the controller would not move, with Kafka's error in snake_case."""

    topic: str
    partition: int
    error: str
    message: str | None


class ReassignmentsStarted(BaseModel):
    """The answer to POST /v1/reassignments (202): what started and what was refused."""

    started: list[Reassignment]
    refused: list[RefusedReassignment] = Field(
        description="partitions the controller refused while it started others (a request whose "
        "every partition is refused gets the error answer instead)"
    )
    throttle_bytes_per_sec: int | None = Field(
        description="the throttle this request set (0: removed); null: left as it was"
    )


class ReassignmentProgress(BaseModel):
    """An in-progress reassignment: during the move `replicas` is the target plus the replicas
    being removed; it completes once every replica being added is in the ISR."""

    topic: str
    partition: int
    replicas: list[int]
    target: list[int]
    adding: list[int]
    removing: list[int]
    leader: int
    isr: list[int]
    bytes_behind: dict[int, int | None] = Field(
        description="per replica being added: the bytes it is behind the leader, as the "
        "leader's log view says; null when unavailable"
    )
    log_view_error: str | None = Field(
        default=None, description="why `bytes_behind` is null (no leader, leader unreachable)"
    )


class Rebalance(BaseModel):
    """POST /v1/rebalance: plan (and unless `dry_run`, start) the moves that even the brokers'
    replica and preferred-leader counts."""

    model_config = _REQUEST

    dry_run: bool = True
    throttle_bytes_per_sec: int | None = _THROTTLE


class PlannedMove(BaseModel):
    """One partition's replica list now (`from`) and in the plan (`to`)."""

    # `from` is a Python keyword: the fields are named otherwise and answered as from / to.
    model_config = ConfigDict(validate_by_name=True, serialize_by_alias=True)

    topic: str
    partition: int
    from_replicas: list[int] = Field(alias="from")
    to_replicas: list[int] = Field(alias="to")
    adding: list[int]
    removing: list[int]


class BrokerLoad(BaseModel):
    """A broker's replica and preferred-leader counts before and after the plan."""

    broker: int
    replicas_before: int
    replicas_after: int
    leaders_before: int
    leaders_after: int


class RebalancePlan(BaseModel):
    """A rebalance or drain plan, and whether it was started."""

    moves: list[PlannedMove] = Field(
        description="the partitions whose replica list changes, in set or only in order"
    )
    replicas_moved: int = Field(description="replicas that change broker")
    brokers: list[BrokerLoad]
    balanced: bool = Field(
        description="replica and preferred-leader counts end within one (rack spread may forbid it)"
    )
    started: bool = Field(description="the moves were started as reassignments")
    detail: str = Field(description="what happens next")


class ReplicaLogAnswer(BaseModel):
    """A replica's log as its broker answered GetReplicaLogInfo."""

    broker: int
    broker_epoch: int
    last_written_leader_epoch: int = Field(description="-1 for an empty log")
    log_end_offset: int


class OffsetRange(BaseModel):
    """Offsets from `start` (inclusive) to `end` (exclusive)."""

    start: int
    end: int


class Event(BaseModel):
    """A state change or a potential data-loss event, derived from the metadata log."""

    offset: int = Field(description="the metadata log offset of the record")
    time: str = Field(
        description="ISO 8601 UTC time when the answering node replayed the record (the "
        "metadata log carries no timestamps; `offset` orders events the same on every node)"
    )
    type: str = Field(
        description="topic_created, topic_deleted, partition_created, leader_changed, "
        "isr_changed, elr_changed, unclean_election, partition_offline, broker_registered, "
        "broker_fenced, broker_unfenced, broker_unregistered, broker_controlled_shutdown, "
        "config_changed, unclean_recovery, unclean_recovery_waiting, reassignment_started, "
        "reassignment_replica_in_sync (`broker` joined the ISR), reassignment_completed, "
        "reassignment_cancelled"
    )
    data_loss_possible: bool = Field(
        description="true when the change may have lost acknowledged data"
    )
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    leader: int | None = None
    previous_leader: int | None = None
    leader_epoch: int | None = None
    partition_epoch: int | None = None
    broker_epoch: int | None = None
    isr: list[int] | None = None
    elr: list[int] | None = None
    last_known_elr: list[int] | None = None
    strategy: str | None = Field(
        default=None,
        description="unclean recovery events: balanced, proactive, manual, or elect_leaders "
        "(an operator's unclean ElectLeaders)",
    )
    replica_logs: list[ReplicaLogAnswer] | None = Field(
        default=None,
        description="unclean recovery events: each answering replica's log as it reported it",
    )
    waiting_for: list[int] | None = Field(
        default=None, description="unclean_recovery_waiting: the replicas that have not answered"
    )
    lost_offsets: OffsetRange | None = Field(
        default=None,
        description="unclean_recovery: the offsets other answering replicas held beyond the "
        "new leader's log end, which they truncate (replicas that did not answer may have held "
        "more); null when none did",
    )
    replicas: list[int] | None = Field(
        default=None, description="reassignment events: the partition's replicas after it"
    )
    adding_replicas: list[int] | None = Field(
        default=None, description="reassignment events: the replicas the move is adding"
    )
    removing_replicas: list[int] | None = Field(
        default=None, description="reassignment events: the replicas the move is removing"
    )
    detail: str | None = None


class AclResourceType(StrEnum):
    """The resource types an ACL names (Kafka's)."""

    TOPIC = "TOPIC"
    GROUP = "GROUP"
    CLUSTER = "CLUSTER"
    TRANSACTIONAL_ID = "TRANSACTIONAL_ID"
    DELEGATION_TOKEN = "DELEGATION_TOKEN"
    USER = "USER"


class AclPatternType(StrEnum):
    """LITERAL names one resource (`*`: all of its type); PREFIXED every name with the prefix."""

    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class AclOperationName(StrEnum):
    """The operations an ACL allows or denies (Kafka's)."""

    ALL = "ALL"
    READ = "READ"
    WRITE = "WRITE"
    CREATE = "CREATE"
    DELETE = "DELETE"
    ALTER = "ALTER"
    DESCRIBE = "DESCRIBE"
    CLUSTER_ACTION = "CLUSTER_ACTION"
    DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
    ALTER_CONFIGS = "ALTER_CONFIGS"
    IDEMPOTENT_WRITE = "IDEMPOTENT_WRITE"
    CREATE_TOKENS = "CREATE_TOKENS"
    DESCRIBE_TOKENS = "DESCRIBE_TOKENS"


class AclPermission(StrEnum):
    """Whether an ACL allows or denies (a DENY wins over every ALLOW)."""

    ALLOW = "ALLOW"
    DENY = "DENY"


class Acl(BaseModel):
    """One ACL (POST /v1/acls creates it; GET lists them): a principal from a host may, or may
    not, do an operation on the resources of a pattern. The CLUSTER resource is named
    `kafka-cluster`."""

    model_config = ConfigDict(extra="forbid")

    resource_type: AclResourceType
    resource_name: str = Field(min_length=1, max_length=32_767)
    pattern_type: AclPatternType = AclPatternType.LITERAL
    principal: str = Field(pattern=r"^[^:]+:.+$", description="type:name, e.g. User:alice, User:*")
    host: str = Field(default="*", min_length=1, description="the client's address, or *")
    operation: AclOperationName
    permission: AclPermission = AclPermission.ALLOW


class AclFilter(BaseModel):
    """DELETE /v1/acls: the ACLs to delete; an absent field matches every ACL, and pattern type
    MATCH every pattern that applies to `resource_name`."""

    model_config = ConfigDict(extra="forbid")

    resource_type: AclResourceType | None = None
    resource_name: str | None = None
    pattern_type: AclPatternType | Literal["MATCH"] | None = None
    principal: str | None = None
    host: str | None = None
    operation: AclOperationName | None = None
    permission: AclPermission | None = None


class CreateUser(BaseModel):
    """POST /v1/users: set (add or replace) `name`'s credential for `mechanism`. The password
    is salted here and only the salted form travels to the controller, which keeps the
    derived keys."""

    model_config = _REQUEST

    name: str = Field(min_length=1, max_length=255)
    mechanism: Literal["SCRAM-SHA-256", "SCRAM-SHA-512"]
    password: str = Field(min_length=1, repr=False)
    iterations: int = Field(default=4096, ge=4096, le=16384)
