"""`kraft reassign|rebalance|brokers remove` without a node: their command lines and how they
render the admin API's answers (the live behaviour is in tests/integration)."""

from __future__ import annotations

import argparse

import pytest

from node.admin_cli import add_admin_commands, render_plan, render_reassignments


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kraft")
    add_admin_commands(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_command_lines() -> None:
    start = parse("reassign", "start", "a:0=1,2", "b.c:3=4", "--throttle", "1000")
    assert (start.assignments, start.throttle) == (["a:0=1,2", "b.c:3=4"], 1000)
    assert parse("reassign", "cancel", "a:0").partition == "a:0"
    rebalance = parse("rebalance")
    assert (rebalance.execute, rebalance.throttle) == (False, None)
    assert parse("rebalance", "--execute", "--throttle", "5").execute
    assert parse("brokers").brokers_action is None
    remove = parse("brokers", "remove", "4", "--timeout", "30")
    assert (remove.brokers_action, remove.id, remove.timeout) == ("remove", 4, 30.0)
    # The admin URL and token may come before or after `remove`.
    before = parse("brokers", "--admin", "http://h:1", "--token", "t", "remove", "4")
    after = parse("brokers", "remove", "4", "--admin", "http://h:1", "--json")
    assert (before.admin, before.token, before.json) == ("http://h:1", "t", False)
    assert (after.admin, after.json) == ("http://h:1", True)
    with pytest.raises(SystemExit):
        parse("reassign", "start")


def test_progress_table_shows_bytes_behind_or_unknown() -> None:
    rendered = render_reassignments(
        [
            {
                "topic": "t",
                "partition": 0,
                "replicas": [3, 4, 1, 2],
                "target": [3, 4],
                "adding": [3, 4],
                "removing": [1, 2],
                "leader": 1,
                "isr": [1, 2],
                "bytes_behind": {"3": 1024, "4": None},
            }
        ]
    ).splitlines()
    assert rendered[0].split()[:4] == ["TOPIC", "PARTITION", "REPLICAS", "TARGET"]
    assert rendered[1].split() == [
        "t",
        "0",
        "3,4,1,2",
        "3,4",
        "3,4",
        "1,2",
        "1",
        "1,2",
        "3:1024,4:?",
    ]
    assert render_reassignments([]) == "no reassignment in progress"


def test_plan_lists_moves_counts_and_what_happens_next() -> None:
    plan = {
        "moves": [{"topic": "t", "partition": 1, "from": [1, 2], "to": [3, 2]}],
        "replicas_moved": 1,
        "brokers": [
            {
                "broker": b,
                "replicas_before": before,
                "replicas_after": after,
                "leaders_before": 0,
                "leaders_after": 0,
            }
            for b, before, after in ((1, 2, 1), (2, 1, 1), (3, 0, 1))
        ],
        "balanced": True,
        "started": False,
        "detail": "dry run",
    }
    lines = render_plan(plan).splitlines()
    assert lines[0].split() == ["TOPIC", "PARTITION", "FROM", "TO"]
    assert lines[1].split() == ["t", "1", "1,2", "3,2"]
    assert lines[-2:] == ["1 partitions change, 1 replicas move", "dry run"]
