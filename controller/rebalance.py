"""Rebalance planning: pure and deterministic target replica lists for a set of brokers.

Given every partition's replica list and the brokers that may hold replicas (with their
`broker.rack`), optionally some of them being removed, `plan_rebalance` computes the target
replica lists that

(a) hold between floor(R/n) and ceil(R/n) of the R replicas on each of the n brokers kept (none
    on a broker being removed, nor on one not in the set);
(b) make each kept broker the preferred (first) replica of floor(P/n) or ceil(P/n) of the P
    partitions, by reordering a partition's replicas rather than by moving one where possible;
(c) keep each partition's rack spread: never fewer distinct racks than it has now (or than
    there are racks among the kept brokers, if fewer), when brokers have racks;
(d) move the fewest replicas that reach (a): the brokers with the most replicas keep the
    ceil(R/n) places and every broker gives up only its excess, sum(max(0, count_b - target_b))
    replicas (`replicas_to_move`); each move lowers that by one. Between kept brokers such a
    move always exists (a broker above its target holds more replicas than one below its own,
    so it has a partition the other lacks). A replica leaving a removed broker may find its
    partition already on every broker short of replicas: it then goes to another broker, which
    passes one replica on, one move more than the bound.

Rack spread is a hard constraint: a move that would lose a rack is not made, so with racks the
replica counts may stay uneven where no move keeps the spread (`RebalancePlan.balanced` says).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from controller.placement import PlacementBroker

# A partition by topic name and index.
PartitionKey = tuple[str, int]


class RebalanceError(Exception):
    """No plan meets the constraints (a replication factor above the brokers kept, or replicas
    that cannot leave a removed broker without losing rack spread)."""


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """One partition's replica list now and in the plan (the first replica is preferred)."""

    topic: str
    partition: int
    current: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.current)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.current if b not in self.target)


@dataclass(frozen=True, slots=True)
class RebalancePlan:
    """The partitions whose replica list changes (in set or only in order), with the replica
    and preferred-leader counts per kept or current broker before and after."""

    moves: tuple[PartitionMove, ...]
    replicas_before: Mapping[int, int]
    replicas_after: Mapping[int, int]
    leaders_before: Mapping[int, int]
    leaders_after: Mapping[int, int]

    @property
    def replicas_moved(self) -> int:
        """Replicas that change broker (reordering moves none)."""
        return sum(len(move.adding) for move in self.moves)

    @property
    def balanced(self) -> bool:
        """Replica and preferred-leader counts of the kept brokers are within one."""
        return _within_one(self.replicas_after) and _within_one(self.leaders_after)


def _within_one(counts: Mapping[int, int]) -> bool:
    return not counts or max(counts.values()) - min(counts.values()) <= 1


def replica_targets(counts: Mapping[int, int], kept: Collection[int], total: int) -> dict[int, int]:
    """How many of `total` replicas each kept broker ends with: floor or ceil of the mean, the
    ceil going to the brokers holding the most now (ties by id), so that the fewest move."""
    if not kept:
        return {}
    floor, extra = divmod(total, len(kept))
    by_count = sorted(kept, key=lambda b: (-counts.get(b, 0), b))
    return {broker: floor + (1 if i < extra else 0) for i, broker in enumerate(by_count)}


def plan_rebalance(
    partitions: Mapping[PartitionKey, Sequence[int]],
    brokers: Iterable[PlacementBroker],
    removing: Collection[int] = (),
) -> RebalancePlan:
    """The plan that balances `partitions` over `brokers` minus `removing` (see the module)."""
    rack_of = {b.id: b.rack for b in brokers}
    kept = sorted(b for b in rack_of if b not in removing)
    if not kept:
        raise RebalanceError("no broker would be left to hold the replicas")
    widest = max((len(replicas) for replicas in partitions.values()), default=0)
    if widest > len(kept):
        raise RebalanceError(
            f"a partition has {widest} replicas but only {len(kept)} brokers would be left"
        )
    current = {key: tuple(replicas) for key, replicas in sorted(partitions.items())}
    target = {key: list(replicas) for key, replicas in current.items()}
    racks_kept = {rack for b in kept if (rack := rack_of[b]) is not None}
    _move_replicas(target, kept, rack_of, racks_kept)
    _balance_leaders(target, kept)
    moves = tuple(
        PartitionMove(key[0], key[1], current[key], tuple(replicas))
        for key, replicas in target.items()
        if tuple(replicas) != current[key]
    )
    everyone = set(kept) | {b for replicas in current.values() for b in replicas}
    return RebalancePlan(
        moves=moves,
        replicas_before=_counts(current.values(), everyone),
        replicas_after=_counts(target.values(), kept),
        leaders_before=_counts((r[:1] for r in current.values() if r), everyone),
        leaders_after=_counts((r[:1] for r in target.values() if r), kept),
    )


def _counts(replica_lists: Iterable[Sequence[int]], brokers: Iterable[int]) -> dict[int, int]:
    counts = Counter(b for replicas in replica_lists for b in replicas)
    return {b: counts[b] for b in sorted(set(brokers) | set(counts))}


def _rack_spread(replicas: Iterable[int], rack_of: Mapping[int, str | None]) -> int:
    return len({rack for b in replicas if (rack := rack_of.get(b)) is not None})


