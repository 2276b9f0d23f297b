"""A partition directory's `partition.metadata`: Kafka's format, written atomically, read back."""

from __future__ import annotations

import os
from pathlib import Path
from uuid import UUID

import pytest

from storage import durability
from storage.partition_metadata import (
    PARTITION_METADATA_FILE,
    PartitionMetadataError,
    decode_topic_id,
    encode_topic_id,
    read_partition_metadata,
    write_partition_metadata,
    write_partition_metadata_unsynced,
)

TOPIC_ID = UUID("b0a1bf6c-0f61-4bba-9e9c-1d2f3a4b5c6d")


def test_topic_ids_print_as_kafka_prints_a_uuid() -> None:
    # Kafka's Uuid.METADATA_TOPIC_ID is Uuid(0, 1), printed "AAAAAAAAAAAAAAAAAAAAAQ".
    assert encode_topic_id(UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    # URL-safe alphabet ('-' and '_', not '+' and '/'), no padding.
    assert encode_topic_id(UUID(bytes=b"\xfb\xff" * 8)) == "-__7__v_-__7__v_-__7_w"
    assert len(encode_topic_id(TOPIC_ID)) == 22
    assert decode_topic_id(encode_topic_id(TOPIC_ID)) == TOPIC_ID


@pytest.mark.parametrize(
    "text",
    [
        "",
        "AAAAAAAAAAAAAAAAAAAAAQ==",
        "AAAAAAAAAAAAAAAAAAAAA",
        "AAAAAAAAAAAAAAAAAAAA+Q",
        "AAAAAAAAAAAAAAAAAAAAAR",
    ],
)
def test_a_string_that_is_no_kafka_uuid_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        decode_topic_id(text)


def test_the_file_holds_kafkas_two_lines_and_reads_back(tmp_path: Path) -> None:
    write_partition_metadata(tmp_path, TOPIC_ID)
    text = (tmp_path / PARTITION_METADATA_FILE).read_text()
    assert text == f"version: 0\ntopic_id: {encode_topic_id(TOPIC_ID)}\n"
    assert read_partition_metadata(tmp_path) == TOPIC_ID
    assert not list(tmp_path.glob("*.tmp"))


def test_kafkas_own_file_without_a_final_newline_reads(tmp_path: Path) -> None:
    # What Kafka's PartitionMetadataFileFormatter writes.
    (tmp_path / PARTITION_METADATA_FILE).write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    assert read_partition_metadata(tmp_path) == UUID(int=1)


def test_a_directory_without_the_file_records_no_topic_id(tmp_path: Path) -> None:
    assert read_partition_metadata(tmp_path) is None


def test_writing_replaces_the_file_and_syncs_it_and_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = tmp_path / "journal"
    partition_dir = tmp_path / "orders-0"
    partition_dir.mkdir()
    synced: list[Path] = []
    real_sync = durability.sync_directory

    def sync_directory(path: str | os.PathLike[str]) -> None:
        synced.append(Path(path))
        real_sync(path)

    monkeypatch.setattr(durability, "sync_directory", sync_directory)
    durability.enable_journal(journal)
    try:
        write_partition_metadata(partition_dir, UUID(int=7))
        write_partition_metadata(partition_dir, TOPIC_ID)
    finally:
        durability.disable_journal()
    path = partition_dir / PARTITION_METADATA_FILE
    # Durable at its full length, under its own name (written aside, then renamed).
    assert durability.durable_lengths(journal) == {str(path): path.stat().st_size}
    assert synced == [partition_dir, partition_dir]
    assert read_partition_metadata(partition_dir) == TOPIC_ID


def test_the_zero_topic_id_is_never_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="zero"):
        write_partition_metadata(tmp_path, UUID(int=0))


@pytest.mark.parametrize(
    "content",
    [
        "version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n",
        "version:0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n",
        "version: 0\ntopic: AAAAAAAAAAAAAAAAAAAAAQ\n",
        "version: 0\ntopic_id: not-a-topic-id\n",
        "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n",
    ],
)
def test_a_file_not_in_kafkas_format_is_refused(tmp_path: Path, content: str) -> None:
    (tmp_path / PARTITION_METADATA_FILE).write_text(content)
    with pytest.raises(PartitionMetadataError):
        read_partition_metadata(tmp_path)


@pytest.mark.parametrize("length", range(len(f"version: 0\ntopic_id: {encode_topic_id(TOPIC_ID)}")))
def test_a_file_a_crash_cut_short_records_no_topic_id_yet(tmp_path: Path, length: int) -> None:
    # A new log's file is written in place: a crash may leave any prefix of it.
    whole = f"version: 0\ntopic_id: {encode_topic_id(TOPIC_ID)}\n"
    (tmp_path / PARTITION_METADATA_FILE).write_text(whole[:length])
    assert read_partition_metadata(tmp_path) is None


@pytest.mark.parametrize("size", [1, 45, 4096])
def test_a_file_of_nul_bytes_records_no_topic_id_yet(tmp_path: Path, size: int) -> None:
    # A size extended on disk before the data it covered reached it.
    (tmp_path / PARTITION_METADATA_FILE).write_bytes(b"\0" * size)
    assert read_partition_metadata(tmp_path) is None


def test_a_prefix_that_goes_wrong_is_refused_not_taken_as_cut_short(tmp_path: Path) -> None:
    (tmp_path / PARTITION_METADATA_FILE).write_text("version: 0\ntopic_idX")
    with pytest.raises(PartitionMetadataError):
        read_partition_metadata(tmp_path)


def test_the_whole_id_without_its_line_end_reads(tmp_path: Path) -> None:
    # Cut just before the last newline: the id is whole (and Kafka writes none there).
    whole = f"version: 0\ntopic_id: {encode_topic_id(TOPIC_ID)}"
    (tmp_path / PARTITION_METADATA_FILE).write_text(whole)
    assert read_partition_metadata(tmp_path) == TOPIC_ID


def test_a_new_logs_file_is_written_with_no_fsync(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    partition_dir = tmp_path / "orders-0"
    partition_dir.mkdir()
    durability.enable_journal(journal)
    try:
        path = write_partition_metadata_unsynced(partition_dir, TOPIC_ID)
    finally:
        durability.disable_journal()
    assert path == partition_dir / PARTITION_METADATA_FILE
    assert read_partition_metadata(partition_dir) == TOPIC_ID
    assert sorted(p.name for p in partition_dir.iterdir()) == [PARTITION_METADATA_FILE]
    assert journal.read_text() == ""
