"""Snapshot files: Kafka's naming and layout, atomic writes, chunked transfers, pruning."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.messages import SnapshotId
from kraft.raft import LocalSnapshot
from kraft.snapshot_file import (
    SnapshotFormatError,
    SnapshotStore,
    decode_snapshot,
    encode_snapshot,
    file_name,
)
from net.records import decode_batches


def test_files_are_named_as_kafka_names_them() -> None:
    assert file_name(SnapshotId(1234, 5)) == "00000000000000001234-0000000005.checkpoint"


def test_a_snapshot_is_header_records_footer_in_record_batches() -> None:
    snapshot_id = SnapshotId(100, 3)
    data = encode_snapshot(snapshot_id, [b"one", b"two"], 0)
    batches = list(decode_batches(data))
    assert [header.is_control for header, _ in batches] == [True, False, True]
    assert {header.partition_leader_epoch for header, _ in batches} == {3}
    # Control record keys: version 0 then type 3 (SnapshotHeader) and 4 (SnapshotFooter).
    assert batches[0][1][0].key == b"\x00\x00\x00\x03"
    assert batches[-1][1][0].key == b"\x00\x00\x00\x04"
    assert [record.offset for _, records in batches for record in records] == [0, 1, 2, 3]
    assert decode_snapshot(data) == [b"one", b"two"]


def test_an_empty_image_is_a_header_and_a_footer() -> None:
    data = encode_snapshot(SnapshotId(7, 1), [], 0)
    assert len(list(decode_batches(data))) == 2
    assert decode_snapshot(data) == []


@pytest.mark.parametrize("cut", [1, 20])
def test_a_damaged_snapshot_is_refused(cut: int) -> None:
    data = encode_snapshot(SnapshotId(7, 1), [b"x"], 0)
    with pytest.raises(SnapshotFormatError):
        decode_snapshot(data[:-cut])
    footer_only = list(decode_batches(data))[-1][0]
    with pytest.raises(SnapshotFormatError):
        decode_snapshot(data[: -footer_only.size])


def test_written_snapshots_are_found_latest_first_and_older_ones_pruned(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    assert store.open_latest() is None
    older, newer = SnapshotId(10, 1), SnapshotId(20, 2)
    store.write(older, encode_snapshot(older, [b"a"], 0))
    size = store.write(newer, encode_snapshot(newer, [b"b"], 0))
    assert store.open_latest() == LocalSnapshot(newer, size)
    assert store.read(newer, 0, size) == store.read_all(newer)
    assert store.delete_older_than(newer) == [older]
    assert store.snapshot_ids() == [newer]
    assert store.read(older, 0, 10) is None
    assert not list(tmp_path.glob("*.tmp"))


def test_a_transfer_grows_a_partial_file_until_it_completes(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    snapshot_id = SnapshotId(50, 4)
    data = encode_snapshot(snapshot_id, [b"r" * 100, b"s" * 100], 0)
    middle = len(data) // 2
    store.write_chunk(snapshot_id, 0, data[:middle])
    # Not visible until complete.
    assert store.snapshot_ids() == []
    store.write_chunk(snapshot_id, middle, data[middle:])
    store.complete(snapshot_id, len(data))
    assert store.snapshot_ids() == [snapshot_id]
    assert decode_snapshot(store.read_all(snapshot_id)) == [b"r" * 100, b"s" * 100]
    assert not list(tmp_path.glob("*.part"))


def test_position_zero_restarts_a_transfer_and_crashes_drop_partials(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    abandoned, fresh = SnapshotId(50, 4), SnapshotId(60, 4)
    store.write_chunk(abandoned, 0, b"partial")
    store.write_chunk(fresh, 0, b"x" * 10)
    assert [path.name for path in tmp_path.glob("*.part")] == [file_name(fresh) + ".part"]
    with pytest.raises(SnapshotFormatError):
        store.complete(fresh, 11)
    # At startup a partial file is a transfer a crash interrupted: it starts over.
    assert store.open_latest() is None
    assert not list(tmp_path.glob("*.part"))
