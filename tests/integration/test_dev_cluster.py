"""`kraft dev`: the layout of a local cluster, and a real one started, used by a Kafka client,
stopped with SIGINT (as Ctrl-C) and started again on the same data; `kraft dev --secure` the
same over SASL_SSL with the printed client settings, refusing clients without them."""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import kraft_executable
from node.config import load_config
from node.dev_cluster import STOP_TIMEOUT_S, node_properties, plan
from node.dev_security import DevSecurity
from storage.log_manager import CLEAN_SHUTDOWN_MARKER

pytestmark = pytest.mark.timeout(240)


def test_node_i_gets_its_ports_and_a_configuration_a_node_accepts(tmp_path: Path) -> None:
    cluster = plan(3, tmp_path, 19092)
    assert [(n.node_id, n.kafka_port, n.controller_port, n.admin_port) for n in cluster] == [
        (1, 19092, 19192, 19292),
        (2, 19093, 19193, 19293),
        (3, 19094, 19194, 19294),
    ]
    path = tmp_path / "node-2.properties"
    path.write_text(node_properties(cluster[1], cluster))
    config = load_config(path, [], {})
    assert config.node_id == 2
    assert [voter.endpoint.port for voter in config.controller_quorum_voters] == [
        19192,
        19193,
        19194,
    ]
    assert (config.default_replication_factor, config.offsets_topic_replication_factor) == (3, 3)
    assert config.log_dirs == [tmp_path / "node-2"]
    with pytest.raises(ValueError, match="--nodes"):
        plan(0, tmp_path, 19092)
    with pytest.raises(ValueError, match="--base-port"):
        plan(3, tmp_path, 65400)


def test_a_secure_node_configuration_is_accepted_and_its_secrets_are_kept(tmp_path: Path) -> None:
    cluster = plan(2, tmp_path, 19092, secure=True)
    security = DevSecurity.prepare(tmp_path)
    path = tmp_path / "node-1.properties"
    path.write_text(node_properties(cluster[0], cluster, security))
    config = load_config(path, [], {})
    assert str(config.security_protocol(config.inter_broker_listener)) == "SASL_SSL"
    assert str(config.controller_security_protocol) == "SSL"
    assert config.authorizer_class_name is not None
    assert config.super_users == {"User:admin", "User:CN=kraft-node"}
    assert config.admin_ssl_context() is not None
    assert config.admin_token == security.password
    # A second preparation (a restart) reuses the password and the certificates.
    ca = security.ca_path.read_bytes()
    again = DevSecurity.prepare(tmp_path)
    assert again.password == security.password and again.ca_path.read_bytes() == ca
    assert stat.S_IMODE(security.password_path.stat().st_mode) == 0o600


