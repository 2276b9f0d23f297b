"""MetadataTransactions holds back a transaction's records until its end, whole."""

from __future__ import annotations

from uuid import UUID

import pytest

from controller.metadata_transactions import MetadataTransactionError, MetadataTransactions
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


def partition(index: int) -> PartitionRecord:
    return PartitionRecord(TOPIC, index, replicas=(1,), isr=(1,), leader=1)


def numbered(records: list[MetadataRecord], start: int = 0) -> list[tuple[int, MetadataRecord]]:
    return list(enumerate(records, start=start))


def test_records_outside_a_transaction_take_effect_as_they_come() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    records = numbered([TopicRecord("t", TOPIC), partition(0)])
    assert transactions.admit(records) == records
    assert transactions.open_since is None


def test_a_transaction_cut_by_commits_takes_effect_whole_with_its_end() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    before = (0, RemoveTopicRecord(UUID(int=9)))
    begin = (1, BeginTransactionRecord("create_topics"))
    topic = (2, TopicRecord("t", TOPIC))
    partitions = numbered([partition(i) for i in range(3)], start=3)
    end = (6, EndTransactionRecord())
    after = (7, RemoveTopicRecord(UUID(int=8)))

    assert transactions.admit([before, begin, topic, partitions[0]]) == [before]
    assert transactions.open_since == 1
    assert transactions.admit(partitions[1:]) == []
    assert transactions.open_since == 1
    assert transactions.admit([end, after]) == [begin, topic, *partitions, end, after]
    assert transactions.open_since is None


def test_an_aborted_transaction_never_takes_effect() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    held = numbered([BeginTransactionRecord("create_topics"), TopicRecord("t", TOPIC)])
    assert transactions.admit(held) == []
    abort = (2, AbortTransactionRecord("failover"))
    after = (3, RemoveTopicRecord(UUID(int=8)))
    assert transactions.admit([abort, after]) == [abort, after]
    assert transactions.open_since is None


def test_an_end_or_abort_outside_a_transaction_takes_effect_alone() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    records = numbered([EndTransactionRecord(), AbortTransactionRecord()])
    assert transactions.admit(records) == records


def test_a_transaction_inside_another_is_refused() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    transactions.admit([(0, BeginTransactionRecord("a"))])
    with pytest.raises(MetadataTransactionError, match="inside the one begun at 0"):
        transactions.admit([(1, BeginTransactionRecord("b"))])


def test_reset_forgets_the_open_transaction() -> None:
    transactions: MetadataTransactions[int] = MetadataTransactions()
    transactions.admit(numbered([BeginTransactionRecord("a"), TopicRecord("t", TOPIC)]))
    transactions.reset()
    assert transactions.open_since is None
    after = (5, RemoveTopicRecord(TOPIC))
    assert transactions.admit([after]) == [after]
