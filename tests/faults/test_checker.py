"""The fault checker on evidence made by hand: each guarantee it checks is broken once, and a
clean history passes (no cluster needed, so these run everywhere)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.faults.checker import Batch, Evidence, check, leaders_per_epoch
from bench.faults.schedule import KINDS, describe, generate, parse
from net.record_batch import NO_PRODUCER_ID

IDEMPOTENT = "idem"
PLAIN = "plain"
PRODUCER = 7


def ack(topic: str, partition: int, offset: int | None, value: str) -> dict[str, Any]:
    return {
        "event": "ack",
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "value": value,
    }


def log(topic: str, partition: int, offset: int, value: str) -> dict[str, Any]:
    return {
        "event": "log",
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "value": value,
    }


def clean() -> Evidence:
    evidence = Evidence(IDEMPOTENT, PLAIN)
    evidence.producer_events = {
        "idempotent": [ack(IDEMPOTENT, 0, 0, "i-0"), ack(IDEMPOTENT, 0, 1, "i-1")],
        "plain": [ack(PLAIN, 0, 0, "p-0"), ack(PLAIN, 0, 2, "p-0")],  # a retried duplicate
    }
    evidence.readback_events = [
        log(IDEMPOTENT, 0, 0, "i-0"),
        log(IDEMPOTENT, 0, 1, "i-1"),
        log(PLAIN, 0, 0, "p-0"),
        log(PLAIN, 0, 1, "p-x"),
        log(PLAIN, 0, 2, "p-0"),
        {"event": "committed", "topic": IDEMPOTENT, "partition": 0, "offset": 2},
        {"event": "done"},
    ]
    evidence.consumer_events = [
        {"event": "read", "topic": IDEMPOTENT, "partition": 0, "offset": 0, "value": "i-0"},
        {"event": "commit", "time": 1.0, "offsets": [[IDEMPOTENT, 0, 1]]},
        {"event": "commit", "time": 2.0, "offsets": [[IDEMPOTENT, 0, 2]]},
    ]
    evidence.leaders = {1: {1}, 2: {3}}
    batches = [Batch(0, 1, 0, 11, PRODUCER, 0, 0), Batch(2, 2, 1, 22, PRODUCER, 0, 2)]
    evidence.replicas = {(IDEMPOTENT, 0): (3, {1: list(batches), 2: list(batches)})}
    evidence.metadata = (10, {1: [Batch(0, 4, 1, 5), Batch(5, 9, 2, 6)], 2: [Batch(5, 9, 2, 6)]})
    evidence.heal_seconds = 1.0
    return evidence


def test_a_clean_history_passes() -> None:
    verdict = check(clean())
    assert verdict.failures == []
    assert verdict.counts["idempotent_lost"] == 0


def test_a_lost_or_moved_acknowledged_write_fails() -> None:
    evidence = clean()
    evidence.producer_events["idempotent"].append(ack(IDEMPOTENT, 0, 5, "i-5"))
    evidence.producer_events["plain"].append(ack(PLAIN, 0, 1, "p-1"))
    failures = check(evidence).failures
    assert any("'i-5'" in failure and "is missing" in failure for failure in failures)
    assert any("'p-1'" in failure and "now holds 'p-x'" in failure for failure in failures)


def test_an_acknowledgement_without_offset_needs_its_value_in_its_partition() -> None:
    evidence = clean()
    evidence.producer_events["idempotent"].append(ack(IDEMPOTENT, 0, None, "i-1"))
    assert check(evidence).passed
    evidence.producer_events["idempotent"].append(ack(IDEMPOTENT, 0, None, "i-9"))
    assert any("'i-9'" in failure for failure in check(evidence).failures)


def test_an_idempotent_duplicate_fails_naming_who_wrote_each_copy() -> None:
    evidence = clean()
    evidence.readback_events.append(log(IDEMPOTENT, 0, 2, "i-1"))
    failures = check(evidence).failures
    assert failures == [
        "idempotent producer duplicate: 'i-1' at "
        f"idem-0@1 (producer {PRODUCER} epoch 0 sequence 1), "
        f"idem-0@2 (producer {PRODUCER} epoch 0 sequence 2)"
    ]


def replicated(*batches: Batch) -> dict[int, list[Batch]]:
    return {1: list(batches), 2: list(batches)}


def test_a_producer_may_start_a_new_epoch_at_sequence_zero() -> None:
    evidence = clean()
    evidence.replicas[(IDEMPOTENT, 0)] = (
        4,
        replicated(
            Batch(0, 1, 0, 11, PRODUCER, 0, 0),
            Batch(2, 2, 1, 22, PRODUCER, 1, 0),
            Batch(3, 3, 1, 33, NO_PRODUCER_ID, -1, -1),
        ),
    )
    assert check(evidence).passed


def test_a_log_breaking_a_producers_sequence_rules_fails() -> None:
    repeated = Batch(2, 2, 1, 22, PRODUCER, 0, 1)
    older_epoch = Batch(2, 2, 1, 22, PRODUCER, 0, 2)
    new_epoch_not_at_zero = Batch(2, 2, 1, 22, PRODUCER, 2, 5)
    for first_epoch, second, problem in (
        (0, repeated, "idem-0@2: producer 7 epoch 0 sequence 1 follows sequence 1 at 1"),
        (1, older_epoch, "idem-0@2: producer 7 epoch 0 after epoch 1 at 0"),
        (0, new_epoch_not_at_zero, "idem-0@2: producer 7 new epoch 2 starts at sequence 5, not 0"),
    ):
        evidence = clean()
        evidence.replicas[(IDEMPOTENT, 0)] = (
            3,
            replicated(Batch(0, 1, 0, 11, PRODUCER, first_epoch, 0), second),
        )
        assert check(evidence).failures == [problem]


def test_a_changed_read_and_a_commit_going_back_fail() -> None:
    evidence = clean()
    evidence.consumer_events += [
        {"event": "read", "topic": IDEMPOTENT, "partition": 0, "offset": 1, "value": "i-other"},
        {"event": "commit", "time": 3.0, "offsets": [[IDEMPOTENT, 0, 1]]},
    ]
    failures = check(evidence).failures
    assert any("read 'i-other'" in failure for failure in failures)
    assert any("committed 1 after 2" in failure for failure in failures)


def test_the_final_committed_offset_below_a_successful_commit_fails() -> None:
    evidence = clean()
    evidence.readback_events[5]["offset"] = 1
    assert any("is 1 at the end" in failure for failure in check(evidence).failures)


def test_two_leaders_in_an_epoch_fail(tmp_path: Path) -> None:
    for node_id, epochs in ((1, [1, 2]), (2, [2])):
        (tmp_path / f"node{node_id}.log").write_text(
            "".join(
                json.dumps({"event": "raft_role_changed", "role": "leader", "epoch": epoch}) + "\n"
                for epoch in epochs
            )
            + "not json\n"
        )
    leaders = leaders_per_epoch({i: tmp_path / f"node{i}.log" for i in (1, 2)})
    assert leaders == {1: {1}, 2: {1, 2}}
    evidence = clean()
    evidence.leaders = leaders
    assert check(evidence).failures == ["metadata log: epoch 2 had leaders [1, 2]"]


def test_replicas_that_differ_or_end_early_below_the_high_watermark_fail() -> None:
    evidence = clean()
    evidence.replicas[(IDEMPOTENT, 0)] = (
        3,
        {
            1: [Batch(0, 1, 0, 11, PRODUCER, 0, 0), Batch(2, 2, 1, 22, PRODUCER, 0, 2)],
            2: [Batch(0, 1, 0, 11, PRODUCER, 0, 0), Batch(2, 2, 1, 99, PRODUCER, 0, 2)],
            3: [Batch(0, 1, 0, 11, PRODUCER, 0, 0)],
        },
    )
    failures = check(evidence).failures
    assert any("batches differ from offset 2" in failure for failure in failures)
    assert any("node 3 ends at 2" in failure for failure in failures)


def test_metadata_logs_are_compared_where_both_hold_batches() -> None:
    evidence = clean()
    evidence.metadata = (10, {1: [Batch(0, 4, 1, 5), Batch(5, 9, 2, 6)], 2: [Batch(5, 9, 3, 6)]})
    assert any("__cluster_metadata-0" in failure for failure in check(evidence).failures)


def test_not_healed_and_a_fatal_client_error_fail() -> None:
    evidence = clean()
    evidence.heal_problem = "after 60 s: node 2 not ready"
    evidence.producer_events["idempotent"].append({"event": "fatal", "error": "boom"})
    failures = check(evidence).failures
    assert "not healed: after 60 s: node 2 not ready" in failures
    assert "producer idempotent: fatal error: boom" in failures


def test_schedules_are_seeded_and_round_trip() -> None:
    first = generate(7, 60.0, [1, 2, 3])
    assert first == generate(7, 60.0, [1, 2, 3])
    assert first != generate(8, 60.0, [1, 2, 3])
    assert {step.kind for step in first} == set(KINDS)
    assert parse(describe(first)) == first


def test_an_unreadable_partition_or_an_incomplete_read_back_is_said_not_counted_as_loss() -> None:
    evidence = clean()
    evidence.readback_events = [
        {"event": "readback_failed", "topic": IDEMPOTENT, "partition": 0, "error": "no leader"},
        log(PLAIN, 0, 0, "p-0"),
        log(PLAIN, 0, 1, "p-x"),
        log(PLAIN, 0, 2, "p-0"),
        {"event": "done"},
    ]
    verdict = check(evidence)
    assert len(verdict.failures) == 1 and "read-back of idem-0 failed" in verdict.failures[0]
    assert verdict.counts["idempotent_acks_unverified"] == 2
    evidence.readback_events = evidence.readback_events[:-1]
    failures = check(evidence).failures
    assert any("did not complete" in failure for failure in failures)
    assert not any("acknowledged" in failure and "missing" in failure for failure in failures)
