"""Replica placement for topic creation and partition addition: pure and deterministic.

The rule is the one of `reference/replication-design-v1.txt` ("Replica placements / Initial
placement"): sort the brokers; the preferred (first) replica of partition i goes to broker
i mod n; the other replicas are placed "in such a way that if a broker is down, its load is
spread evenly to all surviving brokers, instead of to a single one". The v2 design keeps that
rule unchanged ("the first replica is the preferred replica", at most one replica per broker).

The arithmetic is Kafka's `AdminUtils.assignReplicasToBrokers`, which implements the design:

- preferred replica of partition p: broker `(start + p) mod n` of the sorted broker list;
- replica j >= 1: `(first + 1 + (shift + j - 1) mod (n - 1)) mod n`, where `shift` grows by one
  every n partitions (Kafka's `nextReplicaShift`). Consecutive partitions led by one broker so
  get consecutive shifts, and their second replicas (the ones that take over when that broker
  fails) cycle through all n - 1 other brokers;
- with `broker.rack` on every broker, the list is first made rack-alternating (one broker of
  each rack in turn) and a follower is skipped while its rack, or itself, already holds a
  replica of the partition and some rack, or broker, holds none. Every partition so spans
  min(replication factor, number of racks) racks.

Two deliberate differences from Kafka:

- Determinism. Kafka draws the start index and the first shift at random. Here both are the
  caller's `start` (the same value for both, as with Kafka's `fixedStartIndex`); use
  `start_for_topic(name)` so that one topic always gets the same layout on the same brokers while
  different topics start on different brokers. The shift of partition p is `start + p // n`
  whatever partition the call begins with, so adding partitions later (CreatePartitions, with
  `first_partition` = the current count and the same `start`) gives on the same brokers exactly
  the replicas that creating them all at once would have given.
- Mixed racks. Kafka's default (`RackAwareMode.Enforced`) refuses to place when only some
  brokers have a rack, with an AdminOperationException that reaches clients as
  UNKNOWN_SERVER_ERROR. We refuse too, but with INVALID_REPLICATION_FACTOR (the code KRaft's
  placer uses whenever the brokers cannot host the replicas), unless `ignore_racks` is set
  (Kafka's `--disable-rack-aware`), which places as if no broker had a rack.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import zip_longest

from kio.schema.errors import ErrorCode


class PlacementError(Exception):
    """Replicas cannot be placed as asked; `error_code` is the Kafka error to answer with."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True, slots=True)
class PlacementBroker:
    """An unfenced broker that may receive replicas, with its `broker.rack` if it has one."""

    id: int
    rack: str | None = None


def start_for_topic(topic: str) -> int:
    """A stable start index for `topic`: CRC32 of its UTF-8 name (Python's `hash` is salted)."""
    return zlib.crc32(topic.encode())


def place_replicas(
    brokers: Collection[PlacementBroker],
    partitions: int,
    replication_factor: int,
    *,
    start: int,
    first_partition: int = 0,
    ignore_racks: bool = False,
) -> list[list[int]]:
    """The replicas of partitions `first_partition` .. `first_partition + partitions - 1`.

    Each list's first broker is the partition's preferred leader. `start` is any integer (taken
    modulo the number of brokers). Raises PlacementError with INVALID_PARTITIONS for
    `partitions` <= 0, and with INVALID_REPLICATION_FACTOR for a replication factor <= 0 or
    larger than the number of brokers, or for racks set on only some brokers (see the module
    docstring).
    """
    if partitions <= 0:
        raise PlacementError(
            ErrorCode.invalid_partitions,
            f"number of partitions must be larger than 0: {partitions}",
        )
    if replication_factor <= 0:
        raise PlacementError(
            ErrorCode.invalid_replication_factor,
            f"replication factor must be larger than 0: {replication_factor}",
        )
    if replication_factor > len(brokers):
        raise PlacementError(
            ErrorCode.invalid_replication_factor,
            f"replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}",
        )
    if len({broker.id for broker in brokers}) != len(brokers):
        raise ValueError(f"duplicate broker ids in {sorted(broker.id for broker in brokers)}")
    racks = {broker.id: broker.rack for broker in brokers if broker.rack is not None}
    if ignore_racks or not racks:
        broker_list = sorted(broker.id for broker in brokers)
        return [
            _stripe(broker_list, partition, replication_factor, start)
            for partition in range(first_partition, first_partition + partitions)
        ]
    if len(racks) != len(brokers):
        raise PlacementError(
            ErrorCode.invalid_replication_factor,
            "not all brokers have broker.rack set, so replicas cannot be placed rack-aware: "
            f"brokers without a rack: {sorted(b.id for b in brokers if b.rack is None)}",
        )
    rack_alternating = rack_alternating_brokers(racks)
    return [
        _stripe_across_racks(rack_alternating, racks, partition, replication_factor, start)
        for partition in range(first_partition, first_partition + partitions)
    ]


