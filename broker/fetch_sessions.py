"""KIP-227 incremental fetch sessions on the leader, as a pure state machine (no I/O, no clock).

A client opens a session with a full Fetch (session id 0, epoch 0); the broker caches the
partitions it asked for, with their fetch positions and the high watermark and log start offset
it last answered, and answers with a session id. Each later Fetch of that session (epoch 1, 2,
...) names only the partitions whose fetch position changed, and those to forget; the broker
reads every partition of the session but answers only those with something new: records, a
changed high watermark or log start offset, an error, a diverging epoch or a preferred read
replica (Kafka's `CachedPartition.maybeUpdateResponseData`). The rules follow Kafka's
`FetchManager.newContext` and `FetchSessionCache`:

- epoch -1 (FINAL): a sessionless fetch; a session id given with it is closed.
- epoch 0 (INITIAL): a full fetch; a session id given is closed, and a new session is created
  if the cache has a free slot, or can evict one: first one unused for longer than the
  eviction time, else the least valuable evictable session (one older than the eviction time;
  a follower's session is never evicted for a consumer's) when it is worth less than the new
  one (followers first, then more partitions).
- any other epoch: the session must exist (else FETCH_SESSION_ID_NOT_FOUND) and expect that
  epoch (else INVALID_FETCH_SESSION_EPOCH), and use topic ids exactly when the request does
  (else FETCH_SESSION_TOPIC_ID_ERROR); a session left with no partition is closed and the
  fetch answered sessionless.

The leader avoids reading what cannot have changed: the journal (`broker.partition_changes`)
numbers every change of a hosted partition (an append, a high watermark, a log start, a role),
and an incremental fetch reads only the partitions it names, those changed since the session
last read, and those whose last read was not settled (records left, an error, records a
replication quota held back).
Every change a read could see is noticed (`Partition._wake`: appends, high watermarks, log
starts moved by DeleteRecords or retention, truncations, roles), so nothing else is read.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from kio.schema.errors import ErrorCode

from broker.fetch_session_handler import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch
from broker.partition_changes import PartitionChanges, PartitionName
from broker.replica_manager import FetchPartition, FetchResult

# Kafka's defaults: max.incremental.fetch.session.cache.slots, and the eviction time the
# broker gives its FetchSessionCache.
DEFAULT_CACHE_SLOTS = 1000
EVICTION_MS = 120_000
# How often a follower's session records its fetch of each partition it does not read (well
# below replica.lag.time.max.ms: an idle partition's followers stay caught up, and one that
# may join the ISR again is seen to). Spread over its fetches, a share of them each time.
FOLLOWER_REFRESH_MS = 1_000

# A partition as a session knows it: by topic id (Fetch v13+) or by topic name, and index.
SessionKey = tuple[UUID | str, int]


@dataclass(frozen=True, slots=True)
class RequestedPartition:
    """A partition a Fetch names: its key in the session, its topic name (None: an unknown
    topic id) and what the replica manager is asked for it (None when the name is unknown)."""

    key: SessionKey
    topic: str | None
    topic_id: UUID | None
    fetch: FetchPartition | None


@dataclass(slots=True)
class CachedPartition:
    """A partition of a session: what its client last asked for, and what it was last told."""

    requested: RequestedPartition
    high_watermark: int = -1
    log_start_offset: int = -1
    # When it last got records: partitions that did are read after the others (no starvation).
    served: int = 0


@dataclass(slots=True)
class FetchSession:
    """One cached session: its id, the epoch its next fetch must carry, and its partitions."""

    session_id: int
    privileged: bool
    uses_topic_ids: bool
    created_ms: int
    last_used_ms: int
    epoch: int = 1
    partitions: dict[SessionKey, CachedPartition] = field(default_factory=dict)
    # The key of each partition whose topic is known, by topic name (for the change notices).
    keys: dict[PartitionName, SessionKey] = field(default_factory=dict)
    # The cache's index of the sessions holding each partition, kept up to date by this one.
    holders: dict[PartitionName, set[int]] = field(default_factory=dict)
    # Read again on the next fetch whatever the change notices say (new, records left, error).
    # (A dict, for a reading order that does not depend on hashing.)
    unsettled: dict[SessionKey, None] = field(default_factory=dict)
    # The change number up to which its partitions were read; when a follower's fetches
    # were last looked at for recording, where the next share to record starts, and the
    # part of a partition owed since (in partition-milliseconds, below FOLLOWER_REFRESH_MS).
    read_up_to: int = 0
    refreshed_ms: int = 0
    refresh_cursor: int = 0
    refresh_owed: int = 0
    served_count: int = 0

    def add(self, partition: RequestedPartition) -> None:
        """Cache `partition` as asked, or update what its client asks for now."""
        cached = self.partitions.get(partition.key)
        if cached is None:
            self.partitions[partition.key] = CachedPartition(partition)
        else:
            cached.requested = partition
        self.unsettled[partition.key] = None
        if partition.topic is not None:
            name = (partition.topic, partition.key[1])
            self.keys[name] = partition.key
            self.holders.setdefault(name, set()).add(self.session_id)

    def forget(self, key: SessionKey) -> None:
        self.unsettled.pop(key, None)
        cached = self.partitions.pop(key, None)
        if cached is not None and cached.requested.topic is not None:
            name = (cached.requested.topic, key[1])
            self.keys.pop(name, None)
            self._unhold(name)

    def release(self) -> None:
        """Leave the cache's index: the session is closed or evicted."""
        for name in self.keys:
            self._unhold(name)
        self.keys = {}

    def _unhold(self, name: PartitionName) -> None:
        holders = self.holders.get(name)
        if holders is not None:
            holders.discard(self.session_id)
            if not holders:
                del self.holders[name]

    def evictable_key(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey order: consumers before followers, then fewer partitions."""
        return (self.privileged, len(self.partitions), self.session_id)


@dataclass(slots=True)
class FetchContext:
    """How one Fetch is answered: an error for the whole request, or the partitions to read,
    then the answer's partitions chosen by `respond`."""

    error: ErrorCode = ErrorCode.none
    # The session of an incremental fetch, or the one a full fetch created (after `respond`).
    session: FetchSession | None = None
    incremental: bool = False
    # The partitions a full or sessionless fetch answers, in request order.
    requested: list[RequestedPartition] = field(default_factory=list)
    # A full fetch: the cache that opens its session once answered, and what kind it is.
    opens_in: FetchSessionCache | None = None
    privileged: bool = False
    uses_topic_ids: bool = False

    @property
    def session_id(self) -> int:
        return INVALID_SESSION_ID if self.session is None else self.session.session_id

    def follower_refresh(self, now_ms: int) -> list[FetchPartition]:
        """For a follower's incremental fetch: what it asks of the next share of its
        session's partitions, read or not, whose fetch is recorded now as a read records it
        (Kafka reads them all on every fetch). The shares go round the session in order,
        each as large as the time since the previous one asks (whole partitions; the rest
        is owed to the next), so that every partition is recorded at least once per
        FOLLOWER_REFRESH_MS plus the gap between two fetches, no fetch records them all at
        once while fetches come often (a pause of the event loop, and of every other
        request, as long as the session is large), and a small session's frequent fetches
        record nothing most of the time. None for a consumer's fetch or a full one."""
        session = self.session
        if not self.incremental or session is None or not session.privileged:
            return []
        partitions = session.partitions
        elapsed = now_ms - session.refreshed_ms
        if elapsed <= 0 or not partitions:
            return []
        size = len(partitions)
        session.refreshed_ms = now_ms
        owed = session.refresh_owed + size * elapsed
        share, session.refresh_owed = divmod(owed, FOLLOWER_REFRESH_MS)
        if share >= size:
            share, session.refresh_owed = size, 0
        if not share:
            return []
        start = session.refresh_cursor % size
        session.refresh_cursor = (start + share) % size
        chosen = itertools.islice(
            itertools.chain(
                itertools.islice(partitions.values(), start, None), partitions.values()
            ),
            share,
        )
        return [cached.requested.fetch for cached in chosen if cached.requested.fetch is not None]

    def to_read(self, changes: PartitionChanges) -> list[RequestedPartition]:
        """The partitions to read for this fetch (an incremental one: only those that may have
        something new); call again after a wait to read what changed meanwhile."""
        session = self.session
        if not self.incremental or session is None:
            return self.requested
        partitions = session.partitions
        due = dict(session.unsettled)
        keys = session.keys
        due.update((keys[name], None) for name in changes.since(session.read_up_to) if name in keys)
        session.read_up_to = changes.sequence
        # Those that got records last are read after the others (a stable sort otherwise).
        ordered = sorted(due, key=lambda key: partitions[key].served)
        return [partitions[key].requested for key in ordered]

    def respond(
        self,
        answers: Sequence[tuple[RequestedPartition, FetchResult]],
        max_bytes: int,
        now_ms: int,
    ) -> list[tuple[RequestedPartition, FetchResult]]:
        """The partitions the response carries, given each read partition's answer in read
        order within the fetch's `max_bytes`: all for a full or sessionless fetch (a full one
        then opens its session, if the cache lets it), those with something new for an
        incremental one."""
        if self.error is not ErrorCode.none:
            return []
        if self.opens_in is not None:
            self.session = self.opens_in.create(
                self.requested,
                answers,
                max_bytes,
                now_ms,
                privileged=self.privileged,
                uses_topic_ids=self.uses_topic_ids,
            )
            return list(answers)
        session = self.session
        if not self.incremental or session is None:
            return list(answers)
        return [
            (requested, result)
            for requested, result, cached in _update_cached(session, answers, max_bytes)
            if _must_answer(cached, result)
        ]


def _update_cached(
    session: FetchSession,
    answers: Sequence[tuple[RequestedPartition, FetchResult]],
    max_bytes: int,
) -> Iterator[tuple[RequestedPartition, FetchResult, CachedPartition]]:
    """Each answer of a session's partition with its cached partition, which is marked for
    reading again when it is not settled: it got records (more may follow: it is read after
    the others next time), failed, or was read with less room than it asked for (the
    response was full, so it may have been left out)."""
    room = max_bytes
    for requested, result in answers:
        cached = session.partitions.get(requested.key)
        if cached is None:
            continue
        fetch = cached.requested.fetch
        squeezed = fetch is not None and room < fetch.max_bytes
        if result.records:
            room = max(0, room - len(result.records))
            session.served_count += 1
            cached.served = session.served_count
        if squeezed or _unsettled(cached, result):
            session.unsettled[requested.key] = None
        else:
            session.unsettled.pop(requested.key, None)
        yield requested, result, cached


def _must_answer(cached: CachedPartition, result: FetchResult) -> bool:
    """Kafka's maybeUpdateResponseData: whether an incremental answer carries the partition,
    updating what the session last told the client."""
    must = bool(result.records)
    if cached.high_watermark != result.high_watermark:
        cached.high_watermark = result.high_watermark
        must = True
    if cached.log_start_offset != result.log_start_offset:
        cached.log_start_offset = result.log_start_offset
        must = True
    if result.preferred_read_replica >= 0 or result.diverging_epoch is not None:
        must = True
    if result.error is not ErrorCode.none:
        # Told again once the error is gone, whatever the high watermark is then.
        cached.high_watermark = -1
        must = True
    return must


def _unsettled(cached: CachedPartition, result: FetchResult) -> bool:
    """Whether a partition must be read on the next fetch even if no change is noticed: it got
    records (more may be left), failed, was answered with something to act on, or is bounded by
    the leader's replication quota (which may hold its records back now and not later)."""
    return (
        bool(result.records)
        or result.error is not ErrorCode.none
        or result.diverging_epoch is not None
        or result.preferred_read_replica >= 0
        or result.throttled
        or cached.requested.fetch is None
    )


class FetchSessionCache:
    """The broker's fetch sessions, at most `max_slots` (Kafka's
    `max.incremental.fetch.session.cache.slots`); `rng` draws the session ids."""

    def __init__(
        self,
        max_slots: int = DEFAULT_CACHE_SLOTS,
        eviction_ms: int = EVICTION_MS,
        rng: random.Random | None = None,
    ) -> None:
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self.sessions: dict[int, FetchSession] = {}
        # The ids of the sessions holding each partition (by name): who a change concerns.
        self._holders: dict[PartitionName, set[int]] = {}
        # Counters since the broker started: sessions evicted (Kafka's
        # IncrementalFetchSessionEvictionsPerSec) and fetches answered incrementally.
        self.evictions = 0
        self.incremental_fetches = 0

    def holding(self, name: PartitionName) -> Iterable[int]:
        """The ids of the sessions holding partition `name`."""
        return self._holders.get(name, ())

    @property
    def partition_count(self) -> int:
        """The partitions cached over all sessions (Kafka's NumIncrementalFetchPartitionsCached)."""
        return sum(len(session.partitions) for session in self.sessions.values())

    def new_context(
        self,
        session_id: int,
        epoch: int,
        requested: Sequence[RequestedPartition],
        forgotten: Iterable[SessionKey],
        *,
        uses_topic_ids: bool,
        privileged: bool,
        now_ms: int,
    ) -> FetchContext:
        """How to answer a Fetch of `session_id` at `epoch` naming `requested` and forgetting
        `forgotten` (Kafka's FetchManager.newContext)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self._close(session_id)
            return FetchContext(
                requested=list(requested),
                opens_in=self if epoch == INITIAL_EPOCH else None,
                privileged=privileged,
                uses_topic_ids=uses_topic_ids,
            )
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext(error=ErrorCode.fetch_session_id_not_found)
        if session.epoch != epoch:
            return FetchContext(error=ErrorCode.invalid_fetch_session_epoch)
        if session.uses_topic_ids != uses_topic_ids:
            return FetchContext(error=ErrorCode.fetch_session_topic_id_error)
        for key in forgotten:
            session.forget(key)
        for partition in requested:
            session.add(partition)
        if not session.partitions:
            self._close(session_id)
            return FetchContext(requested=list(requested))
        session.last_used_ms = now_ms
        session.epoch = next_epoch(session.epoch)
        self.incremental_fetches += 1
        return FetchContext(session=session, incremental=True)

    def create(
        self,
        requested: Sequence[RequestedPartition],
        answers: Sequence[tuple[RequestedPartition, FetchResult]],
        max_bytes: int,
        now_ms: int,
        *,
        privileged: bool = False,
        uses_topic_ids: bool = False,
    ) -> FetchSession | None:
        """A new session caching `requested` as `answers` told them, if there is a slot or one
        can be evicted for it; None otherwise (the client goes on with full fetches)."""
        if len(self.sessions) >= self.max_slots and not self._evict_for(
            privileged, len(requested), now_ms
        ):
            return None
        session_id = self._new_session_id()
        session = FetchSession(
            session_id,
            privileged,
            uses_topic_ids,
            created_ms=now_ms,
            last_used_ms=now_ms,
            refreshed_ms=now_ms,
            holders=self._holders,
        )
        for partition in requested:
            session.add(partition)
        for _, result, cached in _update_cached(session, answers, max_bytes):
            _must_answer(cached, result)
        self.sessions[session_id] = session
        return session

    def _evict_for(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Kafka's tryEvict: a stale session, else the least valuable evictable one if the
        new session (`privileged`, `size` partitions) is worth at least as much."""
        sessions = self.sessions.values()
        stalest = min(sessions, key=lambda s: (s.last_used_ms, s.session_id), default=None)
        if stalest is not None and now_ms - stalest.last_used_ms > self.eviction_ms:
            self._evict(stalest)
            return True
        evictable = [
            session
            for session in sessions
            if now_ms - session.created_ms > self.eviction_ms
            and not (privileged and session.privileged)
        ]
        if not evictable:
            return False
        least = min(evictable, key=FetchSession.evictable_key)
        if (privileged, size, 0) < least.evictable_key():
            return False
        self._evict(least)
        return True

    def _evict(self, session: FetchSession) -> None:
        self._close(session.session_id)
        self.evictions += 1

    def _close(self, session_id: int) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.release()

    def _new_session_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, 2**31 - 1)
            if session_id not in self.sessions:
                return session_id
