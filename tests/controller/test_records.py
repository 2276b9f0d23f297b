"""Metadata records: round trips of every type, Kafka's framing and api keys, clear errors."""

from __future__ import annotations

from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.acls import AclOperation, AclPermissionType, PatternType, ResourceType
from controller.records import (
    RECORD_TYPES,
    AbortTransactionRecord,
    AccessControlEntryRecord,
    BeginTransactionRecord,
    BrokerEndpoint,
    BrokerFeature,
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
    RecordDecodeError,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    ReplicaLogState,
    ScramMechanism,
    TopicRecord,
    UncleanRecoveryRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
    decode_record,
    encode_record,
)

int8s = st.integers(-(2**7), 2**7 - 1)
int16s = st.integers(-(2**15), 2**15 - 1)
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
broker_ids = st.integers(0, 2**31 - 1)
uuids = st.uuids()
texts = st.text(max_size=20)
replica_lists = st.lists(broker_ids, max_size=6).map(tuple)
optional_replica_lists = st.none() | replica_lists

endpoints = st.builds(BrokerEndpoint, texts, texts, st.integers(0, 2**16 - 1), int16s)
broker_features = st.builds(BrokerFeature, texts, int16s, int16s)

# One strategy per record type, so a test can check that none is missing.
STRATEGIES: dict[type[MetadataRecord], st.SearchStrategy[MetadataRecord]] = {
    RegisterBrokerRecord: st.builds(
        RegisterBrokerRecord,
        broker_id=broker_ids,
        incarnation_id=uuids,
        broker_epoch=int64s,
        listeners=st.lists(endpoints, max_size=3).map(tuple),
        features=st.lists(broker_features, max_size=3).map(tuple),
        rack=st.none() | texts,
        fenced=st.booleans(),
        in_controlled_shutdown=st.booleans(),
    ),
    UnregisterBrokerRecord: st.builds(UnregisterBrokerRecord, broker_ids, int64s),
    TopicRecord: st.builds(TopicRecord, texts, uuids),
    PartitionRecord: st.builds(
        PartitionRecord,
        topic_id=uuids,
        partition_id=st.integers(0, 2**31 - 1),
        replicas=replica_lists,
        isr=replica_lists,
        leader=st.integers(-1, 2**31 - 1),
        leader_epoch=int32s,
        partition_epoch=int32s,
        elr=replica_lists,
        last_known_elr=replica_lists,
        adding_replicas=replica_lists,
        removing_replicas=replica_lists,
    ),
    PartitionChangeRecord: st.builds(
        PartitionChangeRecord,
        topic_id=uuids,
        partition_id=st.integers(0, 2**31 - 1),
        isr=optional_replica_lists,
        leader=st.none() | st.integers(-1, 2**31 - 1),
        replicas=optional_replica_lists,
        removing_replicas=optional_replica_lists,
        adding_replicas=optional_replica_lists,
        elr=optional_replica_lists,
        last_known_elr=optional_replica_lists,
    ),
    FenceBrokerRecord: st.builds(FenceBrokerRecord, broker_ids, int64s),
    UnfenceBrokerRecord: st.builds(UnfenceBrokerRecord, broker_ids, int64s),
    RemoveTopicRecord: st.builds(RemoveTopicRecord, uuids),
    ConfigRecord: st.builds(
        ConfigRecord, st.sampled_from(ConfigResourceType), texts, texts, st.none() | texts
    ),
    FeatureLevelRecord: st.builds(FeatureLevelRecord, texts, int16s),
    ProducerIdsRecord: st.builds(ProducerIdsRecord, broker_ids, int64s, int64s),
    BrokerRegistrationChangeRecord: st.builds(
        BrokerRegistrationChangeRecord,
        broker_ids,
        int64s,
        st.none() | st.booleans(),
        st.none() | st.just(True),
    ),
    NoOpRecord: st.just(NoOpRecord()),
    BeginTransactionRecord: st.builds(BeginTransactionRecord, st.none() | texts),
    EndTransactionRecord: st.just(EndTransactionRecord()),
    AbortTransactionRecord: st.builds(AbortTransactionRecord, st.none() | texts),
    UserScramCredentialRecord: st.builds(
        UserScramCredentialRecord,
        texts,
        st.sampled_from(ScramMechanism),
        st.binary(max_size=64),
        st.binary(max_size=64),
        st.binary(max_size=64),
        int32s,
    ),
    RemoveUserScramCredentialRecord: st.builds(
        RemoveUserScramCredentialRecord, texts, st.sampled_from(ScramMechanism)
    ),
    UncleanRecoveryRecord: st.builds(
        UncleanRecoveryRecord,
        uuids,
        int32s,
        texts,
        broker_ids,
        st.lists(st.builds(ReplicaLogState, broker_ids, int64s, int32s, int64s)).map(tuple),
        st.lists(broker_ids).map(tuple),
    ),
    AccessControlEntryRecord: st.builds(
        AccessControlEntryRecord,
        uuids,
        st.sampled_from(ResourceType),
        texts,
        st.sampled_from(PatternType),
        texts,
        texts,
        st.sampled_from(AclOperation),
        st.sampled_from(AclPermissionType),
    ),
    RemoveAccessControlEntryRecord: st.builds(RemoveAccessControlEntryRecord, uuids),
}
records = st.one_of(*STRATEGIES.values())


