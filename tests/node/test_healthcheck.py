"""The container HEALTHCHECK (`python -m node.healthcheck`) against the real admin application:
exit 0 only on a 200 from /v1/health/ready, 1 with the reason otherwise."""

from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import NoReturn

import pytest
from aiohttp import web
from kio.static.protocol import Payload

from admin.app import create_app
from admin.models import Quorum, ReplicaLog
from bench.cluster import free_ports
from bench.tls_certificates import TlsFiles
from controller.client import NoControllerError
from controller.events import MetadataEvent
from controller.image import MetadataImage
from controller.partition_change import PartitionDefaults, TopicPartition
from controller.records import ReplicaLogState
from node.certificates import CertificateAuthority
from node.healthcheck import check, ready_url

BASE = (
    "node.id=1\ncluster.id=c1\nprocess.roles=broker,controller\n"
    "listeners=PLAINTEXT://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9192\n"
    "controller.quorum.voters=1@127.0.0.1:9192\nlog.dirs=/nonexistent\n"
)


class Status:
    """A node whose readiness the test sets; it knows no controller and hosts no replica."""

    def __init__(self) -> None:
        self.reason: str | None = "no quorum leader known in epoch 0"

    @property
    def cluster_id(self) -> str:
        return "c1"

    def readiness(self) -> str | None:
        return self.reason

    def controller_id(self) -> int | None:
        return None

    async def quorum(self) -> Quorum | None:
        return None

    def metadata_image(self) -> MetadataImage:
        return MetadataImage.EMPTY

    def replica_log(self, topic: str, partition: int) -> ReplicaLog | None:
        return None

    def events(self) -> list[MetadataEvent]:
        return []

    async def send_to_controller(self, request: Payload) -> NoReturn:
        raise NoControllerError("the test's node knows no controller")

    @property
    def partition_defaults(self) -> PartitionDefaults:
        return PartitionDefaults()

    async def inspect_replica_logs(
        self, image: MetadataImage, asked: Mapping[int, Sequence[TopicPartition]]
    ) -> dict[TopicPartition, list[ReplicaLogState]]:
        return {}


@pytest.fixture
async def admin() -> AsyncIterator[tuple[Status, int]]:
    status = Status()
    runner = web.AppRunner(create_app(status))
    await runner.setup()
    port = free_ports(1)[0]
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield status, port
    finally:
        await runner.cleanup()


def config_file(tmp_path: Path, admin_listener: str | None) -> Path:
    path = tmp_path / "server.properties"
    extra = f"admin.listener={admin_listener}\n" if admin_listener else ""
    path.write_text(BASE + extra)
    return path


async def run_check(path: Path, environment: dict[str, str] | None = None) -> int:
    # The check blocks on urllib; the admin app must keep serving on this loop meanwhile.
    return await asyncio.to_thread(check, path, environment or {}, 2.0)


