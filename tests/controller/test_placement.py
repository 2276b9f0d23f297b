"""Replica placement (controller/placement.py) against replication-design-v1.txt's rules.

What is asserted, for the sorted broker list of n brokers:

- leaders: every broker is the preferred replica of floor(P/n) or ceil(P/n) partitions;
- replicas (no racks): every broker holds between P*rf/n - rf and P*rf/n + rf replicas, and
  exactly P*rf/n when n divides P;
- failover (no racks): for any one failed broker, the second replicas of the partitions it
  leads (who take over as leader) are spread over the n - 1 survivors with max - min <= 1, so
  every survivor gets at least one as soon as P >= n * (n - 1);
- racks (set on every broker): each partition spans min(rf, number of racks) racks, on distinct
  brokers; leaders stay balanced within 1;
- determinism, and continuation: placing P partitions then Q more from partition P (same
  start) equals placing P + Q at once;
- error codes: INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from controller.placement import (
    PlacementBroker,
    PlacementError,
    place_replicas,
    rack_alternating_brokers,
    start_for_topic,
    validate_manual_assignment,
)


@st.composite
def cluster(draw: st.DrawFn, min_brokers: int = 1) -> tuple[list[PlacementBroker], int]:
    """Brokers with distinct, unsorted, non-contiguous ids, and a replication factor."""
    ids = draw(st.lists(st.integers(0, 1000), min_size=min_brokers, max_size=9, unique=True))
    replication_factor = draw(st.integers(1, len(ids)))
    return [PlacementBroker(broker_id) for broker_id in ids], replication_factor


@st.composite
def racked_cluster(draw: st.DrawFn) -> tuple[list[PlacementBroker], int]:
    """Brokers all with a rack, racks of uneven sizes, and a replication factor."""
    ids = draw(st.lists(st.integers(0, 1000), min_size=1, max_size=10, unique=True))
    racks = draw(st.lists(st.sampled_from("abcd"), min_size=len(ids), max_size=len(ids)))
    replication_factor = draw(st.integers(1, len(ids)))
    brokers = [PlacementBroker(i, rack) for i, rack in zip(ids, racks, strict=True)]
    return brokers, replication_factor


partition_counts = st.integers(1, 120)
starts = st.integers(0, 2**32)


def test_follows_kafkas_documented_rack_unaware_example() -> None:
    # AdminUtils.assignReplicasToBrokers' doc comment: 5 brokers, 10 partitions, start 0.
    brokers = [PlacementBroker(i) for i in (4, 2, 0, 3, 1)]
    assert place_replicas(brokers, 10, 3, start=0) == [
        [0, 1, 2],
        [1, 2, 3],
        [2, 3, 4],
        [3, 4, 0],
        [4, 0, 1],
        [0, 2, 3],
        [1, 3, 4],
        [2, 4, 0],
        [3, 0, 1],
        [4, 1, 2],
    ]


def test_follows_kafkas_documented_rack_aware_example() -> None:
    rack_of = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    brokers = [PlacementBroker(i, rack) for i, rack in rack_of.items()]
    assert rack_alternating_brokers(rack_of) == [0, 3, 1, 5, 4, 2]
    assert place_replicas(brokers, 7, 3, start=0) == [
        [0, 3, 1],
        [3, 1, 5],
        [1, 5, 4],
        [5, 4, 2],
        [4, 2, 0],
        [2, 0, 3],
        [0, 4, 2],  # the second round shifts the followers
    ]


@given(cluster(), partition_counts, starts)
def test_preferred_leaders_are_balanced_within_one(
    brokers_and_rf: tuple[list[PlacementBroker], int], partitions: int, start: int
) -> None:
    brokers, replication_factor = brokers_and_rf
    assignment = place_replicas(brokers, partitions, replication_factor, start=start)
    assert len(assignment) == partitions
    leaders = Counter(replicas[0] for replicas in assignment)
    counts = [leaders[broker.id] for broker in brokers]
    assert max(counts) - min(counts) <= 1


@given(cluster(), partition_counts, starts)
def test_replicas_are_distinct_and_balanced(
    brokers_and_rf: tuple[list[PlacementBroker], int], partitions: int, start: int
) -> None:
    brokers, replication_factor = brokers_and_rf
    assignment = place_replicas(brokers, partitions, replication_factor, start=start)
    assert all(len(set(replicas)) == replication_factor for replicas in assignment)
    hosted = Counter(broker for replicas in assignment for broker in replicas)
    fair_share = partitions * replication_factor / len(brokers)
    for broker in brokers:
        assert abs(hosted[broker.id] - fair_share) <= replication_factor
        if partitions % len(brokers) == 0:
            assert hosted[broker.id] == fair_share


@given(cluster(min_brokers=2), partition_counts, starts)
def test_a_failed_brokers_leadership_spreads_over_all_survivors(
    brokers_and_rf: tuple[list[PlacementBroker], int], partitions: int, start: int
) -> None:
    brokers, replication_factor = brokers_and_rf
    replication_factor = max(replication_factor, 2)
    assignment = place_replicas(brokers, partitions, replication_factor, start=start)
    for failed in brokers:
        takeovers = Counter(replicas[1] for replicas in assignment if replicas[0] == failed.id)
        counts = [takeovers[survivor.id] for survivor in brokers if survivor != failed]
        assert max(counts) - min(counts) <= 1
        if partitions >= len(brokers) * (len(brokers) - 1):
            assert min(counts) >= 1


def test_the_designs_five_broker_failure_spreads_over_all_four_survivors() -> None:
    # replication-design-v1.txt: "if broker-0 goes down, partitions p0, p1, and p2 can be
    # served from all remaining 4 brokers" (15 partitions on 5 brokers).
    brokers = [PlacementBroker(i) for i in range(5)]
    assignment = place_replicas(brokers, 15, 3, start=0)
    led_by_0 = [replicas for replicas in assignment if replicas[0] == 0]
    assert len(led_by_0) == 3
    assert {broker for replicas in led_by_0 for broker in replicas[1:]} == {1, 2, 3, 4}


@given(racked_cluster(), partition_counts, starts)
def test_replicas_span_as_many_racks_as_possible(
    brokers_and_rf: tuple[list[PlacementBroker], int], partitions: int, start: int
) -> None:
    brokers, replication_factor = brokers_and_rf
    rack_of = {broker.id: broker.rack for broker in brokers}
    rack_count = len(set(rack_of.values()))
    assignment = place_replicas(brokers, partitions, replication_factor, start=start)
    for replicas in assignment:
        assert len(set(replicas)) == replication_factor
        assert len({rack_of[broker] for broker in replicas}) == min(replication_factor, rack_count)
    leaders = Counter(replicas[0] for replicas in assignment)
    counts = [leaders[broker.id] for broker in brokers]
    assert max(counts) - min(counts) <= 1


@given(racked_cluster(), partition_counts, starts)
def test_ignoring_racks_places_as_without_racks(
    brokers_and_rf: tuple[list[PlacementBroker], int], partitions: int, start: int
) -> None:
    brokers, replication_factor = brokers_and_rf
    rackless = [PlacementBroker(broker.id) for broker in brokers]
    assert place_replicas(
        brokers, partitions, replication_factor, start=start, ignore_racks=True
    ) == place_replicas(rackless, partitions, replication_factor, start=start)


@given(st.one_of(cluster(), racked_cluster()), partition_counts, partition_counts, starts)
def test_added_partitions_continue_the_original_placement(
    brokers_and_rf: tuple[list[PlacementBroker], int], existing: int, added: int, start: int
) -> None:
    brokers, replication_factor = brokers_and_rf
    created = place_replicas(brokers, existing, replication_factor, start=start)
    more = place_replicas(brokers, added, replication_factor, start=start, first_partition=existing)
    at_once = place_replicas(brokers, existing + added, replication_factor, start=start)
    assert created + more == at_once


@given(st.one_of(cluster(), racked_cluster()), partition_counts, starts)
def test_placement_is_deterministic_and_ignores_broker_order(
    brokers_and_rf: tuple[list[PlacementBroker], int], partitions: int, start: int
) -> None:
    brokers, replication_factor = brokers_and_rf
    first = place_replicas(brokers, partitions, replication_factor, start=start)
    again = place_replicas(brokers[::-1], partitions, replication_factor, start=start)
    assert first == again


def test_start_for_topic_is_stable_and_varies_between_topics() -> None:
    assert start_for_topic("orders") == start_for_topic("orders") == 3845127662
    starts_mod_5 = {start_for_topic(f"topic-{i}") % 5 for i in range(50)}
    assert starts_mod_5 == set(range(5))


@pytest.mark.parametrize("partitions", [0, -1])
def test_no_partitions_is_invalid_partitions(partitions: int) -> None:
    with pytest.raises(PlacementError) as error:
        place_replicas([PlacementBroker(0)], partitions, 1, start=0)
    assert error.value.error_code == ErrorCode.invalid_partitions
    assert error.value.error_code.value == 37


@pytest.mark.parametrize("replication_factor", [0, -1, 4])
def test_impossible_replication_factor_is_invalid_replication_factor(
    replication_factor: int,
) -> None:
    brokers = [PlacementBroker(i) for i in range(3)]
    with pytest.raises(PlacementError) as error:
        place_replicas(brokers, 3, replication_factor, start=0)
    assert error.value.error_code == ErrorCode.invalid_replication_factor
    assert error.value.error_code.value == 38


def test_no_brokers_is_invalid_replication_factor() -> None:
    with pytest.raises(PlacementError) as error:
        place_replicas([], 1, 1, start=0)
    assert error.value.error_code == ErrorCode.invalid_replication_factor


def test_racks_on_only_some_brokers_are_refused_unless_ignored() -> None:
    brokers = [PlacementBroker(0, "a"), PlacementBroker(1, "b"), PlacementBroker(2)]
    with pytest.raises(PlacementError, match=r"brokers without a rack: \[2\]") as error:
        place_replicas(brokers, 3, 2, start=0)
    assert error.value.error_code == ErrorCode.invalid_replication_factor
    assert place_replicas(brokers, 3, 2, start=0, ignore_racks=True) == [[0, 1], [1, 2], [2, 0]]


def test_duplicate_broker_ids_are_a_caller_bug() -> None:
    with pytest.raises(ValueError, match="duplicate broker ids"):
        place_replicas([PlacementBroker(1, "a"), PlacementBroker(1, "b")], 1, 1, start=0)


def test_a_valid_manual_assignment_comes_back_in_partition_order() -> None:
    assignments = [(1, [2, 0]), (0, [0, 1]), (2, [1, 2])]
    assert validate_manual_assignment(assignments, {0, 1, 2}) == [[0, 1], [2, 0], [1, 2]]


def test_a_manual_assignment_for_added_partitions_starts_at_the_current_count() -> None:
    assignments = [(3, [0, 1]), (4, [1, 2])]
    result = validate_manual_assignment(
        assignments, {0, 1, 2}, first_partition=3, replication_factor=2
    )
    assert result == [[0, 1], [1, 2]]


@pytest.mark.parametrize(
    ("assignments", "reason"),
    [
        ([], "no partitions"),
        ([(0, [0]), (2, [1])], "not the consecutive indexes 0..1"),
        ([(1, [0]), (2, [1])], "not the consecutive indexes 0..1"),
        ([(0, [0]), (0, [1])], "assigned twice"),
        ([(0, [])], "no replicas"),
        ([(0, [1, 1])], "names a broker twice"),
        ([(0, [0, 7])], r"not available: \[7\]"),
        ([(0, [0, 1]), (1, [2])], "has 1 replicas, not 2"),
    ],
)
def test_an_invalid_manual_assignment_is_invalid_replica_assignment(
    assignments: list[tuple[int, list[int]]], reason: str
) -> None:
    with pytest.raises(PlacementError, match=reason) as error:
        validate_manual_assignment(assignments, {0, 1, 2})
    assert error.value.error_code == ErrorCode.invalid_replica_assignment
    assert error.value.error_code.value == 39


def test_a_manual_assignment_must_match_the_topics_replication_factor() -> None:
    with pytest.raises(PlacementError, match="has 3 replicas, not 2") as error:
        validate_manual_assignment(
            [(2, [0, 1, 2])], {0, 1, 2}, first_partition=2, replication_factor=2
        )
    assert error.value.error_code == ErrorCode.invalid_replica_assignment
