"""kcat driven by the librdkafka bundled in the confluent-kafka wheel, as issue 23's figures
were taken (Debian's kcat links librdkafka 2.0.2): produce and consume rates of the scale
benchmarks."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import confluent_kafka

# Every kcat run is bounded: a cluster that does not take the lines fails the run.
KCAT_TIMEOUT_S = 600.0


def librdkafka_environment(root: Path) -> dict[str, str]:
    """The environment that makes kcat load the confluent-kafka wheel's librdkafka: the wheel
    names it `librdkafka-<hash>.so.1`, so a link named as kcat asks for it goes in `root`."""
    package = Path(confluent_kafka.__file__).parent
    (bundled,) = sorted(package.parent.glob("confluent_kafka.libs/librdkafka*.so*"))
    libraries = root / "librdkafka"
    libraries.mkdir(parents=True, exist_ok=True)
    link = libraries / "librdkafka.so.1"
    if not link.exists():
        link.symlink_to(bundled)
    return {**os.environ, "LD_LIBRARY_PATH": str(libraries)}


def kcat_version(environment: dict[str, str]) -> str:
    """The librdkafka version kcat runs with in `environment`."""
    printed = subprocess.run(
        ["kcat", "-V"], env=environment, capture_output=True, text=True, check=True, timeout=30
    ).stdout
    found = re.search(r"librdkafka [0-9.]+", printed)
    return found.group(0) if found else "unknown"


def _kcat(mode: str, bootstrap: str, topic: str, partition: int | None) -> list[str]:
    chosen = [] if partition is None else ["-p", str(partition)]
    return ["kcat", mode, "-b", bootstrap, "-t", topic, *chosen]


def kcat_produce(
    bootstrap: str,
    topic: str,
    lines: Path,
    count: int,
    environment: dict[str, str],
    partition: int | None = 0,
) -> float:
    """msg/s of kcat producing the `count` lines of `lines` (acks=all, linger.ms=5) until every
    one is acknowledged, to `partition` (None: spread by kcat's partitioner)."""
    started = time.perf_counter()
    subprocess.run(
        [
            *_kcat("-P", bootstrap, topic, partition),
            "-X",
            "acks=all",
            "-X",
            "linger.ms=5",
            "-l",
            str(lines),
        ],
        env=environment,
        check=True,
        timeout=KCAT_TIMEOUT_S,
    )
    return count / (time.perf_counter() - started)


def kcat_consume(bootstrap: str, topic: str, count: int, environment: dict[str, str]) -> float:
    """msg/s of kcat consuming `count` messages of partition 0 from the beginning."""
    started = time.perf_counter()
    subprocess.run(
        [*_kcat("-C", bootstrap, topic, 0), "-o", "beginning", "-e", "-q", "-c", str(count)],
        env=environment,
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=KCAT_TIMEOUT_S,
    )
    return count / (time.perf_counter() - started)
