"""net.messages: the typed message catalogue matches what the handlers serve and what the codec
decodes, so a message typed as `messages.FetchRequest` is what a Fetch handler receives."""

import subprocess
import sys
import textwrap
from collections.abc import Mapping

import pytest
from kio.static.protocol import Payload

from broker import data_apis, metadata_api, producer_ids, replica_admin_apis
from broker.configs import DESCRIBE_CONFIGS_VERSIONS
from broker.groups import wire as group_wire
from controller import wire as controller_wire
from net import messages
from net.api_keys import ApiKey
from net.protocol import request_schema, response_schema

# (api key, served (oldest, newest), the catalogue's responses, its requests if it has them)
_CATALOGUE: list[
    tuple[int, tuple[int, int], Mapping[int, type[Payload]], Mapping[int, type[Payload]] | None]
] = [
    (ApiKey.PRODUCE, data_apis.PRODUCE_VERSIONS, messages.PRODUCE_RESPONSES, None),
    (
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        (0, 0),
        messages.DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSES,
        messages.DESCRIBE_USER_SCRAM_CREDENTIALS_REQUESTS,
    ),
    (ApiKey.FETCH, data_apis.FETCH_VERSIONS, messages.FETCH_RESPONSES, None),
    (
        ApiKey.LIST_OFFSETS,
        data_apis.LIST_OFFSETS_VERSIONS,
        messages.LIST_OFFSETS_RESPONSES,
        None,
    ),
    (
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        data_apis.OFFSET_FOR_LEADER_EPOCH_VERSIONS,
        messages.OFFSET_FOR_LEADER_EPOCH_RESPONSES,
        None,
    ),
    (
        ApiKey.METADATA,
        metadata_api.METADATA_VERSIONS,
        messages.METADATA_RESPONSES,
        None,
    ),
    (
        ApiKey.DESCRIBE_CLUSTER,
        metadata_api.DESCRIBE_CLUSTER_VERSIONS,
        messages.DESCRIBE_CLUSTER_RESPONSES,
        None,
    ),
    (
        ApiKey.DESCRIBE_CONFIGS,
        DESCRIBE_CONFIGS_VERSIONS,
        messages.DESCRIBE_CONFIGS_RESPONSES,
        None,
    ),
    (
        ApiKey.INIT_PRODUCER_ID,
        producer_ids.INIT_PRODUCER_ID_VERSIONS,
        messages.INIT_PRODUCER_ID_RESPONSES,
        None,
    ),
    (
        ApiKey.FIND_COORDINATOR,
        group_wire.FIND_COORDINATOR_VERSIONS,
        messages.FIND_COORDINATOR_RESPONSES,
        None,
    ),
    (
        ApiKey.JOIN_GROUP,
        group_wire.JOIN_GROUP_VERSIONS,
        messages.JOIN_GROUP_RESPONSES,
        None,
    ),
    (
        ApiKey.SYNC_GROUP,
        group_wire.SYNC_GROUP_VERSIONS,
        messages.SYNC_GROUP_RESPONSES,
        None,
    ),
    (
        ApiKey.HEARTBEAT,
        group_wire.HEARTBEAT_VERSIONS,
        messages.HEARTBEAT_RESPONSES,
        None,
    ),
    (
        ApiKey.LEAVE_GROUP,
        group_wire.LEAVE_GROUP_VERSIONS,
        messages.LEAVE_GROUP_RESPONSES,
        None,
    ),
    (
        ApiKey.OFFSET_COMMIT,
        group_wire.OFFSET_COMMIT_VERSIONS,
        messages.OFFSET_COMMIT_RESPONSES,
        None,
    ),
    (
        ApiKey.OFFSET_FETCH,
        group_wire.OFFSET_FETCH_VERSIONS,
        messages.OFFSET_FETCH_RESPONSES,
        None,
    ),
    (
        ApiKey.DESCRIBE_GROUPS,
        group_wire.DESCRIBE_GROUPS_VERSIONS,
        messages.DESCRIBE_GROUPS_RESPONSES,
        None,
    ),
    (
        ApiKey.LIST_GROUPS,
        group_wire.LIST_GROUPS_VERSIONS,
        messages.LIST_GROUPS_RESPONSES,
        None,
    ),
    (
        ApiKey.DELETE_GROUPS,
        group_wire.DELETE_GROUPS_VERSIONS,
        messages.DELETE_GROUPS_RESPONSES,
        None,
    ),
    (
        ApiKey.OFFSET_DELETE,
        group_wire.OFFSET_DELETE_VERSIONS,
        messages.OFFSET_DELETE_RESPONSES,
        None,
    ),
    (
        ApiKey.DELETE_RECORDS,
        replica_admin_apis.DELETE_RECORDS_VERSIONS,
        messages.DELETE_RECORDS_RESPONSES,
        None,
    ),
    (
        ApiKey.DESCRIBE_LOG_DIRS,
        replica_admin_apis.DESCRIBE_LOG_DIRS_VERSIONS,
        messages.DESCRIBE_LOG_DIRS_RESPONSES,
        None,
    ),
    (
        ApiKey.DESCRIBE_PRODUCERS,
        replica_admin_apis.DESCRIBE_PRODUCERS_VERSIONS,
        messages.DESCRIBE_PRODUCERS_RESPONSES,
        None,
    ),
]
_CONTROLLER_CATALOGUE: dict[
    int, tuple[Mapping[int, type[Payload]], Mapping[int, type[Payload]]]
] = {
    ApiKey.CREATE_TOPICS: (
        messages.CREATE_TOPICS_RESPONSES,
        messages.CREATE_TOPICS_REQUESTS,
    ),
    ApiKey.DELETE_TOPICS: (
        messages.DELETE_TOPICS_RESPONSES,
        messages.DELETE_TOPICS_REQUESTS,
    ),
    ApiKey.CREATE_PARTITIONS: (
        messages.CREATE_PARTITIONS_RESPONSES,
        messages.CREATE_PARTITIONS_REQUESTS,
    ),
    ApiKey.ELECT_LEADERS: (
        messages.ELECT_LEADERS_RESPONSES,
        messages.ELECT_LEADERS_REQUESTS,
    ),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (
        messages.INCREMENTAL_ALTER_CONFIGS_RESPONSES,
        messages.INCREMENTAL_ALTER_CONFIGS_REQUESTS,
    ),
    ApiKey.ALTER_CONFIGS: (
        messages.ALTER_CONFIGS_RESPONSES,
        messages.ALTER_CONFIGS_REQUESTS,
    ),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (
        messages.ALTER_USER_SCRAM_CREDENTIALS_RESPONSES,
        messages.ALTER_USER_SCRAM_CREDENTIALS_REQUESTS,
    ),
    ApiKey.ALTER_PARTITION: (
        messages.ALTER_PARTITION_RESPONSES,
        messages.ALTER_PARTITION_REQUESTS,
    ),
    ApiKey.BROKER_REGISTRATION: (
        messages.BROKER_REGISTRATION_RESPONSES,
        messages.BROKER_REGISTRATION_REQUESTS,
    ),
    ApiKey.BROKER_HEARTBEAT: (
        messages.BROKER_HEARTBEAT_RESPONSES,
        messages.BROKER_HEARTBEAT_REQUESTS,
    ),
    ApiKey.ALLOCATE_PRODUCER_IDS: (
        messages.ALLOCATE_PRODUCER_IDS_RESPONSES,
        messages.ALLOCATE_PRODUCER_IDS_REQUESTS,
    ),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (
        messages.ALTER_PARTITION_REASSIGNMENTS_RESPONSES,
        messages.ALTER_PARTITION_REASSIGNMENTS_REQUESTS,
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (
        messages.LIST_PARTITION_REASSIGNMENTS_RESPONSES,
        messages.LIST_PARTITION_REASSIGNMENTS_REQUESTS,
    ),
    ApiKey.UNREGISTER_BROKER: (
        messages.UNREGISTER_BROKER_RESPONSES,
        messages.UNREGISTER_BROKER_REQUESTS,
    ),
}


def _every_api() -> list[
    tuple[int, tuple[int, int], Mapping[int, type[Payload]], Mapping[int, type[Payload]] | None]
]:
    controller_apis = [
        (
            served.api_key,
            (served.min_version, served.max_version),
            *_CONTROLLER_CATALOGUE[served.api_key],
        )
        for served in controller_wire.SERVED
    ]
    return _CATALOGUE + controller_apis


@pytest.mark.parametrize(
    ("api_key", "served", "responses", "requests"),
    _every_api(),
    ids=lambda value: str(value) if isinstance(value, int) else "",
)
def test_catalogue_holds_the_codecs_class_of_every_served_version(
    api_key: int,
    served: tuple[int, int],
    responses: Mapping[int, type[Payload]],
    requests: Mapping[int, type[Payload]] | None,
) -> None:
    versions = list(range(served[0], served[1] + 1))
    assert sorted(responses) == versions
    for version in versions:
        assert responses[version] is response_schema(api_key, version)
    if requests is not None:
        assert sorted(requests) == versions
        for version in versions:
            assert requests[version] is request_schema(api_key, version)


def test_every_controller_api_is_in_the_catalogue() -> None:
    assert {served.api_key for served in controller_wire.SERVED} == set(_CONTROLLER_CATALOGUE)


def test_a_catalogue_holds_each_served_version_and_no_other() -> None:
    served = messages.LIST_OFFSETS_RESPONSES
    assert list(served) == list(range(1, 11))
    assert len(served) == 10
    assert 1 in served
    assert 10 in served
    # kio knows ListOffsets v11, newer than any served; v0 is older.
    assert response_schema(ApiKey.LIST_OFFSETS, 11) is not None
    for unserved in (0, 11):
        assert unserved not in served
        with pytest.raises(KeyError, match="not served"):
            served[unserved]
    assert served.get(11) is None
    fresh = messages.served_responses(ApiKey.LIST_OFFSETS, 1, 10)
    assert fresh.classes == tuple(response_schema(ApiKey.LIST_OFFSETS, v) for v in range(1, 11))


def test_a_lookup_imports_only_the_version_asked_for_and_keeps_it() -> None:
    # In a fresh interpreter: this one imported the catalogue's classes long ago.
    script = textwrap.dedent(
        """
        import sys
        from broker.groups import wire
        from net import messages

        def loaded(api="fetch"):
            return sorted(name for name in sys.modules if name.startswith(f"kio.schema.{api}."))

        assert loaded() == [], loaded()
        # The group APIs' version checks import their classes when first used.
        for api in ("join_group", "offset_commit", "offset_fetch", "find_coordinator"):
            assert loaded(api) == [], loaded(api)
        first = messages.FETCH_RESPONSES[12]
        assert first.__version__ == 12 and first.__name__ == "FetchResponse"
        assert [name for name in loaded() if ".v" in name] == [
            "kio.schema.fetch.v12", "kio.schema.fetch.v12.request", "kio.schema.fetch.v12.response"
        ], loaded()
        assert messages.FETCH_RESPONSES[12] is first
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