def start_dev(
    data_dir: Path, base_port: int, nodes: int = 3, *options: str
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    process = subprocess.Popen(
        [kraft_executable(), "dev", "--nodes", str(nodes), "--data-dir", str(data_dir),
         "--base-port", str(base_port), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={key: value for key, value in os.environ.items() if not key.startswith("KRAFT_")},
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()  # blocks until ready (the command gives up after 60 s)
    if not line:
        process.wait(10)
        raise AssertionError(
            f"kraft dev printed nothing: {process.stderr and process.stderr.read()}"
        )
    return process, json.loads(line)


def kill_if_running(process: subprocess.Popen[str]) -> None:
    """Cleans up after a failed test: a `kraft dev` still running is killed (its nodes die
    with it)."""
    if process.poll() is None:
        process.kill()
        process.wait(10)


def base_port_with_free_ranges() -> int:
    """A base port whose three ranges (P, P+100, P+200) are free: below the kernel's ephemeral
    ports, so other tests' nodes do not take them meanwhile."""
    for candidate in random.sample(range(20_000, 30_000), 50):
        probes = [candidate + offset + index for offset in (0, 100, 200) for index in range(3)]
        if all(port_free(port) for port in probes):
            return candidate
    raise AssertionError("no free port range for kraft dev")


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_kraft_dev_runs_a_cluster_until_ctrl_c_and_restarts_on_its_data(tmp_path: Path) -> None:
    base_port = base_port_with_free_ranges()
    process, ready = start_dev(tmp_path, base_port)
    try:
        assert ready == {
            "bootstrap": ",".join(f"127.0.0.1:{base_port + i}" for i in range(3)),
            "admin": [f"http://127.0.0.1:{base_port + 200 + i}" for i in range(3)],
        }
        bootstrap = str(ready["bootstrap"])
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("dev", 3, replication_factor=3)])["dev"].result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for index in range(30):
            producer.produce("dev", f"v{index}".encode(), partition=index % 3)
        assert producer.flush(30) == 0

        # Ctrl-C: every node stops cleanly, with its clean-shutdown marker.
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
        for node_id in (1, 2, 3):
            assert (tmp_path / f"node-{node_id}" / CLEAN_SHUTDOWN_MARKER).exists()
    finally:
        kill_if_running(process)

    # The same command on the same directory brings the same cluster back, data and all.
    process, ready = start_dev(tmp_path, base_port)
    try:
        consumer = Consumer({"bootstrap.servers": str(ready["bootstrap"]), "group.id": "dev-check"})
        consumer.assign([TopicPartition("dev", p, 0) for p in range(3)])
        values: list[str] = []
        deadline = time.monotonic() + 30
        while len(values) < 30 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None
                values.append(value.decode())
        consumer.close()
        assert sorted(values) == sorted(f"v{index}" for index in range(30))
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        kill_if_running(process)


def children_of(pid: int) -> list[int]:
    """The processes `pid` started (Linux: its main thread's children)."""
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def running(pid: int) -> bool:
    """Whether `pid` lives (a zombie, dead and not yet reaped, does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_the_nodes_die_with_a_killed_kraft_dev(tmp_path: Path) -> None:
    # A closed terminal or an IDE's stop button: `kraft dev` gets no chance to stop its nodes.
    process, _ = start_dev(tmp_path, base_port_with_free_ranges(), nodes=2)
    nodes = children_of(process.pid)
    try:
        assert len(nodes) == 2 and all(running(pid) for pid in nodes)
        process.kill()
        process.wait(10)
        # A controlled shutdown each, all at once: about a second and a half on an idle machine,
        # 12 s on a loaded one; as long as `kraft dev` itself would wait for them.
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while any(running(pid) for pid in nodes) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(running(pid) for pid in nodes)
    finally:
        for pid in nodes:
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def test_kraft_dev_names_the_port_an_earlier_run_still_holds(tmp_path: Path) -> None:
    base_port = base_port_with_free_ranges()
    with socket.socket() as earlier:
        earlier.bind(("127.0.0.1", base_port + 201))  # node 2's admin listener
        earlier.listen()
        refused = subprocess.run(
            [kraft_executable(), "dev", "--nodes", "2", "--data-dir", str(tmp_path),
             "--base-port", str(base_port)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )  # fmt: skip
    assert refused.returncode == 1
    assert f"port {base_port + 201}" in refused.stderr
    assert "earlier `kraft dev`" in refused.stderr
    assert refused.stdout == ""


def private(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) == 0o600


def read_all(client: dict[str, Any], topic: str, count: int, group: str) -> list[bytes]:
    """Up to `count` values of `topic` read from the start by a new member of `group`."""
    consumer = Consumer({**client, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None
                values.append(value)
    finally:
        consumer.close()
    return sorted(values)


def records_in(client: dict[str, Any], topic: str, partitions: int) -> int:
    """How many records `topic` holds (the sum of its partitions' high watermarks)."""
    consumer = Consumer({**client, "group.id": "watermarks"})
    try:
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
            for partition in range(partitions)
        )
    finally:
        consumer.close()


def refused_write(settings: dict[str, Any], topic: str) -> list[str]:
    """What a producer with `settings` is told when it writes one record to `topic`."""
    errors: list[str] = []
    producer = Producer(
        {
            **settings,
            "message.timeout.ms": 3000,
            "error_cb": lambda error: errors.append(str(error)),
            "on_delivery": lambda error, _message: errors.append(str(error)),
        }
    )
    producer.produce(topic, b"intruder")
    producer.flush(10)
    return errors


def test_kraft_dev_secure_serves_sasl_ssl_to_its_printed_client_only(tmp_path: Path) -> None:
    base_port = base_port_with_free_ranges()
    process, ready = start_dev(tmp_path, base_port, 2, "--secure")
    security = tmp_path / "security"
    try:
        assert ready["admin"] == [f"https://127.0.0.1:{base_port + 200 + i}" for i in range(2)]
        client = ready["client"]
        assert set(client) == {
            "security.protocol",
            "sasl.mechanism",
            "sasl.username",
            "sasl.password",
            "ssl.ca.location",
        }
        assert (client["security.protocol"], client["sasl.mechanism"]) == (
            "SASL_SSL",
            "SCRAM-SHA-512",
        )
        password_file = security / f"{client['sasl.username']}.password"
        assert password_file.read_text().strip() == client["sasl.password"]
        assert private(password_file) and private(tmp_path / "node-1.properties")
        ca = Path(client["ssl.ca.location"]).read_bytes()

        # The printed settings, verbatim: a topic replicated between the nodes over SASL_SSL.
        settings = {"bootstrap.servers": ready["bootstrap"], **client}
        admin = AdminClient(settings)
        admin.create_topics([NewTopic("secure-dev", 2, replication_factor=2)])["secure-dev"].result(
            30
        )
        producer = Producer({**settings, "acks": "all"})
        for index in range(20):
            producer.produce("secure-dev", f"s{index}".encode(), partition=index % 2)
        assert producer.flush(30) == 0
        written = sorted(f"s{index}".encode() for index in range(20))
        assert read_all(settings, "secure-dev", 20, "first") == written

        if shutil.which("kcat") is not None:
            options = [f"-X{key}={value}" for key, value in client.items()]
            out = subprocess.run(
                ["kcat", "-b", ready["bootstrap"], *options, "-C", "-t", "secure-dev",
                 "-o", "beginning", "-e", "-q"],
                check=True,
                timeout=30,
                capture_output=True,
            )  # fmt: skip
            assert sorted(out.stdout.split()) == written

        # Without credentials (TLS only), or with a wrong password: refused, nothing written.
        anonymous = {
            "bootstrap.servers": ready["bootstrap"],
            "security.protocol": "SSL",
            "ssl.ca.location": client["ssl.ca.location"],
        }
        assert refused_write(anonymous, "secure-dev")
        wrong = refused_write({**settings, "sasl.password": "wrong"}, "secure-dev")
        assert any("Authentication failed" in error for error in wrong), wrong
        assert records_in(settings, "secure-dev", 2) == 20

        # The admin API over https, trusting the printed CA, knows the printed user (HTTP
        # Basic); without credentials it answers nothing.
        context = ssl.create_default_context(cafile=client["ssl.ca.location"])
        login = base64.b64encode(
            f"{client['sasl.username']}:{client['sasl.password']}".encode()
        ).decode()
        described = urllib.request.Request(
            f"{ready['admin'][0]}/v1/cluster", headers={"Authorization": f"Basic {login}"}
        )
        with urllib.request.urlopen(described, context=context) as got:
            assert json.loads(got.read())["brokers"] == 2
        with pytest.raises(urllib.error.HTTPError) as anonymous_read:
            urllib.request.urlopen(f"{ready['admin'][0]}/v1/cluster", context=context)
        assert anonymous_read.value.code == 401
        unauthorized = urllib.request.Request(
            f"{ready['admin'][0]}/v1/topics",
            data=json.dumps({"name": "by-admin", "partitions": 1}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(unauthorized, context=context)
        assert refused.value.code == 401

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        kill_if_running(process)

    # The same command again: the same certificates, password and data.
    process, again = start_dev(tmp_path, base_port, 2, "--secure")
    try:
        assert again["client"] == client
        assert Path(client["ssl.ca.location"]).read_bytes() == ca
        settings = {"bootstrap.servers": again["bootstrap"], **again["client"]}
        assert read_all(settings, "secure-dev", 20, "after-restart") == written
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        kill_if_running(process)