async def test_ready_only_when_the_admin_api_says_so(
    admin: tuple[Status, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, port = admin
    path = config_file(tmp_path, f"http://127.0.0.1:{port}")
    assert await run_check(path) == 1
    assert "503: no quorum leader known in epoch 0" in capsys.readouterr().out
    status.reason = None
    assert await run_check(path) == 0
    assert capsys.readouterr().out == "ready\n"


async def test_the_environment_moves_the_probe_like_it_moves_the_node(
    admin: tuple[Status, int], tmp_path: Path
) -> None:
    status, port = admin
    status.reason = None
    path = config_file(tmp_path, "http://127.0.0.1:1")
    assert await run_check(path, {"KRAFT_ADMIN_LISTENER": f"http://0.0.0.0:{port}"}) == 0


async def test_nothing_listening_is_unhealthy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_ports(1)[0]
    assert await run_check(config_file(tmp_path, f"http://127.0.0.1:{port}")) == 1
    assert f"http://127.0.0.1:{port}/v1/health/ready unreachable" in capsys.readouterr().out


async def test_no_admin_listener_or_a_bad_one_is_unhealthy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await run_check(config_file(tmp_path, None)) == 1
    assert "admin.listener is not set" in capsys.readouterr().out
    path = config_file(tmp_path, "http://127.0.0.1:9292")
    for bad in ("ftp://127.0.0.1:9292", "http://127.0.0.1", "http://127.0.0.1:99999"):
        assert await run_check(path, {"KRAFT_ADMIN_LISTENER": bad}) == 1
        assert (
            f"admin.listener: expected http://host:port or https://host:port, got {bad!r}"
            in capsys.readouterr().out
        )
    assert await run_check(tmp_path / "missing.properties") == 1
    assert "cannot read the configuration file" in capsys.readouterr().out


def test_wildcard_listeners_are_probed_on_loopback() -> None:
    assert ready_url("0.0.0.0", 9292) == "http://127.0.0.1:9292/v1/health/ready"
    assert ready_url("::", 9292) == "http://[::1]:9292/v1/health/ready"
    assert ready_url("fd00::1", 1) == "http://[fd00::1]:1/v1/health/ready"
    assert ready_url("node-1", 1) == "http://node-1:1/v1/health/ready"


async def test_an_ipv6_wildcard_listener_is_probed_on_ipv6_loopback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, None)
    port = free_ports(1)[0]
    # Nothing listens there: the message shows which address was asked.
    environment = {"KRAFT_ADMIN_LISTENER": f"http://[::]:{port}"}
    assert await asyncio.to_thread(check, path, environment, 1.0) == 1
    assert f"http://[::1]:{port}/v1/health/ready unreachable" in capsys.readouterr().out


async def test_the_image_command_line(admin: tuple[Status, int], tmp_path: Path) -> None:
    """What the Dockerfile's HEALTHCHECK runs, as a process: its exit status is the verdict."""
    status, port = admin
    status.reason = None
    environment = {key: value for key, value in os.environ.items() if not key.startswith("KRAFT_")}
    environment["KRAFT_ADMIN_LISTENER"] = f"http://127.0.0.1:{port}"
    path = config_file(tmp_path, None)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "node.healthcheck",
        "--config",
        str(path),
        env=environment,
        stdout=subprocess.PIPE,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 30)
    assert (process.returncode, output) == (0, b"ready\n")


def test_the_probe_does_not_import_the_node() -> None:
    """It runs every few seconds in every container: it must stay a small process."""
    ours = {"node", "broker", "controller", "storage", "kraft", "net", "pydantic"}
    script = (
        "import sys, node.healthcheck; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {ours!r}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True
    )
    assert result.stdout.strip() == "['node', 'node.healthcheck', 'node.properties']"


async def test_an_https_admin_listener_is_probed_over_tls_against_the_truststore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = TlsFiles.create(tmp_path / "tls")
    status = Status()
    status.reason = None
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(files.keystore)
    runner = web.AppRunner(create_app(status, tls=True))
    await runner.setup()
    port = free_ports(1)[0]
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=server).start()
    try:
        # The probe asks a wildcard listener on loopback: the chain is checked, not the name.
        listener = f"admin.listener=https://0.0.0.0:{port}\n"
        path = tmp_path / "server.properties"
        path.write_text(BASE + listener)
        # Without the node's CA (the system's CAs do not know it): refused.
        assert await run_check(path) == 1
        assert "CERTIFICATE_VERIFY_FAILED" in capsys.readouterr().out
        path.write_text(
            BASE + listener + f"ssl.truststore.location={files.authority.certificate_path}\n"
        )
        assert await run_check(path) == 0
        assert capsys.readouterr().out == "ready\n"
        other = CertificateAuthority(tmp_path / "other", "other CA")
        environment = {"KRAFT_HEALTHCHECK_CAFILE": str(other.certificate_path)}
        assert await run_check(path, environment) == 1
        assert "CERTIFICATE_VERIFY_FAILED" in capsys.readouterr().out
    finally:
        await runner.cleanup()
