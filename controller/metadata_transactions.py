"""Metadata transactions (KIP-868): a change longer than one commit, shown whole or not at all.

The metadata log hands its committed entries out in commits of a bounded size, and a follower
may hold part of a leader's append, so a change of many records (a topic of thousands of
partitions) can be committed in several pieces. The controller writes such a change between a
BeginTransactionRecord and an EndTransactionRecord. `MetadataTransactions` tells a consumer of
the log where each record stands (`TransactionStep`), so that it replays a transaction's
records as they come, in a state of their own, and shows that state only once the end is
committed: no image (and no client's Metadata answer) shows a topic with part of its
partitions, and no commit does the work of a whole transaction at once. An
AbortTransactionRecord, which a newly active controller writes for a transaction its
predecessor left unfinished, drops that state.
"""

from __future__ import annotations

from enum import Enum, auto
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


class TransactionStep(Enum):
    """Where a committed record stands among metadata transactions."""

    # Outside any transaction: takes effect as it comes. A stray end or abort (no transaction
    # open) is one too, as the no-op it then is.
    OUTSIDE = auto()
    # Opens a transaction: what came before takes effect; what follows waits for its end.
    BEGIN = auto()
    # A record of the open transaction: takes effect with its end, or never if it aborts.
    INSIDE = auto()
    # The open transaction's records take effect, all of them, with this one.
    END = auto()
    # The open transaction's records never take effect.
    ABORT = auto()


class MetadataTransactions(Generic[Position]):
    """Follows the committed records through metadata transactions, in log order."""

    def __init__(self) -> None:
        self._begun: tuple[Position] | None = None

    @property
    def open_since(self) -> Position | None:
        """Where the open transaction's BeginTransactionRecord is; None if none is open."""
        return None if self._begun is None else self._begun[0]

    def step(self, position: Position, record: MetadataRecord) -> TransactionStep:
        """Where `record`, committed at `position` after every record stepped before, stands.

        Raises MetadataTransactionError for a begin inside an open transaction."""
        if isinstance(record, BeginTransactionRecord):
            if self._begun is not None:
                raise MetadataTransactionError(
                    f"a transaction begins at {position} inside the one begun at {self._begun[0]}"
                )
            self._begun = (position,)
            return TransactionStep.BEGIN
        if self._begun is None:
            return TransactionStep.OUTSIDE
        if isinstance(record, EndTransactionRecord):
            self._begun = None
            return TransactionStep.END
        if isinstance(record, AbortTransactionRecord):
            self._begun = None
            return TransactionStep.ABORT
        return TransactionStep.INSIDE

    def reset(self) -> None:
        """Forget any open transaction: a snapshot replaced the state (none is taken inside a
        transaction, so none ends inside one)."""
        self._begun = None
