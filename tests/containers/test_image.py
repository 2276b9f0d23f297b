"""The image built from the Dockerfile and run by a real docker daemon: it becomes healthy, serves
a real Kafka client, runs as a non-root user with the node as PID 1, stops on `docker stop` with
exit status 0 and the clean-shutdown marker in its volume, and a new container on that volume
serves the same data.

Every connection goes to 127.0.0.1: the containers share the host's network (`--network host`,
the daemon runs without a bridge) and the node's ports come from KRAFT_* variables, free ports
of this host. Skips only without a daemon and without CI (docker_host.connect).
"""

from __future__ import annotations

import io
import json
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import docker
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from docker.models.containers import Container
from docker.models.volumes import Volume

from bench.cluster import free_ports
from tests.containers.docker_host import built_image, connect
from tests.containers.image_spec import (
    DEFAULT_PORTS,
    compose,
    image_defaults,
    image_user,
    seconds,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

TOPIC = "containers"
MESSAGES = [f"message-{i}".encode() for i in range(200)]
# docker stop's grace period here; the node stops in well under a second.
STOP_GRACE_S = 30
MARKER = ".kraft_cleanshutdown"


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    client = connect()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def image(client: docker.DockerClient) -> Iterator[str]:
    started = time.monotonic()
    with built_image(client) as tag:
        print(f"image {tag} built in {time.monotonic() - started:.1f} s")
        yield tag


@pytest.fixture
def volumes(client: docker.DockerClient) -> Iterator[Callable[[], str]]:
    """Makes named volumes, removed after the test (and after its containers, which tests
    request after this fixture)."""
    created: list[Volume] = []

    def create() -> str:
        created.append(client.volumes.create(name=f"kraft-test-{uuid.uuid4().hex[:12]}"))
        return str(created[-1].name)

    try:
        yield create
    finally:
        for volume in created:
            volume.remove(force=True)


@pytest.fixture
def containers(client: docker.DockerClient) -> Iterator[list[Container]]:
    """The containers a test started, removed (forcibly, by id) whatever happened."""
    started: list[Container] = []
    try:
        yield started
    finally:
        for container in started:
            # v: with the anonymous volumes docker made for the image's VOLUME.
            container.remove(force=True, v=True)


def wait_for(what: str, condition: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.25)


class Node:
    """One container of the image on the host network, on ports free on this host."""

    def __init__(self) -> None:
        self.kafka, self.controller, self.admin = free_ports(3)
        self.environment = {
            "KRAFT_LISTENERS": f"PLAINTEXT://127.0.0.1:{self.kafka}",
            "KRAFT_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{self.kafka}",
            "KRAFT_CONTROLLER_LISTENER": f"127.0.0.1:{self.controller}",
            "KRAFT_CONTROLLER_QUORUM_VOTERS": f"1@127.0.0.1:{self.controller}",
            "KRAFT_ADMIN_LISTENER": f"http://127.0.0.1:{self.admin}",
        }

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka}"

    def run(
        self, client: docker.DockerClient, image: str, volume: str, started: list[Container]
    ) -> Container:
        container = client.containers.run(
            image,
            detach=True,
            name=f"kraft-test-{uuid.uuid4().hex[:12]}",
            network_mode="host",
            environment=self.environment,
            volumes={volume: {"bind": data_dir(), "mode": "rw"}},
            # As deploy/kubernetes/kraft.yaml runs it: nothing but the volume is written.
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
        )
        started.append(container)
        wait_for("the container to be healthy", partial(is_healthy, container))
        return container


def data_dir() -> str:
    (path,) = image_defaults().log_dirs
    return str(path)


def health(container: Container) -> str:
    container.reload()
    state: dict[str, Any] = container.attrs["State"]
    if state["Status"] == "exited":
        logs = container.logs().decode(errors="replace")[-4000:]
        raise AssertionError(f"the container exited with {state['ExitCode']}:\n{logs}")
    return str(state["Health"]["Status"])


def is_healthy(container: Container) -> bool:
    return health(container) == "healthy"


def run_in(container: Container, *command: str) -> str:
    exit_code, output = container.exec_run(list(command))
    assert exit_code == 0, output
    assert isinstance(output, bytes)  # not streamed
    return str(output.decode())


def events(container: Container, name: str) -> list[dict[str, Any]]:
    """The node's log lines (JSON, one per line) of the event `name`."""
    lines = container.logs().decode(errors="replace").splitlines()
    parsed = [json.loads(line) for line in lines if line.startswith("{")]
    return [event for event in parsed if event.get("event") == name]


def read_file(container: Container, path: str) -> bytes:
    """A file of a (possibly stopped) container, its volumes included."""
    stream, _ = container.get_archive(path)
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
        member = archive.extractfile(path.rsplit("/", 1)[-1])
        assert member is not None
        return member.read()


def stop(container: Container, grace: int = STOP_GRACE_S) -> float:
    """`docker stop` with the grace period; the seconds it took."""
    started = time.monotonic()
    container.stop(timeout=grace)
    elapsed = time.monotonic() - started
    container.reload()
    return elapsed


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])[TOPIC].result(
        timeout=30
    )
    wait_for(
        "the topic's leader",
        lambda: admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0].leader == 1,
    )


