"""`kraft dev`: the layout of a local cluster, and a real one started, used by a Kafka client,
stopped with SIGINT (as Ctrl-C) and started again on the same data."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import kraft_executable
from node.config import load_config
from node.dev_cluster import node_properties, plan
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


def start_dev(
    data_dir: Path, base_port: int, nodes: int = 3
) -> tuple[subprocess.Popen[str], dict[str, object]]:
    process = subprocess.Popen(
        [kraft_executable(), "dev", "--nodes", str(nodes), "--data-dir", str(data_dir),
         "--base-port", str(base_port)],
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
        if process.poll() is None:
            process.kill()
            process.wait(10)

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
        if process.poll() is None:
            process.kill()
            process.wait(10)


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
        # (About a second and a half: a controlled shutdown each, all at once.)
        deadline = time.monotonic() + 10
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
