"""The `kraft` console script runs a node whose process never imports hypothesis (kio would
register a strategy per type with it, at every start) or rich, and that node serves Kafka
clients: every API version it advertises is one the codec's lazy schema lookup resolves, each
version of Metadata is answered, and unknown or unsupported requests get Kafka's answers."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from bench.cluster import Cluster
from net import legacy_produce
from net.api_keys import ApiKey
from net.protocol import (
    decode_response,
    encode_request,
    make_entity,
    request_schema,
    schema_versions,
)

pytestmark = pytest.mark.timeout(180)

# Runs the console script given as its first argument, then reports which modules the node
# process imported when it exits (after its controlled shutdown), and how many garbage
# collections ran before it froze its start-up heap.
_REPORTING_RUNNER = """
import atexit, gc, json, runpy, sys
before_freeze = []
gc.callbacks.append(
    lambda phase, info: phase == "stop" and not gc.get_freeze_count()
    and before_freeze.append(info["generation"])
)
atexit.register(lambda: print(json.dumps({"modules_at_exit": {
    "hypothesis": sys.modules.get("hypothesis") is not None,
    "rich": sys.modules.get("rich") is not None,
    "kio": "kio.static.primitive" in sys.modules,
}, "collections_before_freeze": before_freeze}), flush=True))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


class _Connection:
    """One blocking Kafka connection, requests framed by the project's codec."""

    def __init__(self, host: str, port: int) -> None:
        self._socket = socket.create_connection((host, port), timeout=30)
        self._correlation_id = 0

    def send_bytes(self, frame: bytes) -> None:
        self._socket.sendall(frame)

    def read_frame(self) -> bytes | None:
        """The next response frame without its size prefix; None once the peer closed."""
        size = self._read_exactly(4)
        if size is None:
            return None
        return self._read_exactly(struct.unpack(">i", size)[0])

    def request(self, api_key: int, version: int, **values: Any) -> Any:
        request_type = request_schema(api_key, version)
        assert request_type is not None
        self._correlation_id += 1
        self.send_bytes(
            b"".join(encode_request(make_entity(request_type, **values), self._correlation_id, "t"))
        )
        frame = self.read_frame()
        assert frame is not None, f"api key {api_key} v{version}: connection closed"
        assert struct.unpack_from(">i", frame)[0] == self._correlation_id
        return decode_response(frame, api_key, version)

    def close(self) -> None:
        self._socket.close()

    def _read_exactly(self, count: int) -> bytes | None:
        data = b""
        while len(data) < count:
            chunk = self._socket.recv(count - len(data))
            if not chunk:
                return None
            data += chunk
        return data


def _advertised(connection: _Connection) -> dict[int, tuple[int, int]]:
    """The ApiVersions table of the node, each of whose versions the codec must know."""
    response = connection.request(
        ApiKey.API_VERSIONS, 3, client_software_name="entry-test", client_software_version="1"
    )
    assert response.error_code == ErrorCode.none
    advertised = {
        int(a.api_key): (int(a.min_version), int(a.max_version)) for a in response.api_keys
    }
    for api_key, (low, high) in advertised.items():
        for version in range(low, high + 1):
            known = version in schema_versions(api_key) or (
                api_key == ApiKey.PRODUCE and version in legacy_produce.LEGACY_VERSIONS
            )
            assert known, f"api key {api_key} v{version} is advertised but has no schema"
    return advertised


def _check_the_broker_listener(host: str, port: int) -> None:
    with contextlib.closing(_Connection(host, port)) as connection:
        advertised = _advertised(connection)
        assert {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA} <= set(advertised)
        low, high = advertised[ApiKey.METADATA]
        for version in range(low, high + 1):
            # Each version's request and response classes are first imported here.
            metadata = connection.request(
                ApiKey.METADATA,
                version,
                topics=(),
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )
            assert [int(broker.node_id) for broker in metadata.brokers] == [1], version
        # A version past the served ones, of an API whose response has a top-level error code.
        assert advertised[ApiKey.DESCRIBE_CLUSTER][1] < 2
        refusal = connection.request(
            ApiKey.DESCRIBE_CLUSTER,
            2,
            include_cluster_authorized_operations=False,
            include_fenced_brokers=False,
        )
        assert refusal.error_code == ErrorCode.unsupported_version
        # ApiVersions of a version newer than any: the v0 answer listing its own range.
        body = struct.pack(">hhih", 18, 99, 77, 6) + b"future\x00"
        connection.send_bytes(struct.pack(">i", len(body)) + body)
        frame = connection.read_frame()
        assert frame is not None
        assert struct.unpack_from(">ihi", frame) == (77, ErrorCode.unsupported_version, 1)
        # The connection is still served.
        assert _advertised(connection) == advertised
        # An API key that no schema describes: Kafka closes the connection.
        body = struct.pack(">hhih", 999, 0, 78, -1)
        connection.send_bytes(struct.pack(">i", len(body)) + body)
        assert connection.read_frame() is None


def _check_the_controller_listener(host: str, port: int) -> None:
    with contextlib.closing(_Connection(host, port)) as connection:
        advertised = _advertised(connection)
    assert {ApiKey.VOTE, ApiKey.FETCH, ApiKey.BROKER_REGISTRATION} <= set(advertised)


def test_the_kraft_script_serves_every_api_it_advertises_without_hypothesis_or_rich(
    tmp_path: Path,
) -> None:
    # The test process has imported hypothesis, and rich is installed: the node imports neither.
    assert "hypothesis" in sys.modules
    assert importlib.util.find_spec("rich") is not None
    cluster = Cluster.combined(tmp_path, 1, **{"offsets.topic.replication.factor": "1"})
    node = cluster.nodes[1]
    node.command_prefix = [sys.executable, "-c", _REPORTING_RUNNER]
    cluster.start(1)
    try:
        cluster.wait_for("node 1 ready", lambda: cluster.ready(1), timeout=90)
        assert node.broker_port is not None
        _check_the_broker_listener(node.host, node.broker_port)
        _check_the_controller_listener(*cluster.voters()[1])
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("entry", 1, 1)])["entry"].result(timeout=60)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        delivered = []
        producer.produce("entry", b"served", on_delivery=lambda e, m: delivered.append((e, m)))
        assert producer.flush(30) == 0
        assert [error for error, _ in delivered] == [None]
        assert cluster.terminate(1) == 0
    finally:
        cluster.stop_all()
    lines = node.log_path.read_text().splitlines()
    reports = [json.loads(line) for line in lines if '"modules_at_exit"' in line]
    assert [report["modules_at_exit"] for report in reports] == [
        {"hypothesis": False, "rich": False, "kio": True}
    ]
    # No collection during the imports, the configuration nor the start-up until the heap is
    # frozen, where the young generations are collected once; then the collector runs again.
    # (Only the youngest generation's, cheap, while the command line is parsed in between.)
    before_freeze = reports[0]["collections_before_freeze"]
    assert [generation for generation in before_freeze if generation > 0] == [1]
    frozen = [json.loads(line) for line in lines if '"gc_frozen"' in line]
    assert len(frozen) == 1
    assert frozen[0]["collecting"] is True
    assert frozen[0]["objects"] > 10_000
