"""The client end of a KIP-227 fetch session, as Kafka's FetchSessionHandler: which partitions
the next Fetch names, with which session id and epoch, as a pure state machine.

Without a session (or after any error) the next Fetch is full: every partition, epoch 0 (and
the old session's id, which closes it on the leader). Once a full Fetch was answered with a
session id, each next Fetch is incremental: the epoch the leader expects, the partitions whose
fetch position differs from what the leader's session holds, and the partitions to forget.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1

PartitionKey = tuple[str, int]


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch` (Kafka's FetchMetadata.nextEpoch): it wraps to 1, never 0."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == 2**31 - 1:
        return 1
    return epoch + 1


@dataclass(frozen=True, slots=True)
class FetchPosition:
    """What a Fetch says of a partition: where to read, and the epochs the leader checks."""

    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class FetchPlan:
    """The next Fetch: its session id and epoch, the partitions it names and those it
    forgets."""

    session_id: int
    epoch: int
    partitions: dict[PartitionKey, FetchPosition]
    forgotten: tuple[PartitionKey, ...] = ()

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


@dataclass(slots=True)
class FetchSessionHandler:
    """The session a fetcher holds with one leader."""

    session_id: int = INVALID_SESSION_ID
    # The epoch of the next Fetch: INITIAL_EPOCH while the next one must be full.
    epoch: int = INITIAL_EPOCH
    # The partitions the leader's session holds, as the last answered Fetches left them.
    sent: dict[PartitionKey, FetchPosition] = field(default_factory=dict)

    @property
    def needs_full(self) -> bool:
        return self.epoch == INITIAL_EPOCH

    def full(self, partitions: Mapping[PartitionKey, FetchPosition]) -> FetchPlan:
        """A full Fetch of `partitions` (opening a session, closing the one held)."""
        return FetchPlan(self.session_id, INITIAL_EPOCH, dict(partitions))

    def incremental(
        self,
        changed: Mapping[PartitionKey, FetchPosition],
        leaving: Iterable[PartitionKey],
    ) -> FetchPlan:
        """An incremental Fetch: those of `changed` the session holds at another position (or
        not at all), and those of `leaving` it holds, to forget."""
        sent = self.sent
        named = {key: position for key, position in changed.items() if sent.get(key) != position}
        forgotten = tuple(key for key in dict.fromkeys(leaving) if key in sent and key not in named)
        return FetchPlan(self.session_id, self.epoch, named, forgotten)

    def answered(self, plan: FetchPlan, session_id: int) -> None:
        """The leader answered `plan` without a top-level error, with `session_id`."""
        if plan.full:
            self.session_id = session_id
            self.sent = dict(plan.partitions) if session_id != INVALID_SESSION_ID else {}
            self.epoch = next_epoch(INITIAL_EPOCH) if session_id != INVALID_SESSION_ID else 0
            return
        if session_id != self.session_id:
            # The leader closed the session (it was left empty): start again.
            self.reset()
            return
        for key in plan.forgotten:
            self.sent.pop(key, None)
        self.sent.update(plan.partitions)
        self.epoch = next_epoch(self.epoch)

    def reset(self) -> None:
        """After an error: the next Fetch is full (and closes the session held)."""
        self.epoch = INITIAL_EPOCH
        self.sent = {}