def produce(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    failures: list[Any] = []
    for value in MESSAGES:
        producer.produce(
            TOPIC,
            value=value,
            on_delivery=lambda error, _: failures.append(error) if error else None,
        )
    assert producer.flush(30) == 0
    assert failures == []


def consume(bootstrap: str) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "containers", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < len(MESSAGES) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None:
                value = message.value()
                assert message.error() is None and value is not None, message.error()
                values.append(value)
        return values
    finally:
        consumer.close()


def test_the_image_metadata(client: docker.DockerClient, image: str) -> None:
    config = client.images.get(image).attrs["Config"]
    assert config["User"] == "{}:{}".format(*image_user())
    assert set(config["ExposedPorts"]) == {f"{port}/tcp" for port in DEFAULT_PORTS.values()}
    assert set(config["Volumes"]) == {data_dir()}
    assert config["Healthcheck"]["Test"][0] == "CMD"


def test_a_container_serves_clients_and_stops_cleanly_on_docker_stop(
    client: docker.DockerClient,
    image: str,
    volumes: Callable[[], str],
    containers: list[Container],
) -> None:
    volume = volumes()
    node = Node()
    started = time.monotonic()
    container = node.run(client, image, volume, containers)
    print(f"healthy {time.monotonic() - started:.1f} s after docker run")

    # The node runs as the image's user, and is PID 1 itself: docker stop's SIGTERM reaches it.
    user, group = image_user()
    assert (run_in(container, "id", "-u"), run_in(container, "id", "-g")) == (
        f"{user}\n",
        f"{group}\n",
    )
    status = dict(
        line.split(":\t", 1) for line in run_in(container, "cat", "/proc/1/status").splitlines()
    )
    assert status["Uid"].split()[0] == str(user) and status["Uid"].split()[1] == str(user)
    command_line = run_in(container, "cat", "/proc/1/cmdline").split("\0")
    assert command_line[1:3] == ["/opt/kraft/bin/kraft", "serve"], command_line

    create_topic(node.bootstrap)
    produce(node.bootstrap)
    assert consume(node.bootstrap) == MESSAGES

    elapsed = stop(container)
    state = container.attrs["State"]
    assert (state["ExitCode"], state["OOMKilled"]) == (0, False)
    # Far inside the grace period: the node stopped on SIGTERM, not on the SIGKILL after it.
    assert elapsed < STOP_GRACE_S / 2, f"docker stop took {elapsed:.1f} s"
    assert len(events(container, "node_stopped")) == 1
    marker = json.loads(read_file(container, f"{data_dir()}/{MARKER}"))
    assert marker["broker_epoch"] > 0, marker

    # A new container (an upgrade, a rescheduled pod) on the same volume: same node, same data,
    # and its restart is a clean one.
    replacement = node.run(client, image, volume, containers)
    assert consume(node.bootstrap) == MESSAGES
    (opened,) = events(replacement, "log_manager_opened")
    assert (opened["clean_shutdown"], opened["broker_epoch"]) == (True, marker["broker_epoch"])
    stop(replacement)
    assert replacement.attrs["State"]["ExitCode"] == 0


def admin_get(container: Container, url: str) -> Any:
    """An admin API answer, asked from inside `container`'s network namespace."""
    script = (
        "import sys, urllib.request; "
        "print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"
    )
    return json.loads(run_in(container, "python", "-c", script, url))


def test_the_compose_services_form_a_three_node_cluster(
    client: docker.DockerClient,
    image: str,
    volumes: Callable[[], str],
    containers: list[Container],
) -> None:
    """deploy/compose.yaml's services, each run as compose runs it (the image, its environment,
    a volume on its mount point, its stop grace period), except for the network: they share a
    private namespace instead of the host's, so config/local's fixed ports clash with nothing on
    this host and nothing leaves its loopback."""
    services = compose()["services"]
    token = uuid.uuid4().hex[:12]
    sandbox = client.containers.run(
        image,
        entrypoint=["sleep", "infinity"],
        detach=True,
        network_mode="none",
        name=f"kraft-test-network-{token}",
    )
    containers.append(sandbox)
    nodes: dict[str, Container] = {}
    for name, service in services.items():
        nodes[name] = client.containers.run(
            image,
            detach=True,
            name=f"kraft-test-{name}-{token}",
            network_mode=f"container:{sandbox.id}",
            environment=service_environment(service),
            volumes={volumes(): {"bind": mount_point(service), "mode": "rw"}},
        )
        containers.append(nodes[name])
    for name, node in nodes.items():
        wait_for(f"{name} to be healthy", partial(is_healthy, node))

    name, first = next(iter(nodes.items()))
    admin = image_defaults(service_environment(services[name])).admin_listener

    def unfenced() -> list[int]:
        brokers = admin_get(first, f"http://{admin}/v1/brokers")
        return sorted(broker["id"] for broker in brokers if not broker["fenced"])

    wait_for("three unfenced brokers", lambda: unfenced() == [1, 2, 3])
    quorum = admin_get(first, f"http://{admin}/v1/quorum")
    assert sorted(voter["id"] for voter in quorum["voters"]) == [1, 2, 3]
    assert quorum["leader_id"] in (1, 2, 3)

    # `docker compose down` stops the services together, each with its grace period.
    def stop_service(name: str) -> float:
        return stop(nodes[name], int(seconds(services[name]["stop_grace_period"])))

    with ThreadPoolExecutor(len(nodes)) as pool:
        elapsed = dict(zip(nodes, pool.map(stop_service, nodes), strict=True))
    for name, node in nodes.items():
        assert node.attrs["State"]["ExitCode"] == 0, (name, node.logs()[-2000:])
        assert elapsed[name] < STOP_GRACE_S / 2, elapsed
        marker = json.loads(read_file(node, f"{mount_point(services[name])}/{MARKER}"))
        assert marker["broker_epoch"] > 0, (name, marker)


def service_environment(service: dict[str, Any]) -> dict[str, str]:
    return {key: str(value) for key, value in service["environment"].items()}


def mount_point(service: dict[str, Any]) -> str:
    """Where the service's one volume is mounted (`name:/path`)."""
    (mount,) = service["volumes"]
    return str(mount.partition(":")[2])
