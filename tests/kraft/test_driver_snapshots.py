"""The driver snapshots the metadata image once enough was committed since the last snapshot,
but only where its source has an image of exactly the committed entries: while they end inside
a change the image takes whole later (a metadata transaction), it waits for a later commit."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from tests.kraft.lone_voter import leading_voter


class Source:
    """Snapshot records only when `ready`; every offset it was asked at."""

    def __init__(self) -> None:
        self.ready = False
        self.asked: list[int] = []

    def snapshot_records(self, end_offset: int) -> list[bytes] | None:
        self.asked.append(end_offset)
        return [b"state"] if self.ready else None


async def test_no_snapshot_where_the_source_has_no_image_until_a_later_commit(
    tmp_path: Path,
) -> None:
    source = Source()
    options = {"snapshot_source": source, "max_bytes_between_snapshots": 100}
    with capture_logs() as logs:
        async with leading_voter(tmp_path, "snapshots", [b"x" * 200], **options) as voter:
            driver, metadata_log = voter
            assert source.asked
            await driver.append([b"y" * 200])
            assert len(source.asked) >= 2
            assert "raft_snapshot_created" not in [event["event"] for event in logs]
            source.ready = True
            end = await driver.append([b"z" * 10])
    created = [event for event in logs if event["event"] == "raft_snapshot_created"]
    assert [event["end_offset"] for event in created] == [end]
    assert len(list(metadata_log.directory.glob("*.checkpoint"))) == 1
