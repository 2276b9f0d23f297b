"""The fault tests' checker: what the clients saw, what the logs hold at the end, what the nodes
logged, judged against the guarantees. Pure functions over the evidence a run collected, so a
report can be checked again from the files of a kept run.

Guarantees checked:
- every acknowledged (acks=all) message is in its partition's log, at the offset it was
  acknowledged with (read back at the end, below the high watermark);
- the idempotent producer's messages appear once each (a duplicate is reported with each
  copy's producer id, epoch and sequence, so a broker that wrote a batch twice is told apart
  from a client that re-sent records under a new producer epoch);
- the idempotent topic's logs keep each producer's sequences as a broker must: per producer
  id the epochs never go back, a batch continues its epoch's last sequence exactly (a
  repeat is a duplicate the broker failed to recognise, a gap an out-of-order batch it
  accepted), and a producer's new epoch starts at sequence 0;
- every record a consumer read is still at its offset with the same value;
- the committed offsets each partition's group commits succeeded with never go back, and the
  final committed offset is at least the last successful commit;
- the metadata log has at most one leader per epoch (from the nodes' `raft_role_changed`
  events), and every node's copy of the metadata log agrees below the quorum high watermark;
- every replica of a test partition holds the same batches below the high watermark;
- the cluster healed: every node ready and every ISR full within the bound after the last fault;
- no client hit a fatal error, and the final read-back reached every high watermark.
"""

from __future__ import annotations

import bisect
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from net.record_batch import NO_PRODUCER_ID, RecordBatchError, validate_batch

TopicPartition = tuple[str, int]
_SEQUENCE_WRAP = 2**31


class Batch(NamedTuple):
    """A batch of a replica's log: where it is, its leader epoch and CRC32C (which covers
    everything after it, so equal batches have equal CRCs), and who wrote it."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    crc: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    base_sequence: int = -1

    @property
    def last_sequence(self) -> int:
        return (self.base_sequence + self.last_offset - self.base_offset) % _SEQUENCE_WRAP


def read_events(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a client's output (a line cut short by a kill is skipped)."""
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def read_batches(partition_dir: Path) -> list[Batch]:
    """The batches of a partition directory's segments in offset order, up to a torn tail."""
    batches: list[Batch] = []
    for segment in sorted(partition_dir.glob("*.log")):
        data = segment.read_bytes()
        position = 0
        while position < len(data):
            try:
                header = validate_batch(data, position)
            except RecordBatchError:
                # A batch being written as we read, or cut by a power cut: the end of this
                # replica's readable log (what lies below the high watermark is compared).
                break
            batches.append(
                Batch(
                    header.base_offset,
                    header.last_offset,
                    header.partition_leader_epoch,
                    header.crc,
                    header.producer_id,
                    header.producer_epoch,
                    header.base_sequence,
                )
            )
            position += header.size
    return batches


def leaders_per_epoch(node_logs: dict[int, Path]) -> dict[int, set[int]]:
    """Epoch -> the nodes that logged becoming the metadata quorum's leader in it."""
    leaders: dict[int, set[int]] = defaultdict(set)
    for node_id, path in node_logs.items():
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if "raft_role_changed" not in line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if event.get("event") == "raft_role_changed" and event.get("role") == "leader":
                leaders[int(event["epoch"])].add(node_id)
    return dict(leaders)


@dataclass
class Evidence:
    """Everything a run collected; filled by the runner."""

    idempotent_topic: str
    plain_topic: str
    producer_events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    consumer_events: list[dict[str, Any]] = field(default_factory=list)
    readback_events: list[dict[str, Any]] = field(default_factory=list)
    leaders: dict[int, set[int]] = field(default_factory=dict)
    # (topic, partition) -> (high watermark, {node id: batches})
    replicas: dict[TopicPartition, tuple[int, dict[int, list[Batch]]]] = field(default_factory=dict)
    # (quorum high watermark, {node id: batches of __cluster_metadata-0})
    metadata: tuple[int, dict[int, list[Batch]]] = (0, {})
    heal_seconds: float | None = None
    heal_problem: str | None = None


@dataclass
class Verdict:
    failures: list[str]
    counts: dict[str, int]

    @property
    def passed(self) -> bool:
        return not self.failures


def _all_partitions(evidence: Evidence) -> set[TopicPartition]:
    """Every partition a client wrote to or read from."""
    events = [*evidence.consumer_events]
    for produced in evidence.producer_events.values():
        events.extend(produced)
    return {(e["topic"], e["partition"]) for e in events if "topic" in e and "partition" in e}


def _limited(problems: list[str], limit: int = 10) -> list[str]:
    if len(problems) <= limit:
        return problems
    return [*problems[:limit], f"... and {len(problems) - limit} more"]


