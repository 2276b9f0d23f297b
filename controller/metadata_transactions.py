"""Metadata transactions (KIP-868): a change longer than one commit, shown whole or not at all.

The metadata log hands its committed entries out in commits of a bounded size, and a follower
may hold part of a leader's append, so a change of many records (a topic of thousands of
partitions) can be committed in several pieces. The controller writes such a change between a
BeginTransactionRecord and an EndTransactionRecord; `MetadataTransactions` holds back the
records of a transaction until its end is committed, so that no image (and no client's
Metadata answer) shows a topic with part of its partitions. An AbortTransactionRecord, which a
newly active controller writes for a transaction its predecessor left unfinished, drops the
held records.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

from controller.records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    MetadataRecord,
)

# What a record comes with: its offset, or its whole log entry.
Position = TypeVar("Position")


class MetadataTransactionError(ValueError):
    """A transaction record that contradicts the transaction state: a begin inside another."""


class MetadataTransactions(Generic[Position]):
    """Holds back the committed records of an open metadata transaction."""

    def __init__(self) -> None:
        self._held: list[tuple[Position, MetadataRecord]] | None = None

    @property
    def open_since(self) -> Position | None:
        """Where the open transaction's BeginTransactionRecord is; None if none is open."""
        return None if self._held is None else self._held[0][0]

    def admit(
        self, records: Iterable[tuple[Position, MetadataRecord]]
    ) -> list[tuple[Position, MetadataRecord]]:
        """The records that take effect with these committed ones, in log order: those outside
        any transaction, and a transaction's all at once when its EndTransactionRecord comes
        (with it); an aborted transaction's never (its AbortTransactionRecord alone). An end
        or abort with no transaction open takes effect alone, as the no-op it is then."""
        admitted: list[tuple[Position, MetadataRecord]] = []
        for item in records:
            record = item[1]
            held = self._held
            if isinstance(record, BeginTransactionRecord):
                if held is not None:
                    raise MetadataTransactionError(
                        f"a transaction begins at {item[0]} inside the one begun at {held[0][0]}"
                    )
                self._held = [item]
            elif held is None:
                admitted.append(item)
            elif isinstance(record, EndTransactionRecord):
                admitted.extend(held)
                admitted.append(item)
                self._held = None
            elif isinstance(record, AbortTransactionRecord):
                admitted.append(item)
                self._held = None
            else:
                held.append(item)
        return admitted

    def reset(self) -> None:
        """Forget any open transaction: a snapshot replaced the state (none is taken inside a
        transaction, so none ends inside one)."""
        self._held = None
