"""Offset planning without Spark: canonical offsets, ranges, splitting, rate limits, data loss."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from spark_connector.planning import (
    OffsetRange,
    TopicPartition,
    canonical,
    from_offset_json,
    offsets_between,
    ranges_between,
    rate_limited,
    reconcile,
    split_ranges,
)

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
A10 = TopicPartition("a", 10)
B0 = TopicPartition("b", 0)

partition_offsets = st.dictionaries(
    st.builds(TopicPartition, st.sampled_from(["a", "b", "orders"]), st.integers(0, 20)),
    st.integers(0, 10**6),
    max_size=12,
)


def test_canonical_offsets_sort_keys_at_both_levels() -> None:
    offsets = canonical({B0: 5, A10: 7, A1: 3, A0: 1})
    assert json.dumps(offsets) == '{"a": {"0": 1, "1": 3, "10": 7}, "b": {"0": 5}}'


@given(partition_offsets)
def test_canonical_json_does_not_depend_on_insertion_order(
    offsets: dict[TopicPartition, int],
) -> None:
    reordered = dict(reversed(list(offsets.items())))
    text = json.dumps(canonical(offsets))
    assert text == json.dumps(canonical(reordered))
    assert text == json.dumps(canonical(offsets), sort_keys=True)
    # What Spark stores in the checkpoint comes back as the same offsets.
    assert from_offset_json(json.loads(text)) == offsets


def test_ranges_between_skips_partitions_without_new_offsets() -> None:
    assert ranges_between({A0: 5, A1: 7, B0: 0}, {A0: 9, A1: 7, B0: 2}) == [
        OffsetRange("a", 0, 5, 9),
        OffsetRange("b", 0, 0, 2),
    ]


def test_split_ranges_reaches_min_partitions_by_size() -> None:
    ranges = [OffsetRange("a", 0, 0, 900), OffsetRange("a", 1, 100, 200)]
    pieces = split_ranges(ranges, 10)
    # 10 pieces in proportion: the big range in 9, the small one whole.
    assert [(p.partition, p.start, p.end) for p in pieces] == [
        (0, 0, 100),
        (0, 100, 200),
        (0, 200, 300),
        (0, 300, 400),
        (0, 400, 500),
        (0, 500, 600),
        (0, 600, 700),
        (0, 700, 800),
        (0, 800, 900),
        (1, 100, 200),
    ]


def test_split_ranges_leaves_enough_ranges_alone_and_drops_empty_ones() -> None:
    ranges = [OffsetRange("a", 0, 0, 10), OffsetRange("a", 1, 4, 4), OffsetRange("b", 0, 0, 3)]
    assert split_ranges(ranges, None) == [ranges[0], ranges[2]]
    assert split_ranges(ranges, 2) == [ranges[0], ranges[2]]


@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 5000)), min_size=1, max_size=6),
    st.integers(1, 40),
)
def test_split_ranges_covers_every_offset_once(
    bounds: list[tuple[int, int]], min_partitions: int
) -> None:
    ranges = [OffsetRange("t", i, start, start + size) for i, (start, size) in enumerate(bounds)]
    pieces = split_ranges(ranges, min_partitions)
    assert pieces == split_ranges(ranges, min_partitions)  # deterministic
    for offset_range in ranges:
        own = [p for p in pieces if p.partition == offset_range.partition]
        covered = [offset for p in own for offset in range(p.start, p.end)]
        assert covered == list(range(offset_range.start, offset_range.end))
    if sum(r.size for r in ranges) >= min_partitions:
        assert len(pieces) >= min_partitions


def test_rate_limit_shares_by_available_offsets() -> None:
    end = rate_limited({A0: 0, A1: 100, B0: 7}, {A0: 300, A1: 200, B0: 7}, 40)
    assert end == {A0: 30, A1: 110, B0: 7}


def test_rate_limit_passes_everything_under_the_limit() -> None:
    latest = {A0: 10, A1: 20}
    assert rate_limited({A0: 5, A1: 15}, latest, 10) == latest


@given(partition_offsets, st.data(), st.integers(1, 10**5))
def test_rate_limit_never_exceeds_the_limit_and_always_progresses(
    start: dict[TopicPartition, int], data: st.DataObject, limit: int
) -> None:
    latest = {tp: offset + data.draw(st.integers(0, 10**5)) for tp, offset in start.items()}
    end = rate_limited(start, latest, limit)
    read = offsets_between(start, end)
    available = offsets_between(start, latest)
    assert read == min(limit, available)
    assert all(start[tp] <= end[tp] <= latest[tp] for tp in start)


def test_reconcile_reports_deleted_topics_and_moved_log_starts() -> None:
    resumed, losses = reconcile(
        {A0: 5, A1: 50, B0: 3},
        earliest={A0: 0, A1: 70, TopicPartition("c", 0): 4},
        latest={A0: 9, A1: 90, TopicPartition("c", 0): 8},
    )
    assert resumed == {A0: 5, A1: 70, TopicPartition("c", 0): 4}
    assert [(loss.topic_partition, loss.message) for loss in losses] == [
        (
            A1,
            "offsets 50..69 of partition a-1 were deleted before they were read "
            "(the log now starts at 70)",
        ),
        (B0, "partition b-0 is gone (its topic was deleted?)"),
    ]


def test_reconcile_reports_a_recreated_topic() -> None:
    resumed, losses = reconcile({A0: 500}, earliest={A0: 0}, latest={A0: 20})
    assert resumed == {A0: 0}
    assert "ends at 20, before offset 500" in losses[0].message
