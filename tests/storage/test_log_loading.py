"""Opening logs at start: a log trusted after a clean shutdown (one listing of its directory,
no scan) answers exactly as the same log recovered batch by batch, and the files a crash or a
stop left over go either way."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from storage.cleaner_swap import cleaned_path
from storage.log import Log, LogConfig
from tests.storage.helpers import make_batch, read_values

_CONFIG = LogConfig(segment_bytes=250, index_interval_bytes=100)


def _written(directory: Path) -> Log:
    """A log of several segments and three leader epochs, flushed and closed as a clean
    shutdown leaves it."""
    log = Log.open(directory, _CONFIG)
    for epoch in (0, 0, 2, 2, 2, 5):
        log.append(make_batch(3, tag=epoch), leader_epoch=epoch)
    log.update_high_watermark(12)
    log.flush()
    log.close()
    return log


def _answers(log: Log) -> tuple[object, ...]:
    return (
        log.log_start_offset,
        log.log_end_offset,
        log.high_watermark,
        log.recovery_point,
        log.segment_base_offsets,
        log.leader_epoch_cache.entries,
        [log.end_offset_for_epoch(epoch) for epoch in range(7)],
        read_values(log),
        log.size_in_bytes,
    )


def test_a_log_trusted_after_a_clean_shutdown_answers_as_a_recovered_one(tmp_path: Path) -> None:
    written = _written(tmp_path / "clean")
    assert len(written.segment_base_offsets) > 2
    shutil.copytree(tmp_path / "clean", tmp_path / "recovered")
    point = written.recovery_point
    trusted = Log.open(
        tmp_path / "clean", _CONFIG, clean_shutdown=True, high_watermark=12, recovery_point=point
    )
    recovered = Log.open(
        tmp_path / "recovered",
        _CONFIG,
        clean_shutdown=False,
        high_watermark=12,
        recovery_point=point,
    )
    assert _answers(trusted) == _answers(recovered)
    assert trusted.log_end_offset == 18
    assert trusted.leader_epoch_cache.latest_epoch == 5
    # Both take appends where the log ended, into the same segments.
    for log in (trusted, recovered):
        log.append(make_batch(2, tag=6), leader_epoch=6)
    assert _answers(trusted) == _answers(recovered)


@pytest.mark.parametrize("clean_shutdown", [True, False])
def test_files_left_over_go_when_a_log_is_opened(tmp_path: Path, clean_shutdown: bool) -> None:
    directory = tmp_path / "log"
    written = _written(directory)
    first = written.segment_base_offsets[0]
    before = sorted(path.name for path in directory.iterdir())
    leftovers = [
        directory / "leader-epoch-checkpoint.tmp",
        directory / f"{999:020d}.index",
        directory / f"{999:020d}.timeindex",
        directory / "stray.index",
        cleaned_path(directory, first),
    ]
    for path in leftovers:
        path.write_bytes(b"left over")
    reopened = Log.open(directory, _CONFIG, clean_shutdown=clean_shutdown, recovery_point=18)
    assert sorted(path.name for path in directory.iterdir()) == before
    assert reopened.log_end_offset == 18
    assert read_values(reopened) == read_values(Log.open(directory, _CONFIG, recovery_point=18))


def test_a_missing_log_directory_is_created_empty(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "new" / "topic-0", _CONFIG, clean_shutdown=True)
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    assert log.leader_epoch_cache.entries == []


@pytest.mark.parametrize("then", ["flush", "close"])
def test_indexes_rebuilt_by_a_recovery_reach_their_files_at_the_next_flush_or_close(
    tmp_path: Path, then: str
) -> None:
    # Recovery rebuilds the indexes in memory only (a start recovers thousands of logs): the
    # stale files stay until the segment's next flush or close writes them whole, after which
    # a clean open trusts them and finds every batch.
    config = LogConfig(index_interval_bytes=0)
    log = Log.open(tmp_path, config)
    for tag in range(5):
        log.append(make_batch(2, tag=tag), leader_epoch=1)
    log.flush()
    log.close()
    index_files = sorted(tmp_path.glob("*index"))
    written = {path: path.read_bytes() for path in index_files}
    assert all(written.values())
    for path in index_files:
        path.write_bytes(b"\xff" * 4 * len(written[path]))
    recovered = Log.open(tmp_path, config, clean_shutdown=False, flush_recovered=False)
    assert all(path.read_bytes() != written[path] for path in index_files)
    if then == "flush":
        recovered.append(make_batch(1, tag=9), leader_epoch=1)
        recovered.flush()
        assert all(path.read_bytes().startswith(written[path]) for path in index_files)
    recovered.close()
    if then == "close":
        assert all(path.read_bytes() == written[path] for path in index_files)
    trusted = Log.open(tmp_path, config, clean_shutdown=True)
    assert len(read_values(trusted)) == (11 if then == "flush" else 10)
    assert [trusted.read(offset, 1).records is not None for offset in range(10)] == [True] * 10
    trusted.close()


def test_a_segment_below_the_index_interval_opens_without_index_files_and_a_larger_one_rebuilds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = Log.open(tmp_path / "small", _CONFIG)
    small.append(make_batch(1, tag=0), leader_epoch=0)
    assert small.size_in_bytes <= _CONFIG.index_interval_bytes
    small.write_back()
    small.close()
    large = _written(tmp_path / "large")
    for name in ("small", "large"):
        shutil.copytree(tmp_path / name, tmp_path / f"{name}-whole")
    # A clean stop writes no file for an index with no entry (a log the log manager creates
    # has none until then); the larger log's first segment lost its index files.
    for name, base_offset in (("small", 0), ("large", large.segment_base_offsets[0])):
        for suffix in (".index", ".timeindex"):
            (tmp_path / name / f"{base_offset:020d}{suffix}").unlink()

    def reopened(name: str, log_end_offset: int) -> Log:
        return Log.open(
            tmp_path / name,
            _CONFIG,
            clean_shutdown=True,
            high_watermark=log_end_offset,
            recovery_point=log_end_offset,
        )

    rebuilt = {}
    for name, log in (("small", small), ("large", large)):
        capsys.readouterr()
        opened = reopened(name, log.log_end_offset)
        rebuilt[name] = capsys.readouterr().out.count("segment_index_rebuild")
        whole = reopened(f"{name}-whole", log.log_end_offset)
        assert _answers(opened) == _answers(whole)
        opened.close()
        whole.close()
    assert rebuilt == {"small": 0, "large": 1}