def check(evidence: Evidence) -> Verdict:
    failures: list[str] = []
    counts: Counter[str] = Counter()

    log: dict[TopicPartition, dict[int, str]] = defaultdict(dict)
    unreadable: set[TopicPartition] = set()
    for event in evidence.readback_events:
        if event["event"] == "log":
            log[(event["topic"], event["partition"])][event["offset"]] = event["value"]
        elif event["event"] == "readback_failed":
            unreadable.add((event["topic"], event["partition"]))
            failures.append(
                f"read-back of {event['topic']}-{event['partition']} failed (no leader?): "
                f"{event['error']}; its acknowledged writes and reads are not judged"
            )
        elif event["event"] == "committed_failed":
            failures.append(f"the group's committed offsets could not be read: {event['error']}")
        elif event["event"] == "readback_short":
            failures.append(
                f"read-back of {event['topic']}-{event['partition']} stopped at offset "
                f"{event['at']}, below the high watermark"
            )
        elif event["event"] == "consume_error":
            counts["readback_errors"] += 1
    counts["records_in_logs"] = sum(len(records) for records in log.values())
    if not any(event["event"] == "done" for event in evidence.readback_events):
        # Without a whole read-back every write would look lost: say what is missing instead.
        failures.append(
            "the read-back did not complete (see readback.stderr): acknowledged writes and "
            "reads not judged"
        )
        unreadable.update((topic, partition) for topic, partition in _all_partitions(evidence))
    where: dict[str, list[tuple[TopicPartition, int]]] = defaultdict(list)
    for tp, records in log.items():
        for offset, value in records.items():
            where[value].append((tp, offset))

    # Acknowledged writes: present, at their offset.
    for name, events in evidence.producer_events.items():
        lost: list[str] = []
        for event in events:
            kind = event["event"]
            counts[f"{name}_{kind}"] += 1
            if kind == "fatal":
                failures.append(f"producer {name}: fatal error: {event['error']}")
            if kind != "ack":
                continue
            tp = (event["topic"], event["partition"])
            if tp in unreadable:
                counts[f"{name}_acks_unverified"] += 1
                continue
            elsewhere = where.get(event["value"], [])
            if event["offset"] is None or event["offset"] < 0:
                # Acknowledged without an offset (librdkafka reports none when the answer
                # had -1, e.g. for a retried batch): it must be in its partition somewhere.
                counts[f"{name}_acks_without_offset"] += 1
                if not any(place[0] == tp for place in elsewhere):
                    lost.append(
                        f"acknowledged {event['value']!r} in {tp[0]}-{tp[1]} (no offset given) "
                        "is not in that partition"
                        + (f" (the value is at {elsewhere})" if elsewhere else " (it is gone)")
                    )
                continue
            found = log.get(tp, {}).get(event["offset"])
            if found == event["value"]:
                continue
            lost.append(
                f"acknowledged {event['value']!r} at {tp[0]}-{tp[1]}@{event['offset']} "
                + (f"now holds {found!r}" if found is not None else "is missing")
                + (f" (the value is at {elsewhere})" if elsewhere else " (the value is gone)")
            )
        counts[f"{name}_lost"] = len(lost)
        failures.extend(f"producer {name}: {problem}" for problem in _limited(lost))

    # No duplicates from the idempotent producer; its sequences kept as a broker must.
    logs = {
        tp: _longest(per_node, high_watermark)
        for tp, (high_watermark, per_node) in evidence.replicas.items()
        if tp[0] == evidence.idempotent_topic
    }
    duplicates = [
        f"{value!r} at "
        + ", ".join(_written_by(tp, offset, logs.get(tp, [])) for tp, offset in places)
        for value, places in where.items()
        if len(places) > 1 and places[0][0][0] == evidence.idempotent_topic
    ]
    counts["idempotent_duplicates"] = len(duplicates)
    failures.extend(f"idempotent producer duplicate: {problem}" for problem in _limited(duplicates))
    for (topic, partition), batches in sorted(logs.items()):
        failures.extend(_sequence_problems(f"{topic}-{partition}", batches))

    # Reads never change or vanish; commits never go back.
    changed: list[str] = []
    last_commit: dict[TopicPartition, int] = {}
    backwards: list[str] = []
    for event in evidence.consumer_events:
        kind = event["event"]
        counts[f"consumer_{kind}"] += 1
        if kind == "read":
            tp = (event["topic"], event["partition"])
            if tp in unreadable:
                continue
            now = log.get(tp, {}).get(event["offset"])
            if now != event["value"]:
                changed.append(
                    f"read {event['value']!r} at {tp[0]}-{tp[1]}@{event['offset']}, "
                    f"the log now holds {now!r}"
                )
        elif kind == "commit":
            for topic, partition, offset in event["offsets"]:
                before = last_commit.get((topic, partition))
                if before is not None and offset < before:
                    backwards.append(
                        f"{topic}-{partition}: committed {offset} after {before} (at "
                        f"{event['time']:.1f})"
                    )
                last_commit[(topic, partition)] = max(offset, before or offset)
    failures.extend(f"consumer: {problem}" for problem in _limited(changed))
    failures.extend(f"committed offset went back: {problem}" for problem in _limited(backwards))
    for event in evidence.readback_events:
        if event["event"] != "committed":
            continue
        tp = (event["topic"], event["partition"])
        final, last = event["offset"], last_commit.get(tp)
        if last is not None and final < last:
            failures.append(
                f"committed offset went back: {tp[0]}-{tp[1]} is {final} at the end, "
                f"after a commit of {last} succeeded"
            )

    # One metadata leader per epoch.
    counts["metadata_epochs_with_leader"] = len(evidence.leaders)
    for epoch, nodes in sorted(evidence.leaders.items()):
        if len(nodes) > 1:
            failures.append(f"metadata log: epoch {epoch} had leaders {sorted(nodes)}")

    # Replicas agree below the high watermark.
    for (topic, partition), (high_watermark, per_node) in sorted(evidence.replicas.items()):
        failures.extend(_disagreements(f"{topic}-{partition}", high_watermark, per_node, full=True))
    quorum_hw, metadata = evidence.metadata
    failures.extend(_disagreements("__cluster_metadata-0", quorum_hw, metadata, full=False))

    # Healing.
    if evidence.heal_problem is not None:
        failures.append(f"not healed: {evidence.heal_problem}")
    return Verdict(failures, dict(sorted(counts.items())))


