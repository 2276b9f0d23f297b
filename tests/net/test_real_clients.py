"""Real Kafka clients bootstrap against our server: ApiVersions, then Metadata of a fake cluster.

confluent-kafka (librdkafka 2.16), kafka-python and aiokafka run in this process; Debian's kcat
(librdkafka 2.0.2) runs as a subprocess and proves the ApiVersions v3 response carries no
top-level tagged fields, which that librdkafka misreads.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import AIOKafkaClient
from confluent_kafka.admin import AdminClient

from net.api_keys import ApiKey
from tests.net.fake_broker import CLUSTER_ID, Recorded, fake_broker

with warnings.catch_warnings():
    # kafka-python loads its JSON schemas with a deprecated importlib.resources call.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer


@dataclass
class SeenRequests:
    """(api key, version) of every request the server answered, from its metrics hook."""

    seen: list[tuple[int, int]] = field(default_factory=list)

    def observe(
        self,
        api_key: int,
        api_version: int,
        latency_seconds: float,
        request_bytes: int,
        response_bytes: int,
    ) -> None:
        self.seen.append((api_key, api_version))

    def versions_of(self, api_key: int) -> list[int]:
        return [version for key, version in self.seen if key == api_key]


@dataclass
class Broker:
    port: int
    recorded: Recorded
    seen: SeenRequests

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
async def broker() -> AsyncIterator[Broker]:
    seen = SeenRequests()
    async with fake_broker(node_id=1, metrics=seen) as (server, recorded):
        yield Broker(server.port, recorded, seen)


def metadata_requests(broker: Broker) -> list[tuple[Any, Any]]:
    return broker.recorded.of(ApiKey.METADATA)


async def test_confluent_kafka_lists_the_cluster(broker: Broker) -> None:
    def list_topics() -> Any:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "ck-test"})
        return admin.list_topics(timeout=15)

    metadata = await asyncio.wait_for(asyncio.to_thread(list_topics), 30)
    assert metadata.cluster_id == CLUSTER_ID
    assert metadata.controller_id == 1
    assert {node_id: (b.host, b.port) for node_id, b in metadata.brokers.items()} == {
        1: ("127.0.0.1", broker.port)
    }
    assert metadata.topics == {}
    # librdkafka 2.16 asks ApiVersions v3 first, then Metadata at our maximum, for all topics.
    assert broker.seen.versions_of(ApiKey.API_VERSIONS)[0] == 3
    context, request = metadata_requests(broker)[-1]
    assert context.header.client_id == "ck-test"
    assert context.header.api_version == 12
    assert request.topics is None


async def test_kafka_python_lists_the_cluster(broker: Broker) -> None:
    def list_topics() -> tuple[set[str], list[int]]:
        consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            client_id="kp-test",
            request_timeout_ms=10_000,
        )
        try:
            topics = consumer.topics()
            brokers = sorted(b.node_id for b in consumer._client.cluster.brokers())
            return topics, brokers
        finally:
            consumer.close()

    topics, brokers = await asyncio.wait_for(asyncio.to_thread(list_topics), 30)
    assert topics == set()
    assert brokers == [1]
    # kafka-python starts at ApiVersions v4, which we serve.
    assert broker.seen.versions_of(ApiKey.API_VERSIONS)[0] == 4
    context, _request = metadata_requests(broker)[-1]
    assert context.header.client_id == "kp-test"


async def test_aiokafka_bootstraps(broker: Broker) -> None:
    client = AIOKafkaClient(bootstrap_servers=broker.bootstrap, client_id="ak-test")
    try:
        await asyncio.wait_for(client.bootstrap(), 30)
        assert [b.nodeId for b in client.cluster.brokers()] == [1]
        assert client.cluster.controller.nodeId == 1
    finally:
        await client.close()
    # aiokafka always sends ApiVersions v0 and implements Metadata up to v5; its bootstrap asks
    # for no topic at all (an empty list, at v1+).
    assert broker.seen.versions_of(ApiKey.API_VERSIONS)[0] == 0
    context, request = metadata_requests(broker)[0]
    assert context.header.client_id == "ak-test"
    assert context.header.api_version == 5
    assert request.topics == ()


@contextlib.asynccontextmanager
async def subprocess_run(*command: str) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
async def test_debian_kcat_with_librdkafka_2_0_2_lists_the_cluster(broker: Broker) -> None:
    async with subprocess_run("kcat", "-L", "-b", broker.bootstrap, "-m", "10") as kcat:
        stdout, stderr = await asyncio.wait_for(kcat.communicate(), 30)
    output = stdout.decode()
    assert kcat.returncode == 0, stderr.decode()
    assert f"broker 1 at 127.0.0.1:{broker.port} (controller)" in output
    assert " 1 brokers:" in output
    assert " 0 topics:" in output
    assert "underflow" not in stderr.decode().lower()
    # It negotiated ApiVersions v3 (the version with the tagged-field trap) and got Metadata.
    assert 3 in broker.seen.versions_of(ApiKey.API_VERSIONS)
    assert metadata_requests(broker)
