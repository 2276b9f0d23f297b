"""The change journal of the hosted partitions: which changed after a given moment.

Fed by every change a fetch could see (`Partition._wake`, through the replica manager's change
listeners): a long-polling fetch that woke reads again only the partitions changed since its
last read, and a fetch session only those of its partitions.

A high watermark that moved alone is a change for consumers (it makes records visible to them)
but none a follower waits for: as Kafka's DelayedFetch, a follower's fetch is completed by new
records (or a log start, a truncation, a role: anything else) or its timeout, and then reads
whatever changed, its high watermark included.
"""

from __future__ import annotations

from collections.abc import Iterator

# A hosted partition: its topic name and index.
PartitionName = tuple[str, int]


class PartitionChanges:
    """The hosted partitions in the order they last changed, each with the number of that
    change: which changed after change number n costs the number of them, not of partitions.
    Kept twice: by any change, and by the changes a follower waits for (all but a high
    watermark's move alone)."""

    def __init__(self) -> None:
        self.sequence = 0
        self._last: dict[PartitionName, int] = {}
        self._last_for_followers: dict[PartitionName, int] = {}

    def changed(self, name: PartitionName, *, high_watermark_only: bool = False) -> None:
        """`name` changed; `high_watermark_only`: nothing but its high watermark moved."""
        self.sequence += 1
        self._last.pop(name, None)
        self._last[name] = self.sequence
        if not high_watermark_only:
            self._last_for_followers.pop(name, None)
            self._last_for_followers[name] = self.sequence

    def since(self, sequence: int, *, follower: bool = False) -> Iterator[PartitionName]:
        """The partitions changed after change number `sequence`, latest first; for a
        `follower`, those changed by more than a high watermark's move."""
        last = self._last_for_followers if follower else self._last
        for name, number in reversed(last.items()):
            if number <= sequence:
                return
            yield name
