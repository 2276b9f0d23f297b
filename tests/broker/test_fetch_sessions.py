"""KIP-227 fetch sessions as pure state machines: the leader's cache and contexts, and the
fetcher's session handler."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from broker.fetch_session_handler import FetchPosition, FetchSessionHandler
from broker.fetch_sessions import (
    FOLLOWER_REFRESH_MS,
    FetchContext,
    FetchSessionCache,
    RequestedPartition,
)
from broker.partition_changes import PartitionChanges
from broker.replica_manager import FetchPartition, FetchResult

TOPIC = "t"
MAX_BYTES = 10_000


def named(partition: int, offset: int = 0, max_bytes: int = 1000) -> RequestedPartition:
    return RequestedPartition(
        (TOPIC, partition), TOPIC, None, FetchPartition(TOPIC, partition, offset, max_bytes)
    )


def answer(high_watermark: int = 0, records: bytes | None = None) -> FetchResult:
    return FetchResult(ErrorCode.none, high_watermark, 0, records)


def open_session(
    cache: FetchSessionCache, partitions: int, now_ms: int = 0, *, privileged: bool = False
) -> int:
    requested = [named(p) for p in range(partitions)]
    context = cache.new_context(
        0, 0, requested, [], uses_topic_ids=False, privileged=privileged, now_ms=now_ms
    )
    context.respond([(p, answer()) for p in requested], MAX_BYTES, now_ms)
    return context.session_id


def incremental(
    cache: FetchSessionCache,
    session_id: int,
    epoch: int,
    requested: list[RequestedPartition] | None = None,
    forgotten: list[tuple[str, int]] | None = None,
    *,
    uses_topic_ids: bool = False,
) -> FetchContext:
    return cache.new_context(
        session_id,
        epoch,
        requested or [],
        forgotten or [],
        uses_topic_ids=uses_topic_ids,
        privileged=False,
        now_ms=0,
    )


def test_a_full_fetch_opens_a_session_and_answers_every_partition() -> None:
    cache = FetchSessionCache()
    requested = [named(0), named(1)]
    context = cache.new_context(
        0, 0, requested, [], uses_topic_ids=False, privileged=True, now_ms=0
    )
    answered = context.respond([(p, answer(5)) for p in requested], MAX_BYTES, 0)
    assert len(answered) == 2
    assert context.session_id in cache.sessions
    assert cache.sessions[context.session_id].epoch == 1
    assert cache.partition_count == 2


def test_a_sessionless_fetch_opens_nothing_and_closes_the_session_it_names() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, 2)
    context = cache.new_context(
        session_id, -1, [named(0)], [], uses_topic_ids=False, privileged=False, now_ms=0
    )
    context.respond([(named(0), answer())], MAX_BYTES, 0)
    assert context.session_id == 0
    assert cache.sessions == {}


def test_a_full_fetch_naming_a_session_closes_it_and_opens_another() -> None:
    cache = FetchSessionCache(rng=random.Random(1))
    first = open_session(cache, 2)
    second = cache.new_context(
        first, 0, [named(0)], [], uses_topic_ids=False, privileged=False, now_ms=0
    )
    second.respond([(named(0), answer())], MAX_BYTES, 0)
    assert set(cache.sessions) == {second.session_id}
    assert second.session_id != first


def test_an_unknown_session_or_a_wrong_epoch_or_id_kind_is_refused() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, 1)
    assert incremental(cache, session_id + 1, 1).error is ErrorCode.fetch_session_id_not_found
    assert incremental(cache, session_id, 2).error is ErrorCode.invalid_fetch_session_epoch
    assert (
        incremental(cache, session_id, 1, uses_topic_ids=True).error
        is ErrorCode.fetch_session_topic_id_error
    )
    refused = incremental(cache, session_id, 2)
    assert refused.respond([], MAX_BYTES, 0) == []
    assert refused.session_id == 0
    # The refusals did not move the session on: epoch 1 is still the one expected.
    assert incremental(cache, session_id, 1).error is ErrorCode.none
    assert incremental(cache, session_id, 2).error is ErrorCode.none


def test_an_incremental_answer_carries_only_what_changed() -> None:
    cache = FetchSessionCache()
    changes = PartitionChanges()
    session_id = open_session(cache, 3)
    context = incremental(cache, session_id, 1, [named(0, offset=4)])
    due = context.to_read(changes)
    # Only the partition named: the others were settled and nothing changed them.
    assert [p.key for p in due] == [(TOPIC, 0)]
    assert context.respond([(due[0], answer())], MAX_BYTES, 0) == []

    changes.changed((TOPIC, 2))
    changes.changed((TOPIC, 1))
    context = incremental(cache, session_id, 2)
    due = context.to_read(changes)
    assert {p.key for p in due} == {(TOPIC, 1), (TOPIC, 2)}
    answered = context.respond(
        [(p, answer(7) if p.key == (TOPIC, 1) else answer()) for p in due], MAX_BYTES, 0
    )
    assert [p.key for p, _ in answered] == [(TOPIC, 1)]


def test_errors_are_always_answered_and_the_recovery_too() -> None:
    cache = FetchSessionCache()
    changes = PartitionChanges()
    session_id = open_session(cache, 1)
    failing = FetchResult(ErrorCode.not_leader_or_follower)
    for epoch in (1, 2):
        context = incremental(cache, session_id, epoch)
        due = context.to_read(changes)
        # A failed partition is read again without any change notice.
        assert [p.key for p in due] == [(TOPIC, 0)] or epoch == 1
        if epoch == 1:
            due = [named(0)]
        assert context.respond([(due[0], failing)], MAX_BYTES, 0) != []
    context = incremental(cache, session_id, 3)
    due = context.to_read(changes)
    assert [p.key for p, _ in context.respond([(due[0], answer())], MAX_BYTES, 0)] == [(TOPIC, 0)]


def test_a_partition_squeezed_out_of_a_full_response_is_read_again() -> None:
    cache = FetchSessionCache()
    changes = PartitionChanges()
    session_id = open_session(cache, 2)
    context = incremental(cache, session_id, 1, [named(0, 1), named(1, 1)])
    due = context.to_read(changes)
    # The first takes almost all the room: the second was read with less than it asks for.
    context.respond(
        [(due[0], answer(50, b"x" * (MAX_BYTES - 10))), (due[1], answer(50))], MAX_BYTES, 0
    )
    context = incremental(cache, session_id, 2)
    due = context.to_read(changes)
    # Both again; the one that got records last, after the other.
    assert [p.key for p in due] == [(TOPIC, 1), (TOPIC, 0)]


def test_forgotten_partitions_leave_the_session_and_an_empty_one_closes() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, 2)
    context = incremental(cache, session_id, 1, forgotten=[(TOPIC, 0)])
    assert list(cache.sessions[session_id].partitions) == [(TOPIC, 1)]
    assert context.incremental
    context = incremental(cache, session_id, 2, forgotten=[(TOPIC, 1)])
    assert not context.incremental
    assert session_id not in cache.sessions


def test_a_settled_partition_is_read_again_only_once_a_change_is_noticed() -> None:
    cache = FetchSessionCache()
    changes = PartitionChanges()
    session_id = open_session(cache, 3)
    context = incremental(cache, session_id, 1)
    assert context.to_read(changes) == []
    changes.changed((TOPIC, 2))
    context = incremental(cache, session_id, 2)
    assert [p.key for p in context.to_read(changes)] == [(TOPIC, 2)]
    context = incremental(cache, session_id, 3)
    assert context.to_read(changes) == []


def test_a_partition_the_replication_quota_bounds_is_read_on_every_fetch() -> None:
    # The quota may hold its records back now and let them through on a later fetch, with no
    # change of the partition in between.
    cache = FetchSessionCache()
    changes = PartitionChanges()
    session_id = open_session(cache, 2)
    context = incremental(cache, session_id, 1)
    context.respond([(named(0), FetchResult(ErrorCode.none, 0, 0, throttled=True))], MAX_BYTES, 0)
    for epoch in (2, 3):
        context = incremental(cache, session_id, epoch)
        assert [p.key for p in context.to_read(changes)] == [(TOPIC, 0)]
        context.respond(
            [(named(0), FetchResult(ErrorCode.none, 0, 0, throttled=True))], MAX_BYTES, 0
        )


def _refresher(
    cache: FetchSessionCache, session_id: int, *, privileged: bool
) -> Callable[[int], list[int]]:
    """A function that sends the session's next incremental fetch (naming nothing) at a
    time and returns the partitions whose fetch that records, in order."""
    epochs = itertools.count(1)

    def refresh(now_ms: int) -> list[int]:
        context = cache.new_context(
            session_id,
            next(epochs),
            [],
            [],
            uses_topic_ids=False,
            privileged=privileged,
            now_ms=now_ms,
        )
        return [fetch.partition_id for fetch in context.follower_refresh(now_ms)]

    return refresh


def test_a_followers_session_records_its_fetch_of_each_partition_in_turn() -> None:
    cache = FetchSessionCache()
    follower = _refresher(cache, open_session(cache, 4, privileged=True), privileged=True)
    consumer = _refresher(cache, open_session(cache, 4), privileged=False)
    # A share as large as the time since the previous one asks, round the session in order.
    assert follower(FOLLOWER_REFRESH_MS // 2) == [0, 1]
    assert follower(FOLLOWER_REFRESH_MS // 2) == []
    assert follower(FOLLOWER_REFRESH_MS // 2 + FOLLOWER_REFRESH_MS // 4) == [2]
    assert follower(FOLLOWER_REFRESH_MS + FOLLOWER_REFRESH_MS // 4) == [3, 0]
    # Never more than the whole session, however long since.
    assert follower(10 * FOLLOWER_REFRESH_MS) == [1, 2, 3, 0]
    # A consumer's fetch state is not the leader's concern.
    assert consumer(5 * FOLLOWER_REFRESH_MS) == []


def test_a_large_followers_session_is_recorded_a_little_on_each_frequent_fetch() -> None:
    cache = FetchSessionCache()
    follower = _refresher(cache, open_session(cache, 2000, privileged=True), privileged=True)
    recorded: list[int] = []
    # A busy partition's follower fetches every few milliseconds.
    for now_ms in range(2, FOLLOWER_REFRESH_MS + 1, 2):
        share = follower(now_ms)
        assert len(share) <= 4
        recorded.extend(share)
    assert sorted(recorded) == list(range(2000))


def test_a_small_followers_session_is_recorded_once_a_second_not_on_every_fetch() -> None:
    cache = FetchSessionCache()
    follower = _refresher(cache, open_session(cache, 1, privileged=True), privileged=True)
    recorded_at = [
        now_ms for now_ms in range(2, 3 * FOLLOWER_REFRESH_MS + 1, 2) if follower(now_ms) == [0]
    ]
    assert recorded_at == [FOLLOWER_REFRESH_MS, 2 * FOLLOWER_REFRESH_MS, 3 * FOLLOWER_REFRESH_MS]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=1, max_value=40),
    st.lists(st.integers(min_value=1, max_value=700), min_size=1, max_size=80),
)
def test_every_partition_of_a_followers_session_is_recorded_within_the_refresh_time(
    partitions: int, gaps: list[int]
) -> None:
    cache = FetchSessionCache()
    follower = _refresher(cache, open_session(cache, partitions, privileged=True), privileged=True)
    # The full fetch that opened the session at 0 read (and recorded) every partition.
    last = dict.fromkeys(range(partitions), 0)
    now_ms = 0
    for gap in gaps:
        now_ms += gap
        share = follower(now_ms)
        assert len(share) <= -(-partitions * gap // FOLLOWER_REFRESH_MS)
        for partition in share:
            last[partition] = now_ms
        # Each was recorded within the refresh time, give or take the gap between fetches.
        assert all(now_ms - at < FOLLOWER_REFRESH_MS + max(gaps) for at in last.values())


def test_the_cache_knows_which_sessions_hold_a_partition() -> None:
    cache = FetchSessionCache(max_slots=2, eviction_ms=100)
    first = open_session(cache, 3, now_ms=0)
    second = open_session(cache, 2, now_ms=0)
    assert set(cache.holding((TOPIC, 1))) == {first, second}
    assert set(cache.holding((TOPIC, 2))) == {first}
    incremental(cache, first, 1, forgotten=[(TOPIC, 1)])
    assert set(cache.holding((TOPIC, 1))) == {second}
    # A full fetch naming a session closes it; an evicted one leaves the index too.
    cache.new_context(second, 0, [], [], uses_topic_ids=False, privileged=False, now_ms=10)
    assert set(cache.holding((TOPIC, 0))) == {first}
    assert open_session(cache, 1, now_ms=300) != 0
    assert open_session(cache, 1, now_ms=600) != 0
    assert first not in cache.sessions
    assert list(cache.holding((TOPIC, 2))) == []


def test_a_full_cache_opens_no_session_unless_one_can_be_evicted() -> None:
    cache = FetchSessionCache(max_slots=1, eviction_ms=100)
    consumer = open_session(cache, 5, now_ms=0)
    assert open_session(cache, 5, now_ms=50) == 0
    # A follower's session evicts a consumer's only once that is older than the eviction time.
    assert open_session(cache, 1, now_ms=50, privileged=True) == 0
    follower = open_session(cache, 1, now_ms=101, privileged=True)
    assert follower != 0
    assert set(cache.sessions) == {follower}
    assert cache.evictions == 1
    assert consumer not in cache.sessions
    # A consumer's session never evicts a follower's that is in use.
    cache.new_context(follower, 1, [], [], uses_topic_ids=False, privileged=True, now_ms=250)
    assert open_session(cache, 100, now_ms=300) == 0
    # One unused for longer than the eviction time goes, whoever asks.
    assert open_session(cache, 1, now_ms=400) != 0
    assert cache.evictions == 2


def test_a_session_cache_of_no_slots_opens_none() -> None:
    cache = FetchSessionCache(max_slots=0)
    assert open_session(cache, 3) == 0


def test_the_changes_since_a_number_are_the_later_ones_latest_first() -> None:
    changes = PartitionChanges()
    changes.changed((TOPIC, 0))
    mark = changes.sequence
    changes.changed((TOPIC, 1))
    changes.changed((TOPIC, 2))
    changes.changed((TOPIC, 1))
    assert list(changes.since(mark)) == [(TOPIC, 1), (TOPIC, 2)]
    assert list(changes.since(changes.sequence)) == []


# -- the property: an incremental session's view equals what a full fetch would say ----------


@dataclass
class _Log:
    log_end: int = 0
    high_watermark: int = 0
    log_start: int = 0
    failing: bool = False


@dataclass
class _Model:
    logs: dict[int, _Log] = field(default_factory=dict)
    changes: PartitionChanges = field(default_factory=PartitionChanges)

    def touch(self, partition: int) -> None:
        self.changes.changed((TOPIC, partition))

    def read(self, partition: RequestedPartition) -> FetchResult:
        assert partition.fetch is not None
        log = self.logs[partition.key[1]]
        if log.failing:
            return FetchResult(ErrorCode.kafka_storage_error)
        pending = max(0, log.log_end - partition.fetch.fetch_offset)
        return FetchResult(
            ErrorCode.none, log.high_watermark, log.log_start, b"x" * min(pending, 50) or None
        )


_steps = st.lists(
    st.tuples(
        st.sampled_from(["append", "commit", "delete", "fail", "recover", "fetch", "forget"]),
        st.integers(0, 5),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(_steps)
def test_an_incremental_view_always_equals_a_full_fetch(steps: list[tuple[str, int]]) -> None:
    model = _Model({p: _Log() for p in range(6)})
    cache = FetchSessionCache()
    # The client: its fetch offsets, and the view the answers gave it.
    offsets = dict.fromkeys(range(6), 0)
    view: dict[int, tuple[int, int]] = {}
    requested = [named(p, offsets[p]) for p in range(6)]
    context = cache.new_context(
        0, 0, requested, [], uses_topic_ids=False, privileged=True, now_ms=0
    )
    answered = context.respond([(p, model.read(p)) for p in requested], MAX_BYTES, 0)
    session_id = context.session_id
    epoch = 1
    pending: set[int] = set()

    def take(answers: list[tuple[RequestedPartition, FetchResult]]) -> None:
        for partition, result in answers:
            index = partition.key[1]
            view[index] = (result.high_watermark, result.log_start_offset)
            if result.records:
                offsets[index] += len(result.records)
                pending.add(index)

    take(answered)
    for action, index in steps:
        log = model.logs[index]
        if action == "append":
            log.log_end += 30
        elif action == "commit":
            log.high_watermark = log.log_end
        elif action == "delete":
            log.log_start = min(log.log_start + 10, log.high_watermark)
        elif action == "fail":
            log.failing = True
        elif action == "recover":
            log.failing = False
        if action in ("append", "commit", "delete", "fail", "recover"):
            model.touch(index)
            continue
        forgotten = [(TOPIC, index)] if action == "forget" and index in offsets else []
        if forgotten:
            del offsets[index]
            view.pop(index, None)
            pending.discard(index)
        context = incremental(
            cache, session_id, epoch, [named(p, offsets[p]) for p in sorted(pending)], forgotten
        )
        if not context.incremental:
            return
        epoch += 1
        pending.clear()
        due = context.to_read(model.changes)
        take(context.respond([(p, model.read(p)) for p in due], MAX_BYTES, 0))
        full = {
            p: (model.logs[p].high_watermark, model.logs[p].log_start)
            for p in offsets
            if not model.logs[p].failing
        }
        assert {p: view[p] for p in full} == full


# -- the fetcher's handler ------------------------------------------------------------------------


def position(offset: int, epoch: int = 0) -> FetchPosition:
    return FetchPosition(offset, epoch, epoch, 0)


def test_the_handler_sends_full_then_only_changes() -> None:
    handler = FetchSessionHandler()
    assert handler.needs_full
    plan = handler.full({(TOPIC, 0): position(0), (TOPIC, 1): position(0)})
    assert plan.full and plan.epoch == 0 and plan.session_id == 0
    handler.answered(plan, 77)
    assert handler.epoch == 1
    plan = handler.incremental(
        {(TOPIC, 0): position(0), (TOPIC, 1): position(5)}, [(TOPIC, 0), (TOPIC, 9)]
    )
    assert (plan.session_id, plan.epoch) == (77, 1)
    assert list(plan.partitions) == [(TOPIC, 1)]
    assert plan.forgotten == ((TOPIC, 0),)
    handler.answered(plan, 77)
    assert list(handler.sent) == [(TOPIC, 1)]
    assert handler.incremental({}, []).epoch == 2


def test_the_handler_starts_again_after_an_error_or_a_closed_session() -> None:
    handler = FetchSessionHandler()
    handler.answered(handler.full({(TOPIC, 0): position(0)}), 5)
    handler.reset()
    plan = handler.full({(TOPIC, 0): position(3)})
    # The full request names the old session, which the leader closes.
    assert (plan.session_id, plan.epoch) == (5, 0)
    handler.answered(plan, 6)
    handler.answered(handler.incremental({}, [(TOPIC, 0)]), 0)
    assert handler.needs_full
    # A full fetch the leader answered without a session leaves the next one full too.
    handler.answered(handler.full({(TOPIC, 0): position(3)}), 0)
    assert handler.needs_full
