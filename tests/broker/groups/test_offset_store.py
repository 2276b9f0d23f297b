"""Committed offsets of a `__consumer_offsets` partition (broker/groups/offsets.py)."""

from __future__ import annotations

from broker.groups.offsets import OffsetStore
from broker.groups.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsKey,
    OffsetsValue,
    decode_record,
    encode_key,
    encode_value,
)

MINUTE = 60_000
MEMBER = MemberMetadata("m1", "cli", "host", 45_000, 60_000, b"", b"")


def commit(
    store: OffsetStore, group: str, topic: str, partition: int, offset: int, *, at: int
) -> None:
    store.apply(OffsetCommitKey(group, topic, partition), OffsetCommitValue(offset, "", at))


def group_metadata(members: tuple[MemberMetadata, ...], since_ms: int) -> GroupMetadataValue:
    return GroupMetadataValue("consumer", 1, "range", "m1" if members else None, members, since_ms)


def test_the_latest_commit_per_partition_is_what_a_fetch_returns() -> None:
    store = OffsetStore()
    commit(store, "g", "orders", 0, 10, at=1)
    commit(store, "g", "orders", 0, 25, at=2)
    commit(store, "g", "orders", 1, 7, at=3)
    commit(store, "other", "orders", 0, 99, at=4)
    assert {tp: v.offset for tp, v in store.committed("g").items()} == {
        ("orders", 0): 25,
        ("orders", 1): 7,
    }
    assert {tp: v.offset for tp, v in store.committed("g", [("orders", 1), ("x", 0)]).items()} == {
        ("orders", 1): 7
    }
    assert store.committed("nobody") == {}
    assert store.groups() == ["g", "other"]


def test_tombstones_delete_offsets_and_a_reload_gives_the_same_state() -> None:
    store = OffsetStore()
    written: list[tuple[bytes, bytes | None]] = []

    def write(key: OffsetsKey, value: OffsetsValue | None) -> None:
        written.append((encode_key(key), None if value is None else encode_value(value)))
        store.apply(*decode_record(*written[-1]))

    write(OffsetCommitKey("g", "t", 0), OffsetCommitValue(5, "m", 1))
    write(OffsetCommitKey("g", "t", 1), OffsetCommitValue(6, "", 1))
    write(GroupMetadataKey("g"), group_metadata((MEMBER,), -1))
    for key in store.deletions("g")[:1]:
        write(key, None)
    assert list(store.committed("g")) == [("t", 1)]

    reloaded = OffsetStore()
    for key_bytes, value_bytes in written:
        reloaded.apply(*decode_record(key_bytes, value_bytes))
    assert reloaded.committed("g") == store.committed("g")
    assert reloaded.expired(10**12, MINUTE) == []  # the group has a member

    for key in store.deletions("g"):
        write(key, None)
    write(GroupMetadataKey("g"), None)
    assert store.groups() == [] and store.committed("g") == {}


def test_offsets_of_an_empty_group_expire_after_retention_from_when_it_emptied() -> None:
    store = OffsetStore()
    commit(store, "g", "t", 0, 1, at=1_000)
    store.apply(GroupMetadataKey("g"), group_metadata((MEMBER,), -1))
    # Members: nothing expires, however old the commit.
    assert store.expired(1_000 + 100 * MINUTE, 10 * MINUTE) == []
    # Empty since t=50 min: expires 10 minutes after that, not after the commit.
    store.apply(GroupMetadataKey("g"), group_metadata((), 50 * MINUTE))
    assert store.expired(59 * MINUTE, 10 * MINUTE) == []
    assert store.expired(60 * MINUTE, 10 * MINUTE) == [OffsetCommitKey("g", "t", 0)]


def test_standalone_commits_expire_after_retention_from_the_commit() -> None:
    store = OffsetStore()
    commit(store, "solo", "t", 0, 1, at=5 * MINUTE)
    commit(store, "solo", "t", 1, 1, at=8 * MINUTE)
    # A version 1 commit carried its own expiry time.
    store.apply(OffsetCommitKey("solo", "t", 2), OffsetCommitValue(1, "", 0, -1, 6 * MINUTE))
    assert store.expired(15 * MINUTE, 10 * MINUTE) == [
        OffsetCommitKey("solo", "t", 0),
        OffsetCommitKey("solo", "t", 2),
    ]
