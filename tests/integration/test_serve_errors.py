"""`kraft serve` that cannot use what it was given stops with a plain message and status 1."""

from __future__ import annotations

import socket
from pathlib import Path

from bench.cluster import Cluster


def test_a_listener_address_in_use_stops_the_node_with_a_message(tmp_path: Path) -> None:
    cluster = Cluster.combined(tmp_path, 1)
    (node,) = cluster.nodes.values()
    assert node.broker_port
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", node.broker_port))
        taken.listen()
        cluster.start(node.node_id)
        assert node.process is not None
        try:
            status = node.process.wait(timeout=60)
        finally:
            cluster.stop_all()
    output = node.log_path.read_text()
    assert status == 1
    address = f"('127.0.0.1', {node.broker_port})"
    assert f"kraft serve: [Errno 98] error while attempting to bind on address {address}" in output
    assert "Traceback" not in output.split("kraft serve:")[-1]
