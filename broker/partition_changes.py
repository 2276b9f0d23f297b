"""The change journal of the hosted partitions: which changed after a given moment.

Fed by every change a fetch could see (`Partition._wake`, through the replica manager's change
listeners): a long-polling fetch that woke reads again only the partitions changed since its
last read, and a fetch session only those of its partitions.
"""

from __future__ import annotations

from collections.abc import Iterator

# A hosted partition: its topic name and index.
PartitionName = tuple[str, int]


class PartitionChanges:
    """The hosted partitions in the order they last changed, each with the number of that
    change: which changed after change number n costs the number of them, not of partitions."""

    def __init__(self) -> None:
        self.sequence = 0
        self._last: dict[PartitionName, int] = {}

    def changed(self, name: PartitionName) -> None:
        self.sequence += 1
        self._last.pop(name, None)
        self._last[name] = self.sequence

    def since(self, sequence: int) -> Iterator[PartitionName]:
        """The partitions changed after change number `sequence`, latest first."""
        for name, number in reversed(self._last.items()):
            if number <= sequence:
                return
            yield name