@given(records)
def test_every_record_round_trips(record: MetadataRecord) -> None:
    assert decode_record(encode_record(record)) == record


def test_every_record_type_has_a_strategy() -> None:
    assert set(STRATEGIES) == set(RECORD_TYPES.values())


def test_noop_record_is_framed_as_kafka_frames_it() -> None:
    # Frame version 1, record type 20, record version 0, an empty tagged-field section.
    noop = b"\x01\x14\x00\x00"
    assert decode_record(noop) == NoOpRecord()
    assert encode_record(NoOpRecord()) == noop


# Kafka's api keys and valid versions, from the metadata record specs
# (kafka-protocol/metadata/*Record.json beside DESIGN.md).
KAFKA_RECORDS = {
    RegisterBrokerRecord: (0, range(4)),
    UnregisterBrokerRecord: (1, range(1)),
    TopicRecord: (2, range(1)),
    PartitionRecord: (3, range(3)),
    ConfigRecord: (4, range(1)),
    PartitionChangeRecord: (5, range(3)),
    FenceBrokerRecord: (7, range(1)),
    UnfenceBrokerRecord: (8, range(1)),
    RemoveTopicRecord: (9, range(1)),
    FeatureLevelRecord: (12, range(1)),
    ProducerIdsRecord: (15, range(1)),
    BrokerRegistrationChangeRecord: (17, range(3)),
    AccessControlEntryRecord: (18, range(1)),
    RemoveAccessControlEntryRecord: (19, range(1)),
    NoOpRecord: (20, range(1)),
    UserScramCredentialRecord: (11, range(1)),
    RemoveUserScramCredentialRecord: (22, range(1)),
    # KIP-868's, from upstream's metadata record specs (not among those beside DESIGN.md).
    BeginTransactionRecord: (23, range(1)),
    EndTransactionRecord: (24, range(1)),
    AbortTransactionRecord: (25, range(1)),
}


def test_api_keys_and_versions_are_kafkas() -> None:
    # UncleanRecoveryRecord is this project's own record, far above Kafka's keys.
    assert set(KAFKA_RECORDS) == set(RECORD_TYPES.values()) - {UncleanRecoveryRecord}
    assert UncleanRecoveryRecord.API_KEY >= 10_000
    for record_type, (api_key, versions) in KAFKA_RECORDS.items():
        assert RECORD_TYPES[api_key] is record_type
        assert record_type.VERSION in versions


