"""Unclean restarts over damaged files: recovery must yield a valid prefix of what was appended.

A log with many small segments, sparse indexes and several leader epochs is flushed part of the
way (its recovery point), written further, then closed without a clean shutdown. Each test
copies it, damages the copy the way a crash (or a bad disk) would, and reopens it unclean:
- log files cut at random positions, or bytes flipped, beyond the recovery point (a crash only
  loses or garbles what was never fsynced), and anywhere once the recovery point is forgotten;
- index files cut or removed; the leader-epoch checkpoint removed, cut or garbled;
- the same through a LogManager that stopped without `shutdown`.
After reopening, the log must hold exactly the first k appended batches (same bytes, offsets
and epochs; every CRC valid; reads from every batch agree), keep everything below the recovery
point when only later bytes were damaged, have an epoch cache that describes its batches, take
new appends at its log end offset, and reopen again to the same state.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.leader_epoch_cache import CHECKPOINT_NAME
from storage.log import Log, LogConfig
from storage.log_manager import (
    RECOVERY_POINT_CHECKPOINT,
    LogManager,
    TopicPartition,
)
from storage.segment import INDEX_SUFFIX, TIME_INDEX_SUFFIX
from tests.storage.log_checks import (
    Appended,
    Planned,
    append_planned,
    assert_appends_continue,
    assert_valid_prefix,
    plan_appends,
    stored_batches,
)

CONFIG = LogConfig(segment_bytes=900, index_interval_bytes=150, retention_ms=None)
EPOCHS = (0, 1, 3, 4, 7, 9)
APPENDS = 48
FLUSHED_APPENDS = 27
NEW_EPOCH = 20
PARTITIONS = (TopicPartition("orders", 0), TopicPartition("orders", 1))

HYPOTHESIS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Bytes of a batch that its CRC does not cover and that recovery cannot check: the base offset
# (a larger one reads as an offset gap, which replication may legitimately create) and the
# partition leader epoch. The RecordBatch v2 format leaves them unprotected, as in Kafka.
_UNPROTECTED = (*range(8), *range(12, 16))


class Template:
    """A log left by an unclean stop: `appended` in order, fsynced up to `recovery_point`."""

    def __init__(self, directory: Path, appended: list[Appended], recovery_point: int) -> None:
        self.directory = directory
        self.appended = appended
        self.recovery_point = recovery_point

    def __repr__(self) -> str:
        return f"Template({self.directory}, recovery_point={self.recovery_point})"

    def boundary_in(self, name: str, offset: int) -> int | None:
        """The position in log file `name` from which its batches hold offsets >= `offset`
        (None when none of its batches does)."""
        positions = [
            batch.position
            for batch in self.appended
            if batch.file.name == name and batch.base_offset >= offset
        ]
        return min(positions) if positions else None

    def log_file_names(self) -> list[str]:
        return sorted({batch.file.name for batch in self.appended})

    def cuttable(self, from_offset: int) -> list[tuple[str, int, int]]:
        """(log file name, lowest, highest cut position) of each file holding batches at or
        above `from_offset`."""
        places: list[tuple[str, int, int]] = []
        for name in self.log_file_names():
            lowest = self.boundary_in(name, from_offset)
            if lowest is not None:
                places.append((name, lowest, (self.directory / name).stat().st_size))
        return places

    def flippable(self, from_offset: int) -> list[tuple[str, int]]:
        """(log file name, position) of every CRC-checked byte of the batches at or above
        `from_offset`."""
        places: list[tuple[str, int]] = []
        for batch in self.appended:
            if batch.base_offset < from_offset:
                continue
            unprotected = {batch.position + index for index in _UNPROTECTED}
            places.extend(
                (batch.file.name, position)
                for position in range(batch.position, batch.position + len(batch.raw))
                if position not in unprotected
            )
        return places


def build_log(directory: Path, seed: int) -> Template:
    """Append a planned history, flushing part of the way, and stop without a clean close."""
    log = Log.open(directory, CONFIG)
    plan = plan_appends(seed=seed, count=APPENDS, epochs=EPOCHS)
    for planned in plan[:FLUSHED_APPENDS]:
        append_planned(log, planned)
    log.flush()
    recovery_point = log.recovery_point
    for planned in plan[FLUSHED_APPENDS:]:
        append_planned(log, planned)
    appended = stored_batches(log)
    log.close()
    return Template(directory, appended, recovery_point)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    built = build_log(tmp_path_factory.mktemp("crash-template"), seed=7)
    assert len(built.log_file_names()) >= 8, "the template needs many segments"
    assert 0 < built.recovery_point < built.appended[-1].next_offset
    assert built.boundary_in(built.log_file_names()[-1], built.recovery_point) is not None
    return built


def cut(path: Path, position: int) -> None:
    os.truncate(path, min(position, path.stat().st_size))


def flip(path: Path, position: int, mask: int) -> None:
    with path.open("r+b") as file:
        file.seek(position)
        byte = file.read(1)[0]
        file.seek(position)
        file.write(bytes([byte ^ mask]))


def first_lost(appended: list[Appended], name: str, position: int) -> int:
    """Index of the first batch that damage at `position` of log file `name` destroys (the
    one holding that byte, or the one starting there); len(appended) if none."""
    return next(
        (
            index
            for index, batch in enumerate(appended)
            if batch.file.name == name and batch.position + len(batch.raw) > position
        ),
        len(appended),
    )


def check_reopens(
    directory: Path,
    appended: list[Appended],
    *,
    recovery_point: int,
    at_least: int,
    timestamps: bool = True,
) -> int:
    """Reopen unclean and check the log; reopen again (same state); append; reopen again.
    Returns how many of the appended batches survived."""
    with opened(directory, recovery_point) as log:
        kept = assert_valid_prefix(log, appended, at_least=at_least, timestamps=timestamps)
        assert log.recovery_point == log.log_end_offset  # what recovery kept is fsynced
        segments = log.segment_base_offsets

    with opened(directory, recovery_point) as again:
        assert assert_valid_prefix(again, appended, timestamps=timestamps) == kept
        assert again.segment_base_offsets == segments
        extra = Planned(records=3, value_size=40, timestamp=5_000_000, epoch=NEW_EPOCH, tag=999)
        new = assert_appends_continue(again, extra)

    with opened(directory, 0) as last:
        expected = [*appended[:kept], new]
        assert assert_valid_prefix(last, expected, timestamps=timestamps) == kept + 1
    return kept


@contextmanager
def scratch_copy(source: Path) -> Iterator[Path]:
    """A throwaway copy of `source` to damage (hypothesis examples cannot share tmp_path)."""
    with tempfile.TemporaryDirectory(prefix="crash-") as scratch:
        copy = Path(scratch) / source.name
        shutil.copytree(source, copy)
        yield copy


@contextmanager
def opened(directory: Path, recovery_point: int) -> Iterator[Log]:
    """The log in `directory`, opened after an unclean stop; closed (no flush) on exit."""
    log = Log.open(directory, CONFIG, recovery_point=recovery_point, clean_shutdown=False)
    try:
        yield log
    finally:
        log.close()


# -- log files cut ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "trust_recovery_point",
    [True, False],
    ids=["cut-beyond-the-recovery-point", "cut-anywhere-recover-from-the-start"],
)
@HYPOTHESIS
@given(data=st.data())
def test_log_files_cut(template: Template, data: st.DataObject, trust_recovery_point: bool) -> None:
    recovery_point = template.recovery_point if trust_recovery_point else 0
    places = template.cuttable(recovery_point)
    cuts = data.draw(
        st.lists(
            st.sampled_from(places).flatmap(
                lambda place: st.tuples(st.just(place[0]), st.integers(place[1], place[2]))
            ),
            min_size=1,
            max_size=3,
        ),
        label="cuts",
    )
    with scratch_copy(template.directory) as directory:
        for name, position in cuts:
            cut(directory / name, position)
        kept = check_reopens(
            directory,
            template.appended,
            recovery_point=recovery_point,
            at_least=recovery_point,
        )
        # Recovery keeps every whole batch before the first cut, and nothing after it.
        assert kept == min(first_lost(template.appended, name, position) for name, position in cuts)


@pytest.mark.parametrize("segment", [1, 3, 5, -2])
@pytest.mark.parametrize("where", ["batch_boundary", "empty", "missing"])
def test_an_unflushed_segment_cut_between_batches_drops_the_later_segments(
    template: Template, segment: int, where: str, tmp_path: Path
) -> None:
    """A cut that lands exactly between two batches, or takes a whole file, leaves segments
    that validate; the segments after it then continue from offsets the log no longer has,
    and must go too."""
    directory = tmp_path / "log"
    shutil.copytree(template.directory, directory)
    name = template.log_file_names()[segment]
    in_file = [batch for batch in template.appended if batch.file.name == name]
    victim = in_file[len(in_file) // 2] if where == "batch_boundary" else in_file[0]
    if where == "missing":
        for path in directory.glob(name.replace(".log", ".*")):
            path.unlink()
    else:
        cut(directory / name, victim.position)
    kept = check_reopens(directory, template.appended, recovery_point=0, at_least=0)
    assert kept == template.appended.index(victim)


def test_indexes_rebuilt_by_recovery_replace_the_old_files_whole(
    template: Template, tmp_path: Path
) -> None:
    """Recovery rebuilds the indexes of the segments it validates. If it cut a segment, the old
    index files hold entries past the new end; they must not survive into the next (clean)
    open, where an entry pointing at the end of the file would make the segment look empty."""
    directory = tmp_path / "log"
    shutil.copytree(template.directory, directory)
    name = template.log_file_names()[-1]
    index = directory / name.replace(".log", INDEX_SUFFIX)
    entries = list(struct.iter_unpack(">II", index.read_bytes()))
    assert entries, "the last segment needs offset index entries"
    _, position = entries[-1]
    cut(directory / name, position)
    kept = first_lost(template.appended, name, position)

    log = Log.open(directory, CONFIG, recovery_point=template.recovery_point)
    assert assert_valid_prefix(log, template.appended) == kept
    log.close()  # recovery flushed it: a clean start may trust it
    clean = Log.open(directory, CONFIG, recovery_point=log.recovery_point, clean_shutdown=True)
    assert assert_valid_prefix(clean, template.appended) == kept
    clean.close()


@pytest.mark.parametrize("lower_by", [1, 1000])
def test_a_batch_whose_offsets_go_back_ends_the_log(
    template: Template, lower_by: int, tmp_path: Path
) -> None:
    """The base offset is outside the CRC: a batch that passes its CRC but does not continue
    the offsets (stale or misdirected data) must end recovery like a bad CRC does."""
    directory = tmp_path / "log"
    shutil.copytree(template.directory, directory)
    index = next(
        index
        for index, batch in enumerate(template.appended)
        if batch.base_offset > template.recovery_point and batch.position > 0
    )
    victim = template.appended[index]
    with (directory / victim.file.name).open("r+b") as file:
        file.seek(victim.position)
        file.write(struct.pack(">q", victim.base_offset - lower_by))
    kept = check_reopens(
        directory,
        template.appended,
        recovery_point=template.recovery_point,
        at_least=template.recovery_point,
    )
    assert kept == index


# -- log bytes garbled ------------------------------------------------------------------------


def _flip_and_check(
    template: Template, data: st.DataObject, *, from_offset: int, recovery_point: int
) -> None:
    places = template.flippable(from_offset)
    flips = data.draw(
        st.lists(
            st.tuples(st.sampled_from(places), st.integers(1, 255)),
            min_size=1,
            max_size=4,
            unique_by=lambda flip: flip[0],
        ),
        label="flips",
    )
    with scratch_copy(template.directory) as directory:
        for (name, position), mask in flips:
            flip(directory / name, position, mask)
        garbled = {first_lost(template.appended, name, position) for (name, position), _ in flips}
        kept = check_reopens(
            directory, template.appended, recovery_point=recovery_point, at_least=from_offset
        )
        # The first garbled batch and everything after it are gone; everything before stays.
        assert kept == min(garbled)


@HYPOTHESIS
@given(data=st.data())
def test_bytes_garbled_beyond_the_recovery_point(template: Template, data: st.DataObject) -> None:
    _flip_and_check(
        template,
        data,
        from_offset=template.recovery_point,
        recovery_point=template.recovery_point,
    )


@HYPOTHESIS
@given(data=st.data())
def test_bytes_garbled_anywhere_without_a_recovery_point(
    template: Template, data: st.DataObject
) -> None:
    _flip_and_check(template, data, from_offset=0, recovery_point=0)


# -- indexes ------------------------------------------------------------------------------------


@HYPOTHESIS
@given(data=st.data())
def test_index_files_cut_lose_nothing(template: Template, data: st.DataObject) -> None:
    indexes = sorted(
        path.name
        for path in template.directory.iterdir()
        if path.suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX) and path.stat().st_size
    )
    cuts = data.draw(
        st.lists(
            st.sampled_from(indexes).flatmap(
                lambda name: st.tuples(
                    st.just(name),
                    st.integers(0, (template.directory / name).stat().st_size - 1),
                )
            ),
            min_size=1,
            max_size=4,
        ),
        label="cuts",
    )
    with scratch_copy(template.directory) as directory:
        for name, position in cuts:
            cut(directory / name, position)
        # A time index cut between entries still loads, and the segment's max timestamp is
        # then taken from what is left (as Kafka does): lookups can miss the segment. Only a
        # torn file is noticed and rebuilt. (Index files below the recovery point were
        # fsynced, so a crash alone cannot cut them.)
        shortened = any(
            name.endswith(TIME_INDEX_SUFFIX) and position % 12 == 0 for name, position in cuts
        )
        kept = check_reopens(
            directory,
            template.appended,
            recovery_point=template.recovery_point,
            at_least=template.appended[-1].next_offset,
            timestamps=not shortened,
        )
        assert kept == len(template.appended)


@HYPOTHESIS
@given(data=st.data())
def test_index_files_removed_lose_nothing(template: Template, data: st.DataObject) -> None:
    indexes = sorted(
        path.name
        for path in template.directory.iterdir()
        if path.suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX)
    )
    removed = data.draw(
        st.lists(st.sampled_from(indexes), min_size=1, unique=True), label="removed"
    )
    with scratch_copy(template.directory) as directory:
        for name in removed:
            (directory / name).unlink()
        check_reopens(
            directory,
            template.appended,
            recovery_point=template.recovery_point,
            at_least=template.appended[-1].next_offset,
        )


# -- leader-epoch checkpoint --------------------------------------------------------------


@HYPOTHESIS
@given(data=st.data())
def test_damaged_leader_epoch_checkpoint_is_rebuilt(
    template: Template, data: st.DataObject
) -> None:
    checkpoint = template.directory / CHECKPOINT_NAME
    size = checkpoint.stat().st_size
    damage = data.draw(
        st.one_of(
            st.just(("remove", 0, b"")),
            st.tuples(st.just("cut"), st.integers(0, size - 1), st.just(b"")),
            st.tuples(st.just("garbage"), st.just(0), st.binary(min_size=1, max_size=40)),
        ),
        label="damage",
    )
    places = template.cuttable(template.recovery_point)
    log_cut = data.draw(
        st.none()
        | st.sampled_from(places).flatmap(
            lambda place: st.tuples(st.just(place[0]), st.integers(place[1], place[2]))
        ),
        label="log cut",
    )
    with scratch_copy(template.directory) as directory:
        kind, position, garbage = damage
        if kind == "remove":
            (directory / CHECKPOINT_NAME).unlink()
        elif kind == "cut":
            cut(directory / CHECKPOINT_NAME, position)
        else:
            (directory / CHECKPOINT_NAME).write_bytes(garbage)
        if log_cut is not None:
            cut(directory / log_cut[0], log_cut[1])
        check_reopens(
            directory,
            template.appended,
            recovery_point=template.recovery_point,
            at_least=template.recovery_point,
        )


def test_a_leader_epoch_checkpoint_cut_anywhere_is_not_trusted(tmp_path: Path) -> None:
    """A checkpoint cut inside its last number ("5 120" -> "5 12") still parses, in order:
    trusting it would move where epoch 5 starts. Every cut must be noticed (and the cache
    rebuilt from the batches), even with every segment below the recovery point."""
    source = tmp_path / "source"
    log = Log.open(source, CONFIG)
    for tag in range(70):
        epoch = 0 if tag < 60 else 5
        append_planned(log, Planned(records=2, value_size=20, timestamp=tag, epoch=epoch, tag=tag))
    log.flush()
    appended = stored_batches(log)
    end = log.log_end_offset
    log.close()
    text = (source / CHECKPOINT_NAME).read_bytes()
    assert text.endswith(b"\n5 120\n")
    for length in range(len(text)):
        directory = tmp_path / f"cut-{length}"
        shutil.copytree(source, directory)
        cut(directory / CHECKPOINT_NAME, length)
        with opened(directory, end) as reopened:
            assert assert_valid_prefix(reopened, appended) == len(appended), f"cut at {length}"


# -- through the LogManager -----------------------------------------------------------------


class ManagerTemplate:
    def __init__(self, data_dir: Path, logs: dict[TopicPartition, Template]) -> None:
        self.data_dir = data_dir
        self.logs = logs

    def __repr__(self) -> str:
        return f"ManagerTemplate({self.data_dir})"


def build_manager(data_dir: Path) -> ManagerTemplate:
    """Two partitions written through a LogManager, flushed and checkpointed part of the way,
    then closed without `shutdown` (no clean-shutdown marker)."""
    manager = LogManager.open([data_dir], CONFIG)
    logs = {partition: manager.get_or_create_log(partition, CONFIG) for partition in PARTITIONS}
    plans = {
        partition: plan_appends(seed=11 + index, count=APPENDS, epochs=EPOCHS)
        for index, partition in enumerate(PARTITIONS)
    }
    recovery_points = {}
    for partition, log in logs.items():
        for planned in plans[partition][:FLUSHED_APPENDS]:
            append_planned(log, planned)
        log.flush()
        recovery_points[partition] = log.recovery_point
    manager.checkpoint()
    for partition, log in logs.items():
        for planned in plans[partition][FLUSHED_APPENDS:]:
            append_planned(log, planned)
    stored = {partition: stored_batches(log) for partition, log in logs.items()}
    manager.close()
    return ManagerTemplate(
        data_dir,
        {
            partition: Template(
                data_dir / partition.dir_name, stored[partition], recovery_points[partition]
            )
            for partition in PARTITIONS
        },
    )


@pytest.fixture(scope="module")
def manager_template(tmp_path_factory: pytest.TempPathFactory) -> ManagerTemplate:
    return build_manager(tmp_path_factory.mktemp("manager-template") / "data")


@settings(HYPOTHESIS, max_examples=15)
@given(data=st.data())
def test_log_manager_without_shutdown_recovers_each_log(
    manager_template: ManagerTemplate, data: st.DataObject
) -> None:
    damages = {}
    for partition, built in manager_template.logs.items():
        cuts = built.cuttable(built.recovery_point)
        flips = built.flippable(built.recovery_point)
        damages[partition] = data.draw(
            st.one_of(
                st.tuples(
                    st.just("cut"),
                    st.sampled_from(cuts).flatmap(
                        lambda place: st.tuples(st.just(place[0]), st.integers(place[1], place[2]))
                    ),
                ),
                st.tuples(st.just("flip"), st.sampled_from(flips)),
            ),
            label=f"damage {partition.dir_name}",
        )
    with scratch_copy(manager_template.data_dir) as data_dir:
        for partition, (kind, (name, position)) in damages.items():
            path = data_dir / partition.dir_name / name
            if kind == "cut":
                cut(path, position)
            else:
                flip(path, position, 0xFF)

        manager = LogManager.open([data_dir], CONFIG)
        assert not manager.clean_shutdown
        assert manager.broker_epoch_at_start is None
        kept = {}
        for partition, built in manager_template.logs.items():
            log = manager.get_log(partition)
            assert log is not None
            kept[partition] = assert_valid_prefix(
                log, built.appended, at_least=built.recovery_point
            )
            _, (name, position) = damages[partition]
            assert kept[partition] == first_lost(built.appended, name, position)
        manager.checkpoint()
        manager.close()

        # Again unclean: the same logs. Then a clean shutdown, and a clean start.
        manager = LogManager.open([data_dir], CONFIG)
        assert not manager.clean_shutdown
        for partition, built in manager_template.logs.items():
            log = manager.get_log(partition)
            assert log is not None
            assert assert_valid_prefix(log, built.appended) == kept[partition]
        manager.shutdown(broker_epoch=42)
        manager = LogManager.open([data_dir], CONFIG)
        assert manager.clean_shutdown
        assert manager.broker_epoch_at_start == 42
        for partition, built in manager_template.logs.items():
            log = manager.get_log(partition)
            assert log is not None
            assert assert_valid_prefix(log, built.appended) == kept[partition]
        manager.close()


def test_lost_recovery_point_checkpoint_recovers_everything(
    manager_template: ManagerTemplate, tmp_path: Path
) -> None:
    """Without its recovery-point checkpoint a LogManager validates every segment, so damage
    even below the old recovery point is found and cut."""
    data_dir = tmp_path / "data"
    shutil.copytree(manager_template.data_dir, data_dir)
    (data_dir / RECOVERY_POINT_CHECKPOINT).unlink()
    built = manager_template.logs[PARTITIONS[0]]
    victim = built.appended[3]
    flip(data_dir / PARTITIONS[0].dir_name / victim.file.name, victim.position + 40, 0x01)
    manager = LogManager.open([data_dir], CONFIG)
    log = manager.get_log(PARTITIONS[0])
    assert log is not None
    assert assert_valid_prefix(log, built.appended) == 3
    other = manager.get_log(PARTITIONS[1])
    assert other is not None
    assert assert_valid_prefix(other, manager_template.logs[PARTITIONS[1]].appended) == APPENDS
    manager.close()
