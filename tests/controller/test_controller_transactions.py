"""A newly active controller drops the metadata transaction its predecessor left open.

The previous controller's append reached the quorum only in part (it lost its leadership
mid-append): the log ends inside a transaction. The next active controller appends an
AbortTransactionRecord before it serves anything, so no image ever shows that part."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

from structlog.testing import capture_logs

from controller.records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    MetadataRecord,
    PartitionRecord,
    TopicRecord,
    decode_record,
    encode_record,
)
from tests.controller.lone_controller import active_controller
from tests.kraft.lone_voter import leading_voter

ORDERS = UUID(int=1)
CLICKS = UUID(int=2)


async def append_alone(directory: Path, records: list[bytes]) -> None:
    """Commit `records` on the lone voter over `directory`, with no controller on it."""
    async with leading_voter(directory, "transactions", records):
        pass


async def test_a_transaction_left_open_is_aborted_before_the_controller_serves(
    tmp_path: Path,
) -> None:
    whole: list[MetadataRecord] = [
        BeginTransactionRecord("create_topics"),
        TopicRecord("clicks", CLICKS),
        PartitionRecord(CLICKS, 0, replicas=(1,), isr=(1,), leader=1),
        EndTransactionRecord(),
    ]
    part: list[MetadataRecord] = [
        BeginTransactionRecord("create_topics"),
        TopicRecord("orders", ORDERS),
    ]
    await append_alone(tmp_path, [encode_record(record) for record in [*whole, *part]])

    with capture_logs() as logs:
        async with active_controller(tmp_path, "transactions") as lone:
            replayer = lone.replayer
            assert not replayer.transaction_open
            assert [decode_record(record) for record in lone.committed.records][-1] == (
                AbortTransactionRecord("left open by the previous active controller")
            )
            # The whole transaction stands; the part of the other never shows.
            assert replayer.image.topic("clicks") is not None
            assert replayer.image.topic("orders") is None
            assert replayer.image.end_offset == replayer.replayed_end_offset
    events = [event["event"] for event in logs]
    assert events.index("metadata_transaction_aborted") < events.index("controller_activated")


async def test_a_log_ending_outside_any_transaction_is_taken_over_as_it_is(
    tmp_path: Path,
) -> None:
    whole: list[MetadataRecord] = [
        BeginTransactionRecord("create_topics"),
        TopicRecord("clicks", CLICKS),
        EndTransactionRecord(),
    ]
    await append_alone(tmp_path, [encode_record(record) for record in whole])
    with capture_logs() as logs:
        async with active_controller(tmp_path, "transactions") as lone:
            committed = [decode_record(record) for record in lone.committed.records]
            assert committed == whole
            assert lone.replayer.image.topic("clicks") is not None
    assert "metadata_transaction_aborted" not in [event["event"] for event in logs]