def test_acl_record_is_laid_out_as_kafkas_spec() -> None:
    acl_id = UUID(int=5)
    record = AccessControlEntryRecord(
        acl_id,
        ResourceType.TOPIC,
        "t",
        PatternType.PREFIXED,
        "User:a",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    # Frame 1, api key 18, version 0; Id, ResourceType int8, ResourceName, PatternType int8,
    # Principal, Host (compact strings), Operation int8, PermissionType int8, no tags.
    assert encode_record(record) == (
        b"\x01\x12\x00" + acl_id.bytes + b"\x02\x02t\x04\x07User:a\x02*\x03\x03\x00"
    )
    decoded = decode_record(encode_record(record))
    assert isinstance(decoded, AccessControlEntryRecord)
    assert decoded.operation is AclOperation.READ


def test_scram_credential_record_is_laid_out_as_kafkas() -> None:
    record = UserScramCredentialRecord(
        "al", ScramMechanism.SCRAM_SHA_512, b"salt", b"stored", b"server", 4096
    )
    # Frame 1, api key 11, version 0; Name, Mechanism int8, Salt, StoredKey, ServerKey (compact
    # strings and bytes), Iterations int32, no tagged fields: Kafka's record since 3.5, which
    # keeps no salted password.
    assert encode_record(record) == (
        b"\x01\x0b\x00\x03al\x02\x05salt\x07stored\x07server" + (4096).to_bytes(4, "big") + b"\x00"
    )
    assert "stored" not in repr(record) and "server'" not in repr(record)


def test_frame_is_frame_version_type_version() -> None:
    data = encode_record(FenceBrokerRecord(broker_id=3, broker_epoch=7))
    # Frame 1, api key 7, version 0, Id int32, Epoch int64, no tagged fields.
    assert data == b"\x01\x07\x00" + (3).to_bytes(4, "big") + (7).to_bytes(8, "big") + b"\x00"


def test_partition_change_writes_only_the_changed_fields_as_tagged_fields() -> None:
    topic_id = UUID(int=1)
    data = encode_record(PartitionChangeRecord(topic_id, 0, leader=2))
    # Frame, then PartitionId, TopicId, then one tagged field: tag 1 (Leader), 4 bytes.
    assert data == (
        b"\x01\x05\x02" + bytes(4) + topic_id.bytes + b"\x01\x01\x04" + (2).to_bytes(4, "big")
    )


def test_unknown_record_type_is_a_clear_error() -> None:
    with pytest.raises(RecordDecodeError, match="unknown metadata record type 99"):
        decode_record(b"\x01\x63\x00\x00")


def test_unknown_record_version_is_a_clear_error() -> None:
    with pytest.raises(RecordDecodeError, match=r"unsupported version 7 of NoOpRecord \(type 20\)"):
        decode_record(b"\x01\x14\x07\x00")


def test_unknown_frame_version_is_a_clear_error() -> None:
    with pytest.raises(RecordDecodeError, match="frame version 2"):
        decode_record(b"\x02\x14\x00\x00")


def test_truncated_and_overlong_records_are_errors() -> None:
    data = encode_record(TopicRecord("orders", UUID(int=5)))
    with pytest.raises(RecordDecodeError, match="truncated"):
        decode_record(data[:-3])
    with pytest.raises(RecordDecodeError, match="bytes left"):
        decode_record(data + b"\x00")


def test_unknown_tagged_fields_are_skipped() -> None:
    # NoOpRecord with one tagged field (tag 9, 2 bytes) that a later version might add.
    assert decode_record(b"\x01\x14\x00\x01\x09\x02ab") == NoOpRecord()


def test_a_broker_cannot_leave_controlled_shutdown_by_a_change_record() -> None:
    with pytest.raises(ValueError, match="registering again"):
        BrokerRegistrationChangeRecord(1, 1, in_controlled_shutdown=False)
