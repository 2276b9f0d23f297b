"""The admin API's JSON shapes: one pydantic model per request and response."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ErrorResponse(BaseModel):
    """Every error answer: a machine-readable code and a sentence for people."""

    error: str
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
    configs: dict[str, str]
    partitions: list[Partition]


class Metadata(BaseModel):
    """The metadata image of the node that answers, as of `metadata_offset`."""

    metadata_offset: int = Field(description="the image holds every entry below this offset")
    brokers: list[Broker]
    topics: list[Topic]
