"""The fault tests' clients, one process each (so a client is bounded and killed by pid, and a
wedged librdkafka cannot hang the test). Each writes JSON lines to `--out`, flushed per line:

    python bench/faults/clients.py produce --bootstrap B --topic T --out F [--idempotent]
    python bench/faults/clients.py consume --bootstrap B --topics T1,T2 --group G --out F
    python bench/faults/clients.py readback --bootstrap B --topics T1,T2 --group G --out F

- produce: values `<tag>-<n>` at `--rate` per second, acks=all; on each delivery report
  `{"event": "ack", topic, partition, offset, value}` or `{"event": "fail", value, error}`; a
  fatal producer error is `{"event": "fatal", error}` and a new producer carries on. SIGTERM:
  stop sending, flush (bounded), `{"event": "done", sent, unresolved}`.
- consume: a group member that commits synchronously every second: `{"event": "read", ...}` per
  record, `{"event": "commit", offsets: [[topic, partition, offset], ...]}` per successful
  commit, `commit_error` otherwise. SIGTERM: a last commit, close, `done`.
- readback: every record of every partition up to its high watermark (`{"event": "log", ...}`;
  `readback_failed` for a partition whose watermarks cannot be had) and the group's committed
  offsets (`{"event": "committed", ...}`), then `done`.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from types import FrameType
from typing import IO, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition


class Output:
    def __init__(self, path: str) -> None:
        self._file: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, event: str, **fields: Any) -> None:
        self._file.write(json.dumps({"event": event, "time": time.time(), **fields}) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class Stop:
    """Set by SIGTERM; the loops check it."""

    requested = False

    @classmethod
    def install(cls) -> None:
        def handler(signum: int, frame: FrameType | None) -> None:
            cls.requested = True

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)


def common(bootstrap: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        # Faults move leaders every few seconds: learn of it sooner than the 5-minute default.
        "topic.metadata.refresh.interval.ms": 2000,
        "socket.connection.setup.timeout.ms": 3000,
        "reconnect.backoff.max.ms": 1000,
    }


def produce(args: argparse.Namespace) -> int:
    out = Output(args.out)
    config = common(args.bootstrap) | {
        "acks": "all",
        "enable.idempotence": args.idempotent,
        "linger.ms": 5,
        "message.timeout.ms": args.message_timeout_ms,
        "request.timeout.ms": 5000,
    }
    if args.idempotent:
        # librdkafka's own account of its producer id, epoch bumps (and why: message
        # timeouts, sequence errors), drains and idempotence errors goes to the client's
        # stderr file: a duplicate or a fatal error is explained from the client's side too.
        config["debug"] = "eos"
    else:
        # A plain producer that retries: duplicates are allowed, losses of acks are not.
        config["retries"] = 1_000_000
        config["max.in.flight.requests.per.connection"] = 5
    fatal: list[str] = []

    def report(error: KafkaError | None, message: Message) -> None:
        value = (message.value() or b"").decode()
        if error is None:
            out.write(
                "ack",
                topic=message.topic(),
                partition=message.partition(),
                offset=message.offset(),
                value=value,
            )
        else:
            out.write("fail", value=value, error=str(error), fatal=error.fatal())

    def on_error(error: KafkaError) -> None:
        if error.fatal():
            fatal.append(str(error))

    producer = Producer(config | {"error_cb": on_error})
    sent = 0
    interval = 1.0 / args.rate
    next_send = time.monotonic()
    while not Stop.requested:
        if fatal:
            out.write("fatal", error=fatal[-1], sent=sent)
            fatal.clear()
            # The old producer's queue cannot be delivered any more: report it, start over.
            producer.flush(1.0)
            producer = Producer(config | {"error_cb": on_error})
        now = time.monotonic()
        if now >= next_send:
            value = f"{args.tag}-{sent}"
            try:
                producer.produce(args.topic, value=value.encode(), on_delivery=report)
                sent += 1
            except BufferError:
                pass
            except KafkaException as error:
                # Refused before it was queued (e.g. a broker that just restarted called the
                # topic unknown): never sent, so never acknowledged; note it and go on.
                out.write("produce_error", value=value, error=str(error))
                sent += 1
                time.sleep(0.1)
            next_send = max(next_send + interval, now - 1.0)
        producer.poll(min(0.05, max(0.0, next_send - time.monotonic())))
    unresolved = producer.flush(args.flush_seconds)
    out.write("done", sent=sent, unresolved=unresolved)
    out.close()
    return 0


def consume(args: argparse.Namespace) -> int:
    out = Output(args.out)
    consumer = Consumer(
        common(args.bootstrap)
        | {
            "group.id": args.group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000,
        }
    )
    consumer.subscribe(args.topics.split(","))

    def commit() -> None:
        try:
            committed = consumer.commit(asynchronous=False)
        except KafkaException as error:
            # Nothing consumed since the last commit is not a failure worth reporting.
            if error.args[0].code() != KafkaError._NO_OFFSET:
                out.write("commit_error", error=str(error))
            return
        offsets = [[tp.topic, tp.partition, tp.offset] for tp in committed or [] if tp.offset >= 0]
        errors = [str(tp.error) for tp in committed or [] if tp.error is not None]
        if errors:
            out.write("commit_error", error="; ".join(errors))
        elif offsets:
            out.write("commit", offsets=offsets)

    last_commit = time.monotonic()
    while not Stop.requested:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            out.write(
                "read",
                topic=message.topic(),
                partition=message.partition(),
                offset=message.offset(),
                value=(message.value() or b"").decode(),
            )
        elif message is not None:
            out.write("consume_error", error=str(message.error()))
        if time.monotonic() - last_commit >= 1.0:
            commit()
            last_commit = time.monotonic()
    commit()
    consumer.close()
    out.write("done")
    out.close()
    return 0


def readback(args: argparse.Namespace) -> int:
    out = Output(args.out)
    reader = Consumer(
        common(args.bootstrap) | {"group.id": f"{args.group}-readback", "enable.auto.commit": False}
    )

    def seen(topic: str) -> str:
        """What a Metadata request answers for `topic` (its error, partitions and leaders)."""
        try:
            found = reader.list_topics(topic, timeout=5).topics[topic]
        except (KafkaException, KeyError) as error:
            return f"metadata request failed: {error}"
        leaders = {p: meta.leader for p, meta in sorted(found.partitions.items())}
        return f"error {found.error}, leaders {leaders}"

    for topic in args.topics.split(","):
        # Also fills the client's metadata cache before the watermarks are asked for.
        out.write("metadata", topic=topic, seen=seen(topic))
        for partition in range(args.partitions):
            # A partition without a leader (offline) has no watermarks: ask for a while, then
            # say so and read the others (the checker reports it; it is not a read of nothing).
            deadline = time.monotonic() + 20
            while True:
                try:
                    low, high = reader.get_watermark_offsets(
                        TopicPartition(topic, partition), timeout=5
                    )
                    break
                except KafkaException as error:
                    if time.monotonic() > deadline:
                        out.write(
                            "readback_failed",
                            topic=topic,
                            partition=partition,
                            error=f"{error}; the cluster's metadata says: {seen(topic)}",
                        )
                        low = high = -1
                        break
                    time.sleep(1)
            if low < 0:
                continue
            out.write("watermarks", topic=topic, partition=partition, low=low, high=high)
            if high <= low:
                continue
            reader.assign([TopicPartition(topic, partition, low)])
            position = low
            deadline = time.monotonic() + 60
            while position < high and time.monotonic() < deadline:
                message = reader.poll(0.5)
                if message is None:
                    continue
                if message.error() is not None:
                    out.write("consume_error", error=str(message.error()))
                    continue
                out.write(
                    "log",
                    topic=topic,
                    partition=partition,
                    offset=message.offset(),
                    value=(message.value() or b"").decode(),
                )
                position = int(message.offset() or 0) + 1
            if position < high:
                out.write("readback_short", topic=topic, partition=partition, at=position)
            reader.unassign()
    reader.close()
    group = Consumer(common(args.bootstrap) | {"group.id": args.group})
    asked = [
        TopicPartition(topic, partition)
        for topic in args.topics.split(",")
        for partition in range(args.partitions)
    ]
    try:
        for tp in group.committed(asked, timeout=20):
            out.write("committed", topic=tp.topic, partition=tp.partition, offset=tp.offset)
    except KafkaException as error:
        out.write("committed_failed", error=str(error))
    group.close()
    out.write("done")
    out.close()
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["produce", "consume", "readback"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--topic")
    parser.add_argument("--topics")
    parser.add_argument("--group")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--tag", default="m")
    parser.add_argument("--idempotent", action="store_true")
    parser.add_argument("--rate", type=float, default=100.0)
    # librdkafka's default (5 minutes), longer than any outage of a run: a message that times
    # out makes librdkafka bump its producer epoch by itself and send again, at sequence 0,
    # records the broker may already hold (KIP-360), so its idempotence promises nothing once
    # a message has timed out, against Kafka as here.
    parser.add_argument("--message-timeout-ms", type=int, default=300_000)
    parser.add_argument("--flush-seconds", type=float, default=30.0)
    args = parser.parse_args(argv)
    Stop.install()
    return {"produce": produce, "consume": consume, "readback": readback}[args.role](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
