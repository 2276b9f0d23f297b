"""Leader epochs of many partitions assigned in memory and checkpointed together
(`EpochCheckpoints`) end up exactly as assigning and persisting each one by one would."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from storage.leader_epoch_cache import EpochCheckpoints, LeaderEpochCache

# Per partition: the (epoch, start offset) assignments of successive new leaderships, some of
# them stale (an epoch not newer than the latest), which are ignored either way.
_assignments = st.lists(
    st.lists(st.tuples(st.integers(0, 8), st.integers(0, 50)), max_size=6),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(_assignments)
def test_checkpoints_written_together_equal_those_persisted_one_by_one(
    per_partition: list[list[tuple[int, int]]],
) -> None:
    root = Path(tempfile.mkdtemp(prefix="epoch-checkpoints-"))
    try:
        one_by_one = [_cache(root / "single" / str(index)) for index in range(len(per_partition))]
        together = [_cache(root / "batched" / str(index)) for index in range(len(per_partition))]
        for single, batched, assignments in zip(one_by_one, together, per_partition, strict=True):
            checkpoints = EpochCheckpoints()
            for epoch, offset in assignments:
                single.assign(epoch, offset)
                checkpoints.assign(batched, epoch, offset)
            checkpoints.write()
        for single, batched in zip(one_by_one, together, strict=True):
            assert batched.entries == single.entries
            reloaded = LeaderEpochCache.load(batched.checkpoint_path.parent)
            expected = LeaderEpochCache.load(single.checkpoint_path.parent)
            assert (reloaded and reloaded.entries) == (expected and expected.entries)
    finally:
        shutil.rmtree(root)


def test_one_write_covers_every_cache_assigned_since_the_last(tmp_path: Path) -> None:
    caches = [_cache(tmp_path / str(index)) for index in range(20)]
    checkpoints = EpochCheckpoints()
    for index, cache in enumerate(caches):
        checkpoints.assign(cache, 3, index)
    assert not any(cache.checkpoint_exists for cache in caches)
    checkpoints.write()
    for index, cache in enumerate(caches):
        loaded = LeaderEpochCache.load(cache.checkpoint_path.parent)
        assert loaded is not None
        assert [(entry.epoch, entry.start_offset) for entry in loaded.entries] == [(3, index)]
    # Nothing assigned since: the next write writes nothing.
    caches[0].checkpoint_path.unlink()
    checkpoints.write()
    assert not caches[0].checkpoint_exists


def test_a_cache_whose_checkpoint_cannot_be_written_forgets_the_new_epoch(
    tmp_path: Path,
) -> None:
    kept, lost = _cache(tmp_path / "kept"), _cache(tmp_path / "lost")
    kept.assign(1, 0)
    lost.assign(1, 0)
    checkpoints = EpochCheckpoints()
    checkpoints.assign(kept, 2, 5)
    checkpoints.assign(lost, 2, 5)
    shutil.rmtree(tmp_path / "lost")
    checkpoints.write()
    assert kept.latest_epoch == 2
    # Not on disk, so not in memory either: the first append starts (and persists) it.
    assert lost.latest_epoch == 1


def _cache(directory: Path) -> LeaderEpochCache:
    directory.mkdir(parents=True)
    return LeaderEpochCache.empty(directory)
