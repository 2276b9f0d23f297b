"""`kraft topics|brokers|quorum|partitions|...` against a real node's admin API: tables, --json,
and exit codes scripts can trust (0 done, 1 refused, 2 bad usage, 3 unreachable)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster, free_ports, kraft_executable
from node.admin_cli import table

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(tmp_path_factory.mktemp("admin-cli"), 1)
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def kraft(node: Cluster | None, *args: str) -> subprocess.CompletedProcess[str]:
    admin = (
        f"http://127.0.0.1:{node.nodes[1].admin_port}"
        if node is not None
        else f"http://127.0.0.1:{free_ports(1)[0]}"
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("KRAFT_")}
    return subprocess.run(
        [kraft_executable(), *args, "--admin", admin],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )


def test_tables_pad_columns_and_join_lists() -> None:
    assert table([[1, [2, 3], None]], ("ID", "REPLICAS", "RACK")).splitlines() == [
        "ID  REPLICAS  RACK",
        "1   2,3       -",
    ]


def test_brokers_quorum_and_topics_as_tables_and_json(node: Cluster) -> None:
    brokers = kraft(node, "brokers")
    assert brokers.returncode == 0, brokers.stderr
    assert brokers.stdout.splitlines()[0].split()[:3] == ["ID", "EPOCH", "FENCED"]
    assert brokers.stdout.splitlines()[1].split()[0] == "1"

    quorum = kraft(node, "quorum", "--json")
    assert quorum.returncode == 0, quorum.stderr
    assert json.loads(quorum.stdout)["leader_id"] == 1

    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    admin.create_topics([NewTopic("listed", 2, 1)])["listed"].result(30)
    node.wait_for("listed", lambda: "listed" in kraft(node, "topics", "list").stdout)
    described = kraft(node, "topics", "describe", "listed", "--json")
    assert described.returncode == 0
    assert [p["partition"] for p in json.loads(described.stdout)["partitions"]] == [0, 1]
    partitions = kraft(node, "partitions", "describe", "listed")
    assert partitions.returncode == 0
    assert [line.split()[:2] for line in partitions.stdout.splitlines()[1:]] == [
        ["listed", "0"],
        ["listed", "1"],
    ]


def test_exit_codes_tell_refused_from_bad_usage_from_unreachable(node: Cluster) -> None:
    missing = kraft(node, "topics", "describe", "nowhere")
    assert missing.returncode == 1
    assert "404" in missing.stderr
    usage = kraft(node, "elect", "preferred", "no-partition-number")
    assert usage.returncode == 2
    assert "TOPIC:PARTITION" in usage.stderr
    unreachable = kraft(None, "brokers")
    assert unreachable.returncode == 3
    assert "unreachable" in unreachable.stderr


def test_topics_are_created_altered_grown_and_deleted_from_the_command_line(node: Cluster) -> None:
    created = kraft(
        node, "topics", "create", "ops", "--partitions", "2", "--config", "retention.ms=60000"
    )
    assert created.returncode == 0, created.stderr
    assert "retention.ms=60000" in created.stdout
    again = kraft(node, "topics", "create", "ops")
    assert again.returncode == 1 and "409" in again.stderr

    altered = kraft(
        node, "topics", "alter", "ops", "--set", "segment.ms=100000", "--delete", "retention.ms",
        "--partitions", "3", "--json",
    )  # fmt: skip
    assert altered.returncode == 0, altered.stderr
    topic = json.loads(altered.stdout)
    assert topic["configs"] == {"segment.ms": "100000"}
    assert len(topic["partitions"]) == 3
    bad = kraft(node, "topics", "alter", "ops", "--set", "segment.ms=soon")
    assert bad.returncode == 1 and "invalid_config" in bad.stderr

    elected = kraft(node, "elect", "preferred", "ops:0", "--json")
    assert elected.returncode == 0, elected.stderr
    assert json.loads(elected.stdout)["results"][0]["partition"] == 0
    # Reassignment on one broker: moving to an unregistered broker is refused (exit 1),
    # nothing is in progress, nothing to cancel, and the plan of one broker moves nothing.
    reassign = kraft(node, "reassign", "start", "ops:0=7")
    assert reassign.returncode == 1 and "invalid_replica_assignment" in reassign.stderr
    listed = kraft(node, "reassign", "list")
    assert listed.returncode == 0 and listed.stdout.strip() == "no reassignment in progress"
    cancel = kraft(node, "reassign", "cancel", "ops:0")
    assert cancel.returncode == 1 and "no_reassignment" in cancel.stderr
    plan = kraft(node, "rebalance", "--json")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["replicas_moved"] == 0
    assert "0 replicas move" in kraft(node, "rebalance").stdout
    assert kraft(node, "reassign", "start", "ops:0=1,x").returncode == 2

    deleted = kraft(node, "topics", "delete", "ops")
    assert deleted.returncode == 0 and "deleted ops" in deleted.stdout
    events = kraft(node, "events", "--json")
    assert events.returncode == 0
    assert any(event.get("topic") == "ops" for event in json.loads(events.stdout))


def test_events_show_only_the_fields_each_event_has(node: Cluster) -> None:
    assert kraft(node, "topics", "create", "shown", "--partitions", "1").returncode == 0
    events = json.loads(kraft(node, "events", "--json").stdout)
    shown = kraft(node, "events")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()[1:]
    assert any("topic_created" in line and "shown" in line for line in lines)
    # (Events only ever add up between the two calls.)
    for event, line in zip(events, lines, strict=False):
        held = {
            key
            for key, value in event.items()
            if value is not None and value is not False and value != []
        } - {"time", "type", "topic", "partition"}
        details = line.split(event["type"], 1)[1]
        # Each detail is `field=value`, after the columns' spaces or the previous one's ", ".
        assert set(re.findall(r"[ ,](\w+)=", details)) == held, (event, line)
