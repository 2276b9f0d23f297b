"""MetadataTransactions tells where each committed record stands among transactions."""

from __future__ import annotations

from uuid import UUID

import pytest

from controller.metadata_transactions import (
    MetadataTransactionError,
    MetadataTransactions,
    TransactionStep,
)
from controller.records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    MetadataRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)

TOPIC = UUID(int=1)
OUTSIDE, BEGIN, INSIDE, END, ABORT = (
    TransactionStep.OUTSIDE,
    TransactionStep.BEGIN,
    TransactionStep.INSIDE,
    TransactionStep.END,
    TransactionStep.ABORT,
)


def partition(index: int) -> PartitionRecord:
    return PartitionRecord(TOPIC, index, replicas=(1,), isr=(1,), leader=1)


def steps(
    transactions: MetadataTransactions[int], records: list[MetadataRecord], start: int = 0
) -> list[TransactionStep]:
    return [transactions.step(offset, record) for offset, record in enumerate(records, start)]


def test_records_outside_a_transaction_take_effect_as_they_come() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    assert steps(transactions, [TopicRecord("t", TOPIC), partition(0)]) == [OUTSIDE, OUTSIDE]
    assert transactions.open_since is None


def test_a_transaction_cut_by_commits_stays_open_until_its_end() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    first: list[MetadataRecord] = [RemoveTopicRecord(UUID(int=9))]
    first += [BeginTransactionRecord("create_topics"), TopicRecord("t", TOPIC), partition(0)]
    assert steps(transactions, first) == [OUTSIDE, BEGIN, INSIDE, INSIDE]
    assert transactions.open_since == 1
    assert steps(transactions, [partition(1), partition(2)], start=4) == [INSIDE, INSIDE]
    assert transactions.open_since == 1
    last: list[MetadataRecord] = [EndTransactionRecord(), RemoveTopicRecord(UUID(int=8))]
    assert steps(transactions, last, start=6) == [END, OUTSIDE]
    assert transactions.open_since is None


def test_an_abort_closes_the_open_transaction() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    held: list[MetadataRecord] = [BeginTransactionRecord("create_topics"), TopicRecord("t", TOPIC)]
    assert steps(transactions, held) == [BEGIN, INSIDE]
    after: list[MetadataRecord] = [
        AbortTransactionRecord("failover"),
        RemoveTopicRecord(UUID(int=8)),
    ]
    assert steps(transactions, after, start=2) == [ABORT, OUTSIDE]
    assert transactions.open_since is None


def test_an_end_or_abort_outside_a_transaction_stands_alone() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    records: list[MetadataRecord] = [EndTransactionRecord(), AbortTransactionRecord()]
    assert steps(transactions, records) == [OUTSIDE, OUTSIDE]


def test_a_transaction_inside_another_is_refused() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    transactions.step(0, BeginTransactionRecord("a"))
    with pytest.raises(MetadataTransactionError, match="inside the one begun at 0"):
        transactions.step(1, BeginTransactionRecord("b"))


def test_reset_forgets_the_open_transaction() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    opened: list[MetadataRecord] = [BeginTransactionRecord("a"), TopicRecord("t", TOPIC)]
    steps(transactions, opened)
    transactions.reset()
    assert transactions.open_since is None
    assert transactions.step(5, RemoveTopicRecord(TOPIC)) is OUTSIDE
