"""SASL authentication cost: how long a new connection takes to be ready on a SASL_PLAINTEXT
listener (TCP connect, ApiVersions, SaslHandshake, SaslAuthenticate round trips) with PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512, next to the same connection without SASL (ApiVersions only)
on a PLAINTEXT node. Prints one JSON line per measurement.

Run from the repository root: `.venv/bin/python -m bench.sasl_auth [--connections N]`.

One real node per listener kind (bench.cluster), our own `net` client on uvloop, connections
made one after the other; figures are the median and p99 over `--connections`. SCRAM's cost on
the client is a PBKDF2 of `--iterations` rounds per connection (no cache), on the server two
HMACs and a hash; PLAIN's is a PBKDF2 on the server.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import uvloop

from bench.cluster import Cluster
from net.client import NodeConnection
from net.sasl import PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, SaslClientCredentials

_PASSWORD = "bench-secret"


async def _connect_times(
    host: str, port: int, sasl: SaslClientCredentials | None, count: int
) -> list[float]:
    times = []
    for _ in range(count):
        connection = NodeConnection(host, port, sasl=sasl, connect_timeout=10)
        started = time.perf_counter()
        await connection.connect()
        times.append(time.perf_counter() - started)
        await connection.close()
    return times


def _report(name: str, times: list[float], iterations: int | None) -> None:
    ordered = sorted(times)
    print(
        json.dumps(
            {
                "bench": "sasl_connect",
                "mechanism": name,
                "iterations": iterations,
                "connections": len(times),
                "median_ms": round(statistics.median(ordered) * 1000, 3),
                "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3),
            }
        ),
        flush=True,
    )


def _node(root: Path, listener: str, **extra: str) -> Cluster:
    cluster = Cluster.combined(root, 1, **extra)
    cluster.name_listeners(listener)
    cluster.start_all()
    cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
    return cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=4096)
    args = parser.parse_args()
    users = ";".join(
        f"{mechanism}=[name=bench,password={_PASSWORD},iterations={args.iterations}]"
        for mechanism in (SCRAM_SHA_256, SCRAM_SHA_512)
    )
    with tempfile.TemporaryDirectory(prefix="bench-sasl-") as root:
        plain_node = _node(Path(root) / "plaintext", "PLAINTEXT")
        try:
            host, port = plain_node.bootstrap.rsplit(":", 1)
            times = uvloop.run(_connect_times(host, int(port), None, args.connections))
            _report("none (PLAINTEXT)", times, None)
        finally:
            plain_node.stop_all()
        sasl_node = _node(
            Path(root) / "sasl",
            "SASL_PLAINTEXT",
            **{
                "sasl.enabled.mechanisms": f"{PLAIN},{SCRAM_SHA_256},{SCRAM_SHA_512}",
                "bootstrap.scram.credentials": users,
            },
        )
        try:
            host, port = sasl_node.bootstrap.rsplit(":", 1)
            for mechanism in (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512):
                credentials = SaslClientCredentials(mechanism, "bench", _PASSWORD)
                # The bootstrap users are written just after the controller activates.
                deadline = time.monotonic() + 10
                while True:
                    try:
                        uvloop.run(_connect_times(host, int(port), credentials, 1))
                        break
                    except ConnectionError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.2)
                times = uvloop.run(_connect_times(host, int(port), credentials, args.connections))
                _report(mechanism, times, args.iterations)
        finally:
            sasl_node.stop_all()


if __name__ == "__main__":
    main()