def _longest(per_node: dict[int, list[Batch]], high_watermark: int) -> list[Batch]:
    """The batches below `high_watermark` of the replica that holds the most of them (the
    replicas agree there, or `_disagreements` says where not)."""
    longest: list[Batch] = []
    for batches in per_node.values():
        below = [batch for batch in batches if batch.last_offset < high_watermark]
        if len(below) > len(longest):
            longest = below
    return sorted(longest)


def _written_by(tp: TopicPartition, offset: int, batches: list[Batch]) -> str:
    """`offset` in `tp` with the producer id, epoch and sequence of the batch holding it."""
    place = f"{tp[0]}-{tp[1]}@{offset}"
    index = bisect.bisect_right([batch.base_offset for batch in batches], offset) - 1
    if index < 0 or batches[index].last_offset < offset:
        return place
    batch = batches[index]
    sequence = batch.base_sequence + offset - batch.base_offset
    return (
        f"{place} (producer {batch.producer_id} epoch {batch.producer_epoch} "
        f"sequence {sequence % _SEQUENCE_WRAP})"
    )


def _sequence_problems(name: str, batches: list[Batch]) -> list[str]:
    """Where a log breaks the sequence rules a broker enforces on each producer's batches
    (Kafka's ProducerStateManager): epochs never go back, a batch continues its epoch's last
    sequence, a producer's new epoch starts at 0."""
    last: dict[int, Batch] = {}
    problems: list[str] = []
    for batch in batches:
        if batch.producer_id == NO_PRODUCER_ID:
            continue
        before = last.get(batch.producer_id)
        last[batch.producer_id] = batch
        if before is None:
            continue
        where = f"{name}@{batch.base_offset}: producer {batch.producer_id}"
        if batch.producer_epoch < before.producer_epoch:
            problems.append(
                f"{where} epoch {batch.producer_epoch} after epoch {before.producer_epoch} "
                f"at {before.base_offset}"
            )
        elif batch.producer_epoch > before.producer_epoch:
            if batch.base_sequence != 0:
                problems.append(
                    f"{where} new epoch {batch.producer_epoch} starts at sequence "
                    f"{batch.base_sequence}, not 0"
                )
        elif batch.base_sequence != (before.last_sequence + 1) % _SEQUENCE_WRAP:
            problems.append(
                f"{where} epoch {batch.producer_epoch} sequence {batch.base_sequence} follows "
                f"sequence {before.last_sequence} at {before.last_offset}"
            )
    return _limited(problems)


def _disagreements(
    name: str, high_watermark: int, per_node: dict[int, list[Batch]], *, full: bool
) -> list[str]:
    """Every replica holds the same batches below `high_watermark`. With `full`, each replica
    must hold all of them (a partition log without retention, healed and quiet); otherwise (the
    metadata log, which snapshots cut at the front and a lagging voter may not hold to the end)
    the batches every replica holds are compared."""
    below = {
        node: sorted(batch for batch in batches if batch[1] < high_watermark)
        for node, batches in per_node.items()
    }
    problems: list[str] = []
    if not below:
        return problems
    start = 0 if full else max(batches[0][0] if batches else 0 for batches in below.values())
    below = {node: [b for b in batches if b[0] >= start] for node, batches in below.items()}
    reference_node, reference = max(below.items(), key=lambda item: len(item[1]))
    for node, batches in sorted(below.items()):
        ends = batches[-1][1] + 1 if batches else start
        if full and ends < high_watermark:
            problems.append(
                f"{name}: replica on node {node} ends at {ends}, below the high watermark "
                f"{high_watermark}"
            )
        for index, batch in enumerate(batches):
            other = reference[index]
            if other != batch:
                problems.append(
                    f"{name}: batches differ from offset {min(batch[0], other[0])}: node "
                    f"{node} {tuple(batch[:4])} vs node {reference_node} {tuple(other[:4])} "
                    "(base, last, epoch, crc)"
                )
                break
    epochs = [batch[2] for batch in reference]
    if epochs != sorted(epochs):
        problems.append(f"{name}: leader epochs go back along node {reference_node}'s log")
    return problems
