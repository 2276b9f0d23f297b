"""The metadata image: replay semantics, snapshots (to_records/from_records) and the replayer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from controller.image import (
    BrokerRegistration,
    MetadataDelta,
    MetadataImage,
    MetadataReplayer,
    MetadataReplayError,
)
from controller.partition_state import NO_LEADER, PartitionState
from controller.records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    ConfigResourceType,
    EndTransactionRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    ScramMechanism,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
    encode_record,
)
from kraft.messages import Entry, EntryKind, SnapshotId

ORDERS = UUID(int=1)
CLICKS = UUID(int=2)


def _register(broker_id: int, broker_epoch: int = 10) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=UUID(int=100 + broker_id),
        broker_epoch=broker_epoch,
        listeners=(BrokerEndpoint("PLAINTEXT", f"host{broker_id}", 9092),),
        rack=f"rack{broker_id % 2}",
    )


def _replay(records: Sequence[MetadataRecord], base: MetadataImage | None = None) -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY if base is None else base)
    for record in records:
        delta.replay(record)
    return delta.apply(end_offset=len(records), epoch=1)


def _cluster() -> list[MetadataRecord]:
    """Three brokers, two topics, configs, a feature level and a producer-id block."""
    return [
        FeatureLevelRecord("metadata.version", 20),
        *(_register(broker_id) for broker_id in (1, 2, 3)),
        UnfenceBrokerRecord(1, 10),
        UnfenceBrokerRecord(2, 10),
        TopicRecord("orders", ORDERS),
        PartitionRecord(ORDERS, 0, replicas=(1, 2, 3), isr=(1, 2, 3), leader=1),
        PartitionRecord(ORDERS, 1, replicas=(2, 3, 1), isr=(2, 3), leader=2, elr=(1,)),
        TopicRecord("clicks", CLICKS),
        PartitionRecord(CLICKS, 0, replicas=(3,), isr=(), leader=NO_LEADER, last_known_elr=(3,)),
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "min.insync.replicas", "2"),
        ConfigRecord(ConfigResourceType.BROKER, "", "log.retention.ms", "1000"),
        ProducerIdsRecord(1, 10, 2000),
    ]


def test_replay_builds_brokers_topics_partitions_configs() -> None:
    image = _replay(_cluster())
    assert image.end_offset == len(_cluster())
    assert sorted(image.brokers) == [1, 2, 3]
    assert [image.brokers[b].fenced for b in (1, 2, 3)] == [False, False, True]
    assert image.brokers[1].rack == "rack1"
    orders = image.topic("orders")
    assert orders is not None
    assert orders.topic_id == ORDERS
    assert image.partition(ORDERS, 1) == PartitionState(
        replicas=(2, 3, 1), isr=(2, 3), leader=2, elr=(1,)
    )
    assert image.topic_configs("orders") == {"min.insync.replicas": "2"}
    assert image.features == {"metadata.version": 20}
    assert image.next_producer_id == 2000


def test_a_leader_change_bumps_leader_epoch_and_partition_epoch() -> None:
    image = _replay([PartitionChangeRecord(ORDERS, 0, leader=2, isr=(2, 3))], _replay(_cluster()))
    assert image.partition(ORDERS, 0) == PartitionState(
        replicas=(1, 2, 3), isr=(2, 3), leader=2, leader_epoch=1, partition_epoch=1
    )


def test_an_isr_change_bumps_only_the_partition_epoch() -> None:
    image = _replay([PartitionChangeRecord(ORDERS, 0, isr=(1, 2))], _replay(_cluster()))
    state = image.partition(ORDERS, 0)
    assert state is not None
    assert (state.isr, state.leader, state.leader_epoch, state.partition_epoch) == (
        (1, 2),
        1,
        0,
        1,
    )


def test_naming_the_same_leader_still_bumps_the_leader_epoch() -> None:
    # Kafka's PartitionRegistration.merge: any Leader other than "no change" is a new epoch.
    image = _replay([PartitionChangeRecord(ORDERS, 0, leader=1)], _replay(_cluster()))
    state = image.partition(ORDERS, 0)
    assert state is not None
    assert (state.leader, state.leader_epoch, state.partition_epoch) == (1, 1, 1)


def test_an_empty_change_bumps_the_partition_epoch() -> None:
    image = _replay([PartitionChangeRecord(ORDERS, 0)] * 3, _replay(_cluster()))
    state = image.partition(ORDERS, 0)
    assert state is not None
    assert (state.leader_epoch, state.partition_epoch) == (0, 3)


def test_elr_fields_and_no_leader_replay() -> None:
    change = PartitionChangeRecord(
        ORDERS, 1, isr=(), leader=NO_LEADER, elr=(2, 3), last_known_elr=(1,)
    )
    state = _replay([change], _replay(_cluster())).partition(ORDERS, 1)
    assert state == PartitionState(
        replicas=(2, 3, 1),
        isr=(),
        leader=NO_LEADER,
        leader_epoch=1,
        partition_epoch=1,
        elr=(2, 3),
        last_known_elr=(1,),
    )


def test_remove_topic_drops_partitions_name_and_configs() -> None:
    image = _replay([RemoveTopicRecord(ORDERS)], _replay(_cluster()))
    assert image.topic("orders") is None
    assert ORDERS not in image.topics
    assert image.partition(ORDERS, 0) is None
    assert image.topic_configs("orders") == {}
    assert image.topic("clicks") is not None


def test_a_topic_changed_then_removed_in_one_delta_is_gone() -> None:
    image = _replay(
        [PartitionChangeRecord(ORDERS, 0, isr=(1,)), RemoveTopicRecord(ORDERS)], _replay(_cluster())
    )
    assert ORDERS not in image.topics


def test_fence_unfence_and_registration_changes() -> None:
    base = _replay(_cluster())
    fenced = _replay([FenceBrokerRecord(1, 10)], base)
    assert fenced.brokers[1].fenced
    assert not _replay([UnfenceBrokerRecord(1, 10)], fenced).brokers[1].fenced
    changed = _replay([BrokerRegistrationChangeRecord(2, 10, in_controlled_shutdown=True)], base)
    assert changed.brokers[2].in_controlled_shutdown
    assert not changed.brokers[2].fenced
    refenced = _replay([BrokerRegistrationChangeRecord(2, 10, fenced=True)], changed)
    assert refenced.brokers[2].fenced
    assert refenced.brokers[2].in_controlled_shutdown
    assert (
        not _replay([BrokerRegistrationChangeRecord(3, 10, fenced=False)], base).brokers[3].fenced
    )


def test_reregistration_replaces_the_registration_and_unregister_removes_it() -> None:
    base = _replay(_cluster())
    image = _replay([_register(1, broker_epoch=50)], base)
    assert image.brokers[1].broker_epoch == 50
    assert image.brokers[1].fenced
    assert 1 not in _replay([UnregisterBrokerRecord(1, 10)], base).brokers


@pytest.mark.parametrize(
    "record",
    [
        FenceBrokerRecord(1, 9),
        UnfenceBrokerRecord(9, 10),
        UnregisterBrokerRecord(1, 11),
        BrokerRegistrationChangeRecord(7, 10, fenced=True),
        PartitionChangeRecord(ORDERS, 5, isr=(1,)),
        PartitionChangeRecord(UUID(int=99), 0, isr=(1,)),
        PartitionRecord(UUID(int=99), 0, replicas=(1,), isr=(1,), leader=1),
        RemoveTopicRecord(UUID(int=99)),
        TopicRecord("orders", UUID(int=99)),
    ],
)
def test_records_that_contradict_the_image_are_errors(record: MetadataRecord) -> None:
    with pytest.raises(MetadataReplayError):
        _replay([record], _replay(_cluster()))


def test_config_delete_and_empty_resources_disappear() -> None:
    base = _replay(_cluster())
    image = _replay(
        [
            ConfigRecord(ConfigResourceType.TOPIC, "orders", "retention.ms", "5"),
            ConfigRecord(ConfigResourceType.TOPIC, "orders", "min.insync.replicas", None),
        ],
        base,
    )
    assert image.topic_configs("orders") == {"retention.ms": "5"}
    emptied = _replay(
        [ConfigRecord(ConfigResourceType.TOPIC, "orders", "retention.ms", None)], image
    )
    assert emptied.topic_configs("orders") == {}
    assert len(emptied.configs) == 1


def test_feature_level_zero_removes_the_feature() -> None:
    image = _replay([FeatureLevelRecord("metadata.version", 0)], _replay(_cluster()))
    assert image.features == {}


def test_images_are_copy_on_write() -> None:
    base = _replay(_cluster())
    image = _replay([PartitionChangeRecord(ORDERS, 0, isr=(1,))], base)
    # The base is unchanged and maps no record touched are shared, not copied.
    assert base.partition(ORDERS, 0) == PartitionState((1, 2, 3), (1, 2, 3), 1)
    assert image.brokers is base.brokers
    assert image.configs is base.configs
    assert image.topics[CLICKS] is base.topics[CLICKS]
    assert image.topics[ORDERS].partitions[1] is base.topics[ORDERS].partitions[1]
    with pytest.raises(TypeError):
        image.brokers[9] = image.brokers[1]  # type: ignore[index]


def test_to_records_recreates_the_image() -> None:
    image = _replay(
        [
            *_cluster(),
            PartitionChangeRecord(ORDERS, 0, leader=2),
            FenceBrokerRecord(1, 10),
            BrokerRegistrationChangeRecord(3, 10, in_controlled_shutdown=True),
        ]
    )
    rebuilt = MetadataImage.from_records(image.to_records(), image.end_offset, image.epoch)
    assert rebuilt == image
    assert rebuilt.to_records() == image.to_records()


def test_the_empty_image_has_no_records() -> None:
    assert MetadataImage.EMPTY.to_records() == []
    assert MetadataImage.from_records([]) == MetadataImage.EMPTY


changes = st.builds(
    PartitionChangeRecord,
    topic_id=st.sampled_from([ORDERS, CLICKS]),
    partition_id=st.just(0),
    isr=st.none() | st.lists(st.integers(1, 3), max_size=3).map(tuple),
    leader=st.none() | st.integers(-1, 3),
    elr=st.none() | st.lists(st.integers(1, 3), max_size=3).map(tuple),
    last_known_elr=st.none() | st.lists(st.integers(1, 3), max_size=3).map(tuple),
)


@given(st.lists(changes, max_size=20))
def test_any_replayed_image_survives_a_snapshot(more: list[PartitionChangeRecord]) -> None:
    image = _replay([*_cluster(), *more])
    assert MetadataImage.from_records(image.to_records(), image.end_offset, 1) == image


def _entries(records: Sequence[MetadataRecord], start: int = 0, epoch: int = 1) -> list[Entry]:
    return [
        Entry(offset, epoch, encode_record(record))
        for offset, record in enumerate(records, start=start)
    ]


def test_replayer_applies_commits_and_skips_leader_change_and_noop() -> None:
    replayer = MetadataReplayer()
    entries = [
        Entry(0, 1, b"not a metadata record", EntryKind.LEADER_CHANGE),
        *_entries(_cluster(), start=1),
    ]
    entries.append(Entry(len(entries), 1, encode_record(NoOpRecord())))
    replayer.on_commit(entries[:5])
    replayer.on_commit(entries[5:])
    assert replayer.image == replace(_replay(_cluster()), end_offset=len(entries), epoch=1)
    replayer.on_leader_change(3, 2)
    assert (replayer.leader_id, replayer.leader_epoch) == (3, 2)


def test_replayer_logs_each_change_only_from_the_end_of_the_log_it_started_with() -> None:
    # The node's earlier runs logged the first entries; one summary stands for them now.
    entries = _entries(_cluster())
    started_at = 7
    replayer = MetadataReplayer(logged_below=started_at)
    with capture_logs() as logs:
        replayer.on_commit(entries[:4])
        replayer.on_commit(entries[4:])
    assert replayer.image == _replay(_cluster())
    loud = MetadataReplayer()
    with capture_logs() as every_change:
        loud.on_commit(entries)
    assert loud.image == replayer.image
    applied = [e["offset"] for e in every_change if e["event"] == "metadata_applied"]
    assert [e["offset"] for e in logs if e["event"] == "metadata_applied"] == [
        offset for offset in applied if offset >= started_at
    ]
    summaries = [e for e in logs if e["event"] == "metadata_log_replayed"]
    assert len(summaries) == 1
    assert summaries[0]["records"] == summaries[0]["logged_below"] == started_at
    assert summaries[0]["end_offset"] == len(entries)


def test_replayer_snapshots_its_image_and_loads_it_back() -> None:
    source = MetadataReplayer()
    source.on_commit(_entries(_cluster(), epoch=4))
    end_offset = len(_cluster())
    records = source.snapshot_records(end_offset)
    assert records is not None
    target = MetadataReplayer()
    target.on_snapshot_loaded(SnapshotId(end_offset, 4), records)
    assert target.image == source.image
    # Commits after the snapshot apply on top of it.
    target.on_commit(_entries([RemoveTopicRecord(CLICKS)], start=end_offset, epoch=5))
    assert target.image.topic("clicks") is None
    assert (target.image.end_offset, target.image.epoch) == (end_offset + 1, 5)


def test_replayer_refuses_a_snapshot_at_another_offset() -> None:
    replayer = MetadataReplayer()
    replayer.on_commit(_entries(_cluster()))
    with pytest.raises(ValueError, match=f"image is at {len(_cluster())}"):
        replayer.snapshot_records(5)


WIDE = UUID(int=3)


def _wide_topic_in_a_transaction(partitions: int) -> list[MetadataRecord]:
    return [
        BeginTransactionRecord("create_topics"),
        TopicRecord("wide", WIDE),
        *(
            PartitionRecord(WIDE, i, replicas=(1, 2, 3), isr=(1, 2, 3), leader=1)
            for i in range(partitions)
        ),
        EndTransactionRecord(),
    ]


def test_replayer_shows_a_transaction_cut_by_commits_only_once_it_ends() -> None:
    entries = _entries([*_cluster(), *_wide_topic_in_a_transaction(5)], epoch=2)
    replayer = MetadataReplayer()
    begin = len(_cluster())
    # The first commit ends inside the transaction: the image ends where it begins.
    replayer.on_commit(entries[: begin + 3])
    assert replayer.image == replace(_replay(_cluster()), epoch=2)
    assert (replayer.transaction_open, replayer.replayed_end_offset) == (True, begin + 3)
    # No snapshot of a part of it: the driver snapshots a later commit.
    assert replayer.snapshot_records(begin + 3) is None
    replayer.on_commit(entries[begin + 3 : -1])
    assert replayer.image.topic("wide") is None
    replayer.on_commit(entries[-1:])
    assert not replayer.transaction_open
    wide = replayer.image.topic("wide")
    assert wide is not None and len(wide.partitions) == 5
    assert (replayer.image.end_offset, replayer.replayed_end_offset) == (len(entries),) * 2
    assert replayer.snapshot_records(len(entries)) is not None


def test_replayer_drops_an_aborted_transaction_whole() -> None:
    held = _wide_topic_in_a_transaction(3)[:-1]
    after = ConfigRecord(ConfigResourceType.TOPIC, "orders", "retention.ms", "60000")
    entries = _entries([*_cluster(), *held, AbortTransactionRecord("failover"), after])
    replayer = MetadataReplayer()
    replayer.on_commit(entries[:-2])
    replayer.on_commit(entries[-2:])
    assert not replayer.transaction_open
    # What follows the abort applies to the image from before the transaction.
    assert replayer.image == replace(_replay([*_cluster(), after]), end_offset=len(entries))


def test_replayer_replays_a_transaction_as_its_commits_come(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each commit replays its own records, the end's too: a transaction of thousands of
    changes costs no commit more than a plain commit of its size. Their `metadata_applied`
    events come with their commits, naming the transaction; the image takes them at the end."""
    changes = [
        PartitionChangeRecord(ORDERS, i % 2, isr=(1, 2) if i % 4 < 2 else (1, 2, 3))
        for i in range(6)
    ]
    records: list[MetadataRecord] = [
        BeginTransactionRecord("alter_partition"),
        *changes,
        EndTransactionRecord(),
    ]
    entries = _entries([*_cluster(), *records])
    begin = len(_cluster())
    replayer = MetadataReplayer()
    replayer.on_commit(entries[:begin])
    replayed: list[MetadataRecord] = []
    replay = MetadataDelta.replay

    def counted(delta: MetadataDelta, record: MetadataRecord) -> None:
        replayed.append(record)
        replay(delta, record)

    monkeypatch.setattr(MetadataDelta, "replay", counted)
    before = replayer.image
    for start in range(begin, len(entries), 3):
        piece = entries[start : start + 3]
        with capture_logs() as logs:
            replayer.on_commit(piece)
        assert len(replayed) == len(piece)
        replayed.clear()
        applied = [(e["offset"], e.get("in_transaction")) for e in logs]
        ended = piece[-1].offset == len(entries) - 1
        assert applied == [
            (entry.offset, None if ended and entry is piece[-1] else begin) for entry in piece
        ]
        if not ended:
            assert replayer.image == replace(before, end_offset=begin)
    assert replayer.image == _replay([*_cluster(), *records])


