"""Formatting log directories and refusing foreign ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from node.meta_properties import (
    META_PROPERTIES,
    LogDirectoryError,
    ensure_formatted,
    read_meta_properties,
)


def test_empty_directories_are_formatted_once(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    first = ensure_formatted(dirs, "cluster-1", 3)
    assert [meta.node_id for meta in first] == [3, 3]
    assert len({meta.directory_id for meta in first}) == 2
    assert all(len(meta.directory_id) == 22 for meta in first)
    again = ensure_formatted(dirs, "cluster-1", 3)
    assert again == first
    assert read_meta_properties(dirs[0]) == first[0]


@pytest.mark.parametrize(
    ("cluster", "node", "message"),
    [("cluster-2", 3, "belongs to cluster 'cluster-1'"), ("cluster-1", 4, "belongs to node 3")],
)
def test_a_foreign_directory_is_refused_and_nothing_is_written(
    tmp_path: Path, cluster: str, node: int, message: str
) -> None:
    ensure_formatted([tmp_path / "a"], "cluster-1", 3)
    fresh = tmp_path / "fresh"
    with pytest.raises(LogDirectoryError, match=message):
        ensure_formatted([fresh, tmp_path / "a"], cluster, node)
    assert not fresh.exists()


def test_data_without_meta_properties_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a" / "orders-0").mkdir(parents=True)
    with pytest.raises(LogDirectoryError, match=r"holds data but no meta\.properties"):
        ensure_formatted([tmp_path / "a"], "c", 1)


def test_damaged_or_copied_meta_properties_are_refused(tmp_path: Path) -> None:
    ensure_formatted([tmp_path / "a"], "c", 1)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / META_PROPERTIES).write_bytes((tmp_path / "a" / META_PROPERTIES).read_bytes())
    with pytest.raises(LogDirectoryError, match=r"share a directory\.id"):
        ensure_formatted([tmp_path / "a", tmp_path / "b"], "c", 1)
    (tmp_path / "b" / META_PROPERTIES).write_text("version=1\ncluster.id=c\n")
    with pytest.raises(LogDirectoryError, match="malformed"):
        ensure_formatted([tmp_path / "b"], "c", 1)
