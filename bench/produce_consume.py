"""Data-plane benchmark: produce and consume through real brokers with confluent-kafka.

    python -m bench.produce_consume [--count 1000000] [--size 100] [--rates 1000,5000]

Two setups, each on fresh `kraft serve` processes on 127.0.0.1:
1. one node, a one-partition topic of replication factor 1, acks=1;
2. three nodes, a one-partition topic of replication factor 3, acks=all.

For each: produce throughput and delivery latency (librdkafka's per-message latency, p50/p99;
the producer is saturated, so this includes client queueing), consume throughput from offset
0, end-to-end latency (produce call to consumer receipt) of runs paced at each of `--rates`
(linger.ms=0, so about one message per produce request: past what the leader can answer one
request at a time, the latency is queueing), and the CPU seconds the broker processes used per
million messages produced and consumed. Prints one JSON line per setup. Every process is
killed at the end.

With `--security ssl`, each setup runs twice in the same invocation, on PLAINTEXT and on SSL
listeners (client certificates required; replication and the quorum on TLS too): the JSON
line gives the produce and consume throughput of each, their ratio SSL / PLAINTEXT, and the
TLS handshake time of a client (TCP connect plus handshake, p50/p99 over 200 connections).
With `--security sasl_plaintext`, the same on PLAINTEXT and on SASL_PLAINTEXT listeners
(SCRAM-SHA-512 for the clients and for replication); `bench.sasl_auth` measures the
authentication itself. With `--security sasl_ssl`, on PLAINTEXT and on SASL_SSL listeners
(SCRAM-SHA-512 over TLS for the clients and replication, the quorum on TLS with the nodes'
certificates): the ratios, the TLS handshake alone and the time a client takes to be ready to
send (TCP connect, TLS handshake, ApiVersions, SaslHandshake and the SCRAM exchange; p50/p99
over 200 connections).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster
from bench.tls_certificates import TlsFiles
from net.client import NodeConnection
from net.sasl import SCRAM_SHA_512, SaslClientCredentials
from net.tls import Pem, TlsSettings, client_context

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(cluster: Cluster) -> float:
    """User plus system CPU seconds of the running node processes."""
    total = 0
    for node in cluster.nodes.values():
        if node.process is None:
            continue
        fields = Path(f"/proc/{node.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / _CLOCK_TICKS


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 3)


# librdkafka's settings to reach the cluster: its bootstrap servers, and its TLS settings on
# an SSL cluster.
ClientConfig = dict[str, str | int | float | bool]


# The security protocol of a run, by (TLS, SASL).
SECURITY_PROTOCOLS = {
    (False, False): "PLAINTEXT",
    (True, False): "SSL",
    (False, True): "SASL_PLAINTEXT",
    (True, True): "SASL_SSL",
}

# The SCRAM user of the SASL runs: clients and replication authenticate as it.
_SASL_USER = "bench"
_SASL_PASSWORD = "bench-secret"


def client_config(cluster: Cluster, tls: TlsFiles | None, sasl: bool = False) -> ClientConfig:
    config: ClientConfig = {"bootstrap.servers": cluster.bootstrap}
    if sasl:
        config |= {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": _SASL_USER,
            "sasl.password": _SASL_PASSWORD,
        }
    if tls is not None and sasl:
        config |= {
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(tls.authority.certificate_path),
        }
    elif tls is not None:
        config |= {
            "security.protocol": "SSL",
            "ssl.ca.location": str(tls.authority.certificate_path),
            "ssl.certificate.location": str(tls.client.certificate_path),
            "ssl.key.location": str(tls.client.key_path),
        }
    return config


def produce(
    client: ClientConfig, topic: str, count: int, payload: bytes, acks: str
) -> dict[str, Any]:
    producer = Producer({**client, "acks": acks, "linger.ms": 5, "batch.size": 1_000_000})
    latencies: list[float] = []
    failures = 0

    def delivered(error: Any, message: Any) -> None:
        nonlocal failures
        if error is not None:
            failures += 1
        else:
            latencies.append(message.latency() * 1000)

    started = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, payload, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush(120)
    seconds = time.perf_counter() - started
    if failures or len(latencies) != count:
        raise RuntimeError(f"{failures} failed, {count - len(latencies)} undelivered")
    return {
        "msgs_per_s": round(count / seconds),
        "MB_per_s": round(count * len(payload) / seconds / 1e6, 2),
        "latency_ms": {"p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)},
    }


def consumer(config: ClientConfig, topic: str) -> Consumer:
    client = Consumer(
        {
            **config,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 10,
        }
    )
    client.assign([TopicPartition(topic, 0, 0)])
    return client


def consume(config: ClientConfig, topic: str, count: int) -> dict[str, Any]:
    client = consumer(config, topic)
    received = 0
    started = time.perf_counter()
    deadline = started + 120
    while received < count and time.perf_counter() < deadline:
        for message in client.consume(10_000, 1.0):
            if message.error() is None:
                received += 1
    seconds = time.perf_counter() - started
    client.close()
    if received != count:
        raise RuntimeError(f"consumed {received} of {count}")
    return {"msgs_per_s": round(count / seconds)}


def end_to_end(
    config: ClientConfig, topic: str, acks: str, rate: int, count: int
) -> dict[str, Any]:
    """Produce call to consumer receipt, paced at `rate` messages per second."""
    client = consumer(config, topic)
    producer = Producer({**config, "acks": acks, "linger.ms": 0})
    # Both clients connected and the consumer fetching before the clock starts.
    producer.list_topics(topic, timeout=10)
    client.consume(1, 1.0)
    latencies: list[float] = []
    interval = 1 / rate
    next_send = time.perf_counter()
    sent = 0
    deadline = time.perf_counter() + count / rate + 30
    while len(latencies) < count and time.perf_counter() < deadline:
        now = time.perf_counter()
        if sent < count and now >= next_send:
            producer.produce(topic, str(time.perf_counter()).encode())
            producer.poll(0)
            sent += 1
            next_send += interval
        for message in client.consume(100, 0.0005):
            value = message.value()
            if message.error() is None and value:
                latencies.append((time.perf_counter() - float(value)) * 1000)
    producer.flush(30)
    client.close()
    return {
        "rate": rate,
        "p50_ms": percentile(latencies, 0.5),
        "p99_ms": percentile(latencies, 0.99),
    }


def _client_tls(tls: TlsFiles, sasl: bool) -> TlsSettings:
    """A benchmark client's TLS: with SASL it logs in with its password and presents no
    certificate; without, it presents the client certificate."""
    trusted = Pem(path=tls.authority.certificate_path)
    if sasl:
        return TlsSettings(trusted_certificates=trusted)
    return TlsSettings(
        certificate_chain=Pem(path=tls.client.certificate_path),
        private_key=Pem(path=tls.client.key_path),
        trusted_certificates=trusted,
    )


def handshake_ms(
    cluster: Cluster, tls: TlsFiles, sasl: bool = False, connections: int = 200
) -> dict[str, float]:
    """TCP connect plus TLS handshake to the first node's Kafka listener, as a benchmark
    client makes it."""
    context = client_context(_client_tls(tls, sasl))
    node = next(iter(cluster.nodes.values()))
    times: list[float] = []
    for _ in range(connections):
        started = time.perf_counter()
        with (
            socket.create_connection((node.host, node.broker_port or 0), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname=node.host),
        ):
            times.append((time.perf_counter() - started) * 1000)
    return {"p50": percentile(times, 0.5), "p99": percentile(times, 0.99)}


def authenticated_connect_ms(
    cluster: Cluster, tls: TlsFiles, connections: int = 200
) -> dict[str, float]:
    """Until a new connection to the first node's SASL_SSL listener may send requests: TCP
    connect, TLS handshake, ApiVersions, SaslHandshake and SCRAM-SHA-512's two round trips
    (our own `net` client, one connection after the other)."""
    context = client_context(_client_tls(tls, sasl=True))
    credentials = SaslClientCredentials(SCRAM_SHA_512, _SASL_USER, _SASL_PASSWORD)
    node = next(iter(cluster.nodes.values()))

    async def measure() -> list[float]:
        times: list[float] = []
        for _ in range(connections):
            connection = NodeConnection(
                node.host, node.broker_port or 0, ssl_context=context, sasl=credentials
            )
            started = time.perf_counter()
            await connection.connect()
            times.append((time.perf_counter() - started) * 1000)
            await connection.close()
        return times

    times = asyncio.run(measure())
    return {"p50": percentile(times, 0.5), "p99": percentile(times, 0.99)}


def start(nodes: int, root: Path, tls: TlsFiles | None, sasl: bool = False) -> Cluster:
    """`nodes` combined nodes; with `tls`, every listener is SSL with client certificates
    required (Kafka's `listeners=CLIENT://...,CONTROLLER://...`); with `sasl`, the Kafka
    listener is SASL_PLAINTEXT with one SCRAM-SHA-512 user; with both, the Kafka listener is
    SASL_SSL (clients need no certificate) and the controller's SSL, where the nodes present
    theirs."""
    extra = {} if tls is None else tls.node_properties()
    if tls is not None and sasl:
        extra |= {
            "listener.security.protocol.map": "CLIENT:SASL_SSL,CONTROLLER:SSL",
            "ssl.client.auth": "requested",
        }
    if sasl:
        extra |= {
            "bootstrap.scram.credentials": (
                f"SCRAM-SHA-512=[name={_SASL_USER},password={_SASL_PASSWORD}]"
            ),
            "inter.broker.sasl.username": _SASL_USER,
            "inter.broker.sasl.password": _SASL_PASSWORD,
        }
    cluster = Cluster.combined(root, nodes, **extra)
    if tls is not None:
        cluster.name_listeners("CLIENT", controller="CONTROLLER")
    elif sasl:
        cluster.name_listeners("SASL_PLAINTEXT")
    cluster.start_all()
    return cluster


def run(
    nodes: int,
    acks: str,
    args: argparse.Namespace,
    root: Path,
    tls: TlsFiles | None = None,
    sasl: bool = False,
) -> dict[str, Any]:
    cluster = start(nodes, root, tls, sasl)
    try:
        cluster.wait_for("brokers unfenced", cluster.brokers_unfenced, 60.0)
        client = client_config(cluster, tls, sasl)
        admin = AdminClient(client)
        topics = ["throughput", *(f"latency-{rate}" for rate in args.rates)]
        for topic in topics:
            admin.create_topics([NewTopic(topic, 1, nodes)])[topic].result(30)

        def led(topic: str) -> bool:
            partitions = admin.list_topics(topic, timeout=5).topics[topic].partitions
            return 0 in partitions and partitions[0].leader >= 0

        cluster.wait_for("topics led", lambda: all(led(topic) for topic in topics))
        cpu_before = cpu_seconds(cluster)
        produced = produce(client, "throughput", args.count, b"x" * args.size, acks)
        consumed = consume(client, "throughput", args.count)
        cpu = cpu_seconds(cluster) - cpu_before
        latency = [
            end_to_end(client, f"latency-{rate}", acks, rate, rate * 5) for rate in args.rates
        ]
        handshakes = {}
        if tls is not None:
            handshakes["tls_handshake_ms"] = handshake_ms(cluster, tls, sasl)
            if sasl:
                handshakes["tls_scram_connect_ms"] = authenticated_connect_ms(cluster, tls)
        return {
            "bench": "produce_consume",
            "security": SECURITY_PROTOCOLS[(tls is not None, sasl)],
            **handshakes,
            "nodes": nodes,
            "replication_factor": nodes,
            "acks": acks,
            "count": args.count,
            "size": args.size,
            "produce": produced,
            "consume": consumed,
            "end_to_end": latency,
            "broker_cpu_s_per_million": round(cpu / (args.count / 1e6), 2),
        }
    finally:
        cluster.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument(
        "--rates",
        type=lambda text: [int(rate) for rate in text.split(",")],
        default=[1_000, 5_000],
        help="messages per second of the end-to-end latency runs, comma-separated",
    )
    parser.add_argument(
        "--security",
        choices=["plaintext", "ssl", "sasl_plaintext", "sasl_ssl"],
        default="plaintext",
        help="ssl, sasl_plaintext, sasl_ssl: run each setup on PLAINTEXT and on that protocol, "
        "compare",
    )
    args = parser.parse_args()
    for nodes, acks in ((1, "1"), (3, "all")):
        with tempfile.TemporaryDirectory(prefix="bench-produce-consume-") as directory:
            result = run(nodes, acks, args, Path(directory) / "plaintext")
            if args.security != "plaintext":
                tls = (
                    TlsFiles.create(Path(directory) / "certificates")
                    if args.security in ("ssl", "sasl_ssl")
                    else None
                )
                sasl = args.security.startswith("sasl")
                secured = run(nodes, acks, args, Path(directory) / args.security, tls, sasl)
                result = compare(result, secured, args.security)
        print(json.dumps(result), flush=True)


def compare(
    plaintext: dict[str, Any], secured: dict[str, Any], security: str = "ssl"
) -> dict[str, Any]:
    """One setup's PLAINTEXT and `security` runs, with the latter's throughput as a ratio of
    PLAINTEXT's."""
    return {
        "bench": f"produce_consume_{security}",
        "nodes": plaintext["nodes"],
        "acks": plaintext["acks"],
        "count": plaintext["count"],
        "size": plaintext["size"],
        "produce_ratio": round(
            secured["produce"]["msgs_per_s"] / plaintext["produce"]["msgs_per_s"], 3
        ),
        "consume_ratio": round(
            secured["consume"]["msgs_per_s"] / plaintext["consume"]["msgs_per_s"], 3
        ),
        **{
            key: secured[key]
            for key in ("tls_handshake_ms", "tls_scram_connect_ms")
            if key in secured
        },
        "plaintext": plaintext,
        security: secured,
    }


if __name__ == "__main__":
    main()
