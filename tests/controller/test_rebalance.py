"""Rebalance planning (controller/rebalance.py).

What is asserted, for any replica lists over some brokers, some kept and some removed:

- every target is a list of distinct kept brokers of the partition's replication factor;
- the kept brokers' replica counts are within one of each other;
- without racks, the plan moves exactly the lower bound sum(max(0, count_b - allowed_b)),
  `allowed_b` being floor or ceil of the mean, the ceil going to the fullest brokers (computed
  here independently of the planner); when brokers are removed (`allowed_b` 0) the bound can be
  out of reach (a removed broker's partition may already hold every broker short of replicas),
  and the plan takes at most one detour per replica removed;
- preferred-leader counts are within one when the replication factor is the same everywhere;
- racks: no partition spans fewer racks than before (up to the racks kept);
- the worked example: a fourth broker beside three holding 12 partitions of RF 3 receives 9.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.placement import PlacementBroker, place_replicas
from controller.rebalance import PartitionKey, RebalanceError, plan_rebalance

Layout = dict[PartitionKey, list[int]]


@st.composite
def layouts(
    draw: st.DrawFn, *, racks: bool = False, same_rf: bool = False
) -> tuple[Layout, list[PlacementBroker], set[int]]:
    """Partitions on some brokers (placed anyhow: any subset of brokers, in any order), the
    brokers of the cluster (maybe more than hold replicas now) and the ones being removed."""
    ids = draw(st.lists(st.integers(0, 50), min_size=2, max_size=7, unique=True))
    rack_names = (
        draw(st.lists(st.sampled_from("abc"), min_size=len(ids), max_size=len(ids)))
        if racks
        else [None] * len(ids)
    )
    brokers = [PlacementBroker(i, r) for i, r in zip(ids, rack_names, strict=True)]
    removing = set(draw(st.lists(st.sampled_from(ids), max_size=len(ids) - 1, unique=True)))
    kept = len(ids) - len(removing)
    hosts = draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
    rf_all = draw(st.integers(1, min(kept, len(hosts))))
    layout: Layout = {}
    for index in range(draw(st.integers(1, 20))):
        rf = rf_all if same_rf else draw(st.integers(1, min(kept, len(hosts))))
        replicas = draw(st.permutations(hosts))[:rf]
        layout[(draw(st.sampled_from("xy")), index)] = list(replicas)
    return layout, brokers, removing


def lower_bound(layout: Layout, kept: list[int]) -> int:
    counts = Counter(b for replicas in layout.values() for b in replicas)
    total = sum(counts.values())
    ranked = sorted(kept, key=lambda b: counts[b], reverse=True)
    floor, extra = divmod(total, len(kept))
    allowed = {b: floor + (1 if i < extra else 0) for i, b in enumerate(ranked)}
    return sum(max(0, count - allowed.get(b, 0)) for b, count in counts.items())


def spread(replicas: list[int] | tuple[int, ...], rack_of: dict[int, str | None]) -> int:
    return len({rack_of[b] for b in replicas if rack_of[b] is not None})


def targets(layout: Layout, plan_moves: tuple) -> Layout:  # type: ignore[type-arg]
    result = {key: list(replicas) for key, replicas in layout.items()}
    for move in plan_moves:
        result[(move.topic, move.partition)] = list(move.target)
    return result


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_without_racks_targets_are_valid_even_and_minimal(
    case: tuple[Layout, list[PlacementBroker], set[int]],
) -> None:
    layout, brokers, removing = case
    kept = sorted(b.id for b in brokers if b.id not in removing)
    plan = plan_rebalance(layout, brokers, removing)
    after = targets(layout, plan.moves)
    for key, replicas in after.items():
        assert len(set(replicas)) == len(replicas) == len(layout[key])
        assert set(replicas) <= set(kept)
    counts = Counter(b for replicas in after.values() for b in replicas)
    assert max(counts[b] for b in kept) - min(counts[b] for b in kept) <= 1
    bound = lower_bound(layout, kept)
    if removing:
        # A replica being emptied whose partition holds every broker short of replicas takes
        # a detour through another broker: one move more, at most once per such replica.
        emptied = sum(1 for replicas in layout.values() for b in replicas if b in removing)
        assert bound <= plan.replicas_moved <= bound + emptied
    else:
        assert plan.replicas_moved == bound
    assert dict(plan.replicas_after) == {b: counts[b] for b in kept}
    for move in plan.moves:
        assert move.current == tuple(layout[(move.topic, move.partition)])


@settings(max_examples=300, deadline=None)
@given(layouts(same_rf=True))
def test_preferred_leaders_are_even_with_one_replication_factor(
    case: tuple[Layout, list[PlacementBroker], set[int]],
) -> None:
    layout, brokers, removing = case
    plan = plan_rebalance(layout, brokers, removing)
    assert plan.balanced
    leaders = Counter(replicas[0] for replicas in targets(layout, plan.moves).values())
    assert dict(plan.leaders_after) == {b: leaders[b] for b in plan.leaders_after}


@settings(max_examples=300, deadline=None)
@given(layouts(racks=True))
def test_rack_spread_is_kept(case: tuple[Layout, list[PlacementBroker], set[int]]) -> None:
    layout, brokers, removing = case
    rack_of = {b.id: b.rack for b in brokers}
    racks_kept = {b.rack for b in brokers if b.id not in removing}
    try:
        plan = plan_rebalance(layout, brokers, removing)
    except RebalanceError:
        # Only a removal may be impossible with racks: some replica has nowhere to go.
        assert removing
        return
    for key, replicas in targets(layout, plan.moves).items():
        assert len(set(replicas)) == len(replicas) == len(layout[key])
        assert not set(replicas) & removing
        assert spread(replicas, rack_of) >= min(spread(layout[key], rack_of), len(racks_kept))


def test_a_fourth_broker_receives_nine_of_36_replicas() -> None:
    three = [PlacementBroker(i) for i in (1, 2, 3)]
    layout = {("t", p): r for p, r in enumerate(place_replicas(three, 12, 3, start=0))}
    plan = plan_rebalance(layout, [*three, PlacementBroker(4)])
    assert plan.replicas_moved == 9
    assert dict(plan.replicas_before) == {1: 12, 2: 12, 3: 12, 4: 0}
    assert dict(plan.replicas_after) == {1: 9, 2: 9, 3: 9, 4: 9}
    assert dict(plan.leaders_after) == {1: 3, 2: 3, 3: 3, 4: 3}
    assert plan.balanced


def test_removing_a_broker_moves_exactly_its_replicas() -> None:
    four = [PlacementBroker(i) for i in (1, 2, 3, 4)]
    layout = {("t", p): r for p, r in enumerate(place_replicas(four, 8, 2, start=0))}
    plan = plan_rebalance(layout, four, removing={4})
    assert plan.replicas_moved == 4
    assert all(4 not in move.target for move in plan.moves)
    assert 4 not in plan.replicas_after
    assert sorted(plan.replicas_after.values()) == [5, 5, 6]


def test_a_balanced_cluster_needs_no_move() -> None:
    three = [PlacementBroker(i) for i in (1, 2, 3)]
    layout = {("t", p): r for p, r in enumerate(place_replicas(three, 6, 2, start=0))}
    assert plan_rebalance(layout, three).moves == ()


def test_refuses_a_replication_factor_above_the_brokers_left() -> None:
    with pytest.raises(RebalanceError, match="only 2 brokers"):
        plan_rebalance({("t", 0): [1, 2, 3]}, [PlacementBroker(i) for i in (1, 2, 3)], removing={3})
