"""The `kraft` console script runs a node whose process never imports hypothesis (kio would
register a strategy per type with it, at every start), and that node serves Kafka clients."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster

pytestmark = pytest.mark.timeout(180)

# Runs the console script given as its first argument, then reports which modules the node
# process imported when it exits (after its controlled shutdown).
_REPORTING_RUNNER = """
import atexit, json, runpy, sys
atexit.register(lambda: print(json.dumps({"modules_at_exit": {
    "hypothesis": sys.modules.get("hypothesis") is not None,
    "kio": "kio.static.primitive" in sys.modules,
}}), flush=True))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_the_kraft_script_serves_without_importing_hypothesis(tmp_path: Path) -> None:
    assert "hypothesis" in sys.modules  # the test process has it: the node must not
    cluster = Cluster.combined(tmp_path, 1, **{"offsets.topic.replication.factor": "1"})
    node = cluster.nodes[1]
    node.command_prefix = [sys.executable, "-c", _REPORTING_RUNNER]
    cluster.start(1)
    try:
        cluster.wait_for("node 1 ready", lambda: cluster.ready(1), timeout=90)
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
    reports = [
        json.loads(line)["modules_at_exit"]
        for line in node.log_path.read_text().splitlines()
        if '"modules_at_exit"' in line
    ]
    assert reports == [{"hypothesis": False, "kio": True}]