def replicas_to_move(counts: Mapping[int, int], kept: Collection[int]) -> int:
    """The fewest replica moves that leave the kept brokers within one of each other and the
    others empty: every replica above a broker's `replica_targets` count moves."""
    quota = replica_targets(counts, kept, sum(counts.values()))
    return sum(max(0, count - quota.get(b, 0)) for b, count in counts.items())


def _move_replicas(
    target: dict[PartitionKey, list[int]],
    kept: Sequence[int],
    rack_of: Mapping[int, str | None],
    racks_kept: set[str],
) -> None:
    """Moves replicas in `target`, in place, one at a time, each lowering `replicas_to_move` by
    one, until none is left to move or (with racks) no move keeps the rack spread."""
    counts = Counter({b: 0 for b in kept})
    counts.update(b for replicas in target.values() for b in replicas)
    # A partition must keep the racks it spans, up to the racks the kept brokers have.
    required = {
        key: min(_rack_spread(replicas, rack_of), len(racks_kept))
        for key, replicas in target.items()
    }
    while left := replicas_to_move(counts, kept):
        move = _first_move(target, counts, kept, left - 1, rack_of, required)
        if move is None:
            # A replica of a broker being emptied whose partition already holds every
            # broker short of replicas goes to another one, which passes one on later: one
            # move more than the bound, and one such detour per replica being emptied at most.
            move = _first_move(target, counts, kept, None, rack_of, required)
        if move is None:
            break
        key, donor, receiver = move
        replicas = target[key]
        replicas[replicas.index(donor)] = receiver
        counts[donor] -= 1
        counts[receiver] += 1
    stuck = sorted(b for b in counts if b not in kept and counts[b])
    if stuck:
        raise RebalanceError(
            f"no move of the replicas left on broker {stuck[0]} keeps every partition's rack spread"
        )


def _first_move(
    target: Mapping[PartitionKey, list[int]],
    counts: Counter[int],
    kept: Sequence[int],
    leaves: int | None,
    rack_of: Mapping[int, str | None],
    required: Mapping[PartitionKey, int],
) -> tuple[PartitionKey, int, int] | None:
    """The first (partition, donor, receiver) that keeps the rack spread and leaves `leaves`
    replicas to move (None: any move off a broker being emptied): brokers being emptied first,
    then the fullest; the emptiest receivers first; a donor's followers before the partitions
    it is preferred leader of."""
    donors = sorted(
        (b for b in counts if counts[b] and (leaves is not None or b not in kept)),
        key=lambda b: (b in kept, -counts[b], b),
    )
    receivers = sorted(kept, key=lambda b: (counts[b], b))
    for donor in donors:
        hosted = [key for key, replicas in target.items() if donor in replicas]
        hosted.sort(key=lambda key: target[key][0] == donor)
        for receiver in receivers:
            if counts[receiver] + 1 >= counts[donor] and donor in kept:
                continue
            after_move = counts.copy()
            after_move[donor] -= 1
            after_move[receiver] += 1
            if leaves is not None and replicas_to_move(after_move, kept) != leaves:
                continue
            for key in hosted:
                replicas = target[key]
                if receiver in replicas:
                    continue
                after = [receiver if b == donor else b for b in replicas]
                if _rack_spread(after, rack_of) >= required[key]:
                    return key, donor, receiver
    return None


def _balance_leaders(target: dict[PartitionKey, list[int]], kept: Sequence[int]) -> None:
    """Reorders replica lists in `target`, in place, so the kept brokers' preferred-leader
    counts are within one where the replica sets allow: while some broker leads at least two
    more partitions than another it can hand leadership to along a chain (partition led by one,
    hosted by the next), the chain's leaderships shift by one. Each shift lowers the sum of
    squared counts, so this ends; a partition changes its preferred leader only on a chain."""
    led = {b: [key for key, r in target.items() if r and r[0] == b] for b in kept}
    while True:
        path = _leadership_chain(target, led)
        if path is None:
            return
        for key, successor in path:
            replicas = target[key]
            replicas.remove(successor)
            led[replicas[0]].remove(key)
            replicas.insert(0, successor)
            led[successor].append(key)


def _leadership_chain(
    target: Mapping[PartitionKey, list[int]], led: Mapping[int, list[PartitionKey]]
) -> list[tuple[PartitionKey, int]] | None:
    """A shortest chain of (partition, new leader) handing one leadership from a broker with
    the most to one with at least two fewer, or None."""
    for start in sorted(led, key=lambda b: (-len(led[b]), b)):
        # Breadth-first over brokers: came_from[b] = (partition, previous broker).
        came_from: dict[int, tuple[PartitionKey, int]] = {}
        frontier = [start]
        seen = {start}
        while frontier:
            following: list[int] = []
            for broker in frontier:
                for key in led[broker]:
                    for successor in target[key][1:]:
                        if successor in seen or successor not in led:
                            continue
                        seen.add(successor)
                        came_from[successor] = (key, broker)
                        if len(led[successor]) <= len(led[start]) - 2:
                            return _chain(came_from, start, successor)
                        following.append(successor)
            frontier = following
    return None


def _chain(
    came_from: Mapping[int, tuple[PartitionKey, int]], start: int, end: int
) -> list[tuple[PartitionKey, int]]:
    chain = []
    broker = end
    while broker != start:
        key, previous = came_from[broker]
        chain.append((key, broker))
        broker = previous
    return chain
