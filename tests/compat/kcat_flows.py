"""The matrix's flows with Debian's kcat (1.7.1 on librdkafka 2.0.2), run as a subprocess with
a timeout: `-P` to write, `-C` to read (JSON envelopes), `-G` for a group, `-Q` for offsets by
time, `-L -J` for metadata. kcat has no admin operations, no explicit commit and sets one set of
headers for every message it writes."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

from tests.compat.common import TIMEOUT, Message

KEY_DELIMITER = "\t"


def _kcat(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kcat", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"kcat {' '.join(args)}: {done.returncode} {done.stderr}"
    return done.stdout


def _produce(bootstrap: str, topic: str, written: list[Message], *settings: str) -> None:
    headers = {m.headers for m in written}
    assert len(headers) == 1, "kcat writes one set of headers for every message"
    header_args = [arg for k, v in next(iter(headers)) for arg in ("-H", f"{k}={v.decode()}")]
    lines = "".join(
        f"{m.key.decode()}{KEY_DELIMITER}{m.value.decode()}\n"
        if m.key is not None
        else f"{m.value.decode()}\n"
        for m in written
    )
    _kcat(
        "-P",
        "-b",
        bootstrap,
        "-t",
        topic,
        "-p",
        "0",
        "-K",
        KEY_DELIMITER,
        *header_args,
        *settings,
        stdin=lines,
    )


def produce(bootstrap: str, topic: str, written: list[Message], acks: str, codec: str) -> None:
    _produce(bootstrap, topic, written, "-X", f"acks={acks}", "-z", codec)


def produce_idempotent(bootstrap: str, topic: str, written: list[Message]) -> None:
    _produce(bootstrap, topic, written, "-X", "enable.idempotence=true")


def _message(envelope: dict[str, Any]) -> Message:
    raw = envelope.get("headers") or []
    headers = tuple((raw[i], raw[i + 1].encode()) for i in range(0, len(raw), 2))
    key = envelope.get("key")
    return Message(
        None if key is None else key.encode(),
        envelope["payload"].encode(),
        headers,
        envelope["ts"],
        envelope["offset"],
    )


def _envelopes(output: str) -> list[Message]:
    return [_message(json.loads(line)) for line in output.splitlines() if line.strip()]


def _consume(bootstrap: str, topic: str, offset: str, count: int) -> list[Message]:
    return _envelopes(
        _kcat("-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", offset, "-c", str(count), "-J")
    )


def consume_assigned(bootstrap: str, topic: str, count: int) -> list[Message]:
    return _consume(bootstrap, topic, "beginning", count)


def consume_from(bootstrap: str, topic: str, offset: int, count: int) -> list[Message]:
    return _consume(bootstrap, topic, str(offset), count)


def consume_group(bootstrap: str, topic: str, group: str, count: int) -> list[Message]:
    """A balanced consumer (`-G`): it commits what it read (auto commit) when it closes."""
    return _envelopes(
        _kcat(
            "-b",
            bootstrap,
            "-G",
            group,
            "-X",
            "auto.offset.reset=earliest",
            "-c",
            str(count),
            "-J",
            topic,
        )
    )


def _query(bootstrap: str, topic: str, timestamp: int) -> int:
    output = _kcat("-Q", "-b", bootstrap, "-t", f"{topic}:0:{timestamp}")
    found = re.search(r"offset (-?\d+)", output)
    assert found is not None, output
    return int(found.group(1))


def offset_for_time(bootstrap: str, topic: str, timestamp: int) -> int:
    return _query(bootstrap, topic, timestamp)


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    # -2 and -1: Kafka's "earliest" and "latest" timestamps.
    return _query(bootstrap, topic, -2), _query(bootstrap, topic, -1)


def _metadata(bootstrap: str, *topic: str) -> dict[str, Any]:
    args = ["-t", topic[0]] if topic else []
    result: dict[str, Any] = json.loads(_kcat("-L", "-b", bootstrap, "-J", *args))
    return result


def topic_replicas(bootstrap: str, topic: str) -> dict[int, list[int]]:
    [described] = _metadata(bootstrap, topic)["topics"]
    assert described["topic"] == topic
    assert "error" not in described, described
    return {p["partition"]: [r["id"] for r in p["replicas"]] for p in described["partitions"]}


def topics(bootstrap: str) -> set[str]:
    return {t["topic"] for t in _metadata(bootstrap)["topics"]}