def test_a_snapshot_loaded_ends_any_transaction_left_open() -> None:
    source = MetadataReplayer()
    source.on_commit(_entries(_cluster()))
    records = source.snapshot_records(len(_cluster()))
    assert records is not None
    replayer = MetadataReplayer()
    replayer.on_commit(_entries(_wide_topic_in_a_transaction(2)[:2]))
    replayer.on_snapshot_loaded(SnapshotId(len(_cluster()), 1), records)
    assert not replayer.transaction_open
    assert replayer.replayed_end_offset == len(_cluster())
    assert replayer.image == source.image


def test_ten_thousand_partitions_replay_and_snapshot() -> None:
    topic_ids = [UUID(int=1000 + t) for t in range(10)]
    records: list[MetadataRecord] = [_register(b) for b in range(1, 4)]
    for t, topic_id in enumerate(topic_ids):
        records.append(TopicRecord(f"topic-{t}", topic_id))
        records.extend(
            PartitionRecord(topic_id, p, replicas=(1, 2, 3), isr=(1, 2, 3), leader=1 + p % 3)
            for p in range(1000)
        )
    records.extend(
        PartitionChangeRecord(topic_ids[0], p, leader=2, isr=(2, 3)) for p in range(1000)
    )
    replayer = MetadataReplayer()
    replayer.on_commit(_entries(records))
    image = replayer.image
    assert sum(len(topic.partitions) for topic in image.topics.values()) == 10_000
    assert image.partition(topic_ids[0], 999) == PartitionState(
        (1, 2, 3), (2, 3), 2, leader_epoch=1, partition_epoch=1
    )
    snapshot = replayer.snapshot_records(image.end_offset)
    assert snapshot is not None
    loaded = MetadataReplayer()
    loaded.on_snapshot_loaded(SnapshotId(image.end_offset, 1), snapshot)
    assert loaded.image == image


def test_broker_registration_round_trips_through_its_record() -> None:
    record = _register(4)
    assert BrokerRegistration.from_record(record).to_record() == record
    assert _replay([NoOpRecord()]) == MetadataImage(end_offset=1, epoch=1)


def test_scram_credentials_are_set_replaced_removed_and_kept_in_snapshots() -> None:
    sha256, sha512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
    first = UserScramCredentialRecord("alice", sha256, b"s1", b"k1", b"v1", 4096)
    second = UserScramCredentialRecord("alice", sha256, b"s2", b"k2", b"v2", 8192)
    other = UserScramCredentialRecord("alice", sha512, b"s3", b"k3", b"v3", 4096)
    image = MetadataImage.from_records([first, other, second])
    assert image.scram_credential("alice", sha256) == second
    assert image.scram_credential("alice", sha512) == other
    assert MetadataImage.from_records(image.to_records()) == image
    delta = MetadataDelta(image)
    delta.replay(RemoveUserScramCredentialRecord("alice", sha256))
    after = delta.apply(10, 1)
    assert after.scram_credential("alice", sha256) is None
    assert after.scram_credential("alice", sha512) == other
    # The image it came from is unchanged.
    assert image.scram_credential("alice", sha256) == second