def rack_alternating_brokers(rack_of: dict[int, str]) -> list[int]:
    """The brokers taken one per rack in turn, racks and the brokers of a rack sorted.

    Kafka's `getRackAlternatedBrokerList`: racks a: 0, 1, 2 / b: 3, 4 / c: 5 give
    0, 3, 5, 1, 4, 2: neighbours are on different racks while every rack has brokers left.
    """
    brokers_by_rack: dict[str, list[int]] = {}
    for broker_id in sorted(rack_of):
        brokers_by_rack.setdefault(rack_of[broker_id], []).append(broker_id)
    rounds = zip_longest(*(brokers_by_rack[rack] for rack in sorted(brokers_by_rack)))
    return [broker_id for one_round in rounds for broker_id in one_round if broker_id is not None]


def _follower_index(first: int, shift: int, j: int, n: int) -> int:
    """Index of candidate j (0-based) for the followers: never `first` itself (Kafka's
    `replicaIndex`)."""
    return (first + 1 + (shift + j) % (n - 1)) % n


def _stripe(
    broker_list: list[int], partition: int, replication_factor: int, start: int
) -> list[int]:
    """The rack-unaware replicas of `partition` over the sorted `broker_list`."""
    n = len(broker_list)
    first = (start + partition) % n
    shift = start + partition // n
    return [broker_list[first]] + [
        broker_list[_follower_index(first, shift, j, n)] for j in range(replication_factor - 1)
    ]


def _stripe_across_racks(
    broker_list: list[int],
    rack_of: dict[int, str],
    partition: int,
    replication_factor: int,
    start: int,
) -> list[int]:
    """The rack-aware replicas of `partition` over the rack-alternating `broker_list` (Kafka's
    `assignReplicasToBrokersRackAware`)."""
    n = len(broker_list)
    rack_count = len(set(rack_of.values()))
    first = (start + partition) % n
    shift = (start + partition // n) * rack_count
    replicas = [broker_list[first]]
    racks_with_replicas = {rack_of[replicas[0]]}
    candidate = 0
    while len(replicas) < replication_factor:
        broker = broker_list[_follower_index(first, shift, candidate, n)]
        rack = rack_of[broker]
        candidate += 1
        rack_allowed = rack not in racks_with_replicas or len(racks_with_replicas) == rack_count
        if rack_allowed and broker not in replicas:
            replicas.append(broker)
            racks_with_replicas.add(rack)
    return replicas


def validate_manual_assignment(
    assignments: Sequence[tuple[int, Sequence[int]]],
    available_brokers: Collection[int],
    *,
    first_partition: int = 0,
    replication_factor: int | None = None,
) -> list[list[int]]:
    """Check an operator's assignment (CreateTopics' `assignments`) and return it in order.

    `assignments` are (partition index, broker ids) pairs in any order. They must name each of
    the partitions `first_partition`, `first_partition + 1`, ... exactly once, each with at
    least one replica, no broker twice, only `available_brokers`, and the same number of
    replicas everywhere (`replication_factor` if given, e.g. an existing topic's when adding
    partitions). Otherwise raises PlacementError with INVALID_REPLICA_ASSIGNMENT.
    """
    if not assignments:
        raise _invalid_assignment("the assignment names no partitions")
    by_partition: dict[int, Sequence[int]] = {}
    for partition, replicas in assignments:
        if partition in by_partition:
            raise _invalid_assignment(f"partition {partition} is assigned twice")
        by_partition[partition] = replicas
    expected = range(first_partition, first_partition + len(by_partition))
    if sorted(by_partition) != list(expected):
        raise _invalid_assignment(
            f"partitions {sorted(by_partition)} are not the consecutive indexes {expected.start}"
            f"..{expected.stop - 1}"
        )
    available = set(available_brokers)
    for partition in expected:
        replicas = by_partition[partition]
        if not replicas:
            raise _invalid_assignment(f"partition {partition} has no replicas")
        if len(set(replicas)) != len(replicas):
            raise _invalid_assignment(f"partition {partition} names a broker twice: {replicas}")
        unknown = sorted(set(replicas) - available)
        if unknown:
            raise _invalid_assignment(
                f"partition {partition} names brokers that are not available: {unknown}"
            )
        if replication_factor is None:
            replication_factor = len(replicas)
        if len(replicas) != replication_factor:
            raise _invalid_assignment(
                f"partition {partition} has {len(replicas)} replicas, not {replication_factor}"
            )
    return [list(by_partition[partition]) for partition in expected]


def _invalid_assignment(message: str) -> PlacementError:
    return PlacementError(ErrorCode.invalid_replica_assignment, message)
