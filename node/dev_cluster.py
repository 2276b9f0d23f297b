"""`kraft dev`: a local cluster of N combined broker+controller nodes, one process each.

Node i (0-based) gets node id i+1 and listens on `base_port + i` (Kafka), `base_port + 100 + i`
(controller) and `base_port + 200 + i` (admin HTTP); its data and its log are under
`data_dir/node-<id>` and `data_dir/node-<id>.log`, and its configuration is written to
`data_dir/node-<id>.properties`, so a second `kraft dev` on the same directory restarts the
same cluster. Once every node answers ready and every broker is unfenced, one JSON line
`{"bootstrap": ..., "admin": [...]}` is printed. SIGINT (Ctrl-C), SIGTERM or SIGHUP (a closed
terminal) stops every node with its own SIGTERM (a controlled shutdown each) and waits for them.
The nodes die with the `kraft dev` that started them even when it is killed outright (SIGKILL,
an IDE's stop button): on Linux each gets SIGTERM when it dies, so no orphan keeps the ports.
A port of the cluster already in use (most likely by the nodes of an earlier `kraft dev`) is
named, and nothing is started.

With `--secure` (node.dev_security), the cluster runs with TLS, SCRAM and ACLs on, its admin
APIs are https, and the JSON line gains `client`: the super user's librdkafka settings.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from node.certificates import write_private_file
from node.dev_security import DevSecurity

CLUSTER_ID = "kraft-dev"
# What stops `kraft dev` cleanly: Ctrl-C, a kill, a closed terminal.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# A node runs `kraft serve` through the console script's entry point (see node.entry).
_SERVE = (sys.executable, "-m", "node.entry", "serve")
# How long the nodes may take to be ready, and to stop, before the command gives up on them.
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 45.0


@dataclass(frozen=True, slots=True)
class DevNode:
    """One node of the local cluster: its id, ports and files."""

    node_id: int
    kafka_port: int
    controller_port: int
    admin_port: int
    data_dir: Path
    # `kraft dev --secure`: the admin API is https.
    secure: bool = False

    @property
    def config_path(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.properties"

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.log"

    @property
    def admin_url(self) -> str:
        scheme = "https" if self.secure else "http"
        return f"{scheme}://127.0.0.1:{self.admin_port}"


def plan(nodes: int, data_dir: Path, base_port: int, secure: bool = False) -> list[DevNode]:
    """The nodes of a cluster of `nodes`, as DESIGN's `kraft dev` lays them out."""
    if not 1 <= nodes <= 100:
        raise ValueError("--nodes must be between 1 and 100")
    if not 1 <= base_port <= 65535 - 200 - (nodes - 1):
        raise ValueError(f"--base-port {base_port} leaves no room for {nodes} nodes' ports")
    return [
        DevNode(
            node_id=index + 1,
            kafka_port=base_port + index,
            controller_port=base_port + 100 + index,
            admin_port=base_port + 200 + index,
            data_dir=data_dir / f"node-{index + 1}",
            secure=secure,
        )
        for index in range(nodes)
    ]


def node_properties(
    node: DevNode, cluster: list[DevNode], security: DevSecurity | None = None
) -> str:
    """The configuration file of `node`: combined roles, every node a voter, replication as
    high as the cluster allows (up to 3); with `security`, TLS, SCRAM and ACLs on."""
    voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in cluster)
    replication = min(3, len(cluster))
    settings: dict[str, object] = {
        "node.id": node.node_id,
        "cluster.id": CLUSTER_ID,
        "process.roles": "broker,controller",
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{node.kafka_port}",
        "controller.listener": f"127.0.0.1:{node.controller_port}",
        "admin.listener": node.admin_url,
        "log.dirs": node.data_dir,
        "default.replication.factor": replication,
        "offsets.topic.replication.factor": replication,
    }
    if security is not None:
        del settings["controller.listener"]
        settings |= security.node_settings(
            f"127.0.0.1:{node.kafka_port}", f"127.0.0.1:{node.controller_port}"
        )
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def ready_line(cluster: list[DevNode], security: DevSecurity | None = None) -> str:
    """The JSON line printed once the cluster is ready; a secure cluster's has `client`."""
    line: dict[str, object] = {
        "bootstrap": ",".join(f"127.0.0.1:{node.kafka_port}" for node in cluster),
        "admin": [node.admin_url for node in cluster],
    }
    if security is not None:
        line["client"] = security.client()
    return json.dumps(line)


def _get(url: str, context: ssl.SSLContext | None, headers: dict[str, str]) -> object:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=1.0, context=context) as response:
        return json.loads(response.read())


def _is_ready(
    cluster: list[DevNode], context: ssl.SSLContext | None, headers: dict[str, str]
) -> bool:
    try:
        for node in cluster:
            _get(f"{node.admin_url}/v1/health/ready", context, headers)
        # With the authorizer of a secure cluster, the brokers are the super user's to see.
        brokers = _get(f"{cluster[0].admin_url}/v1/brokers", context, headers)
    except (OSError, ValueError):  # not listening yet, or 503 (urllib's HTTPError is an OSError)
        return False
    assert isinstance(brokers, list)
    unfenced = {broker["id"] for broker in brokers if not broker["fenced"]}
    return unfenced == {node.node_id for node in cluster}


# prctl(2) option: the signal the calling process gets when its parent thread dies.
_PR_SET_PDEATHSIG = 1


def _dies_with(parent: int) -> Callable[[], None] | None:
    """What a node runs between fork and exec to be sent SIGTERM when `parent` dies (None off
    Linux). The signal follows the death of the thread that forked, so the nodes are started
    from the main thread, which lives as long as `kraft dev`. A parent already gone by then
    would send nothing: the node then stops at once."""
    if not sys.platform.startswith("linux"):
        return None

    def arm() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


def taken_port(cluster: list[DevNode]) -> tuple[int, str] | None:
    """The first port of the cluster something already listens on, and what it was for."""
    for node in cluster:
        for port, listener in (
            (node.kafka_port, "Kafka listener"),
            (node.controller_port, "controller listener"),
            (node.admin_port, "admin listener"),
        ):
            with socket.socket() as probe:
                # As the nodes bind: a port only left in TIME_WAIT by a stopped run is free.
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    return port, f"node {node.node_id}'s {listener}"
    return None


class _StopRequested(BaseException):
    """SIGINT, SIGTERM or SIGHUP reached `kraft dev` (a BaseException, as KeyboardInterrupt
    is)."""


def _raise_stop(signum: int, _frame: FrameType | None) -> None:
    raise _StopRequested(signal.Signals(signum).name)


def run(nodes: int, data_dir: Path, base_port: int, secure: bool = False) -> int:
    """Run the cluster until SIGINT or SIGTERM; the exit status of `kraft dev`."""
    try:
        cluster = plan(nodes, data_dir.resolve(), base_port, secure)
    except ValueError as error:
        print(f"kraft dev: {error}", file=sys.stderr)
        return 2
    taken = taken_port(cluster)
    if taken is not None:
        port, purpose = taken
        print(
            f"kraft dev: port {port} ({purpose}) is already in use, most likely by the nodes "
            f"of an earlier `kraft dev` still running; stop them, or choose other ports with "
            f"--base-port",
            file=sys.stderr,
        )
        return 1
    security = DevSecurity.prepare(data_dir.resolve()) if secure else None
    for node in cluster:
        node.data_dir.mkdir(parents=True, exist_ok=True)
        # A secure node's configuration holds the super user's password.
        write_private_file(node.config_path, node_properties(node, cluster, security))
    previous = {signum: signal.signal(signum, _raise_stop) for signum in _STOP_SIGNALS}
    processes: dict[int, subprocess.Popen[bytes]] = {}
    try:
        for node in cluster:
            with node.log_path.open("ab") as output:
                # A session of its own: Ctrl-C reaches `kraft dev` only, which stops each node
                # with one SIGTERM (a second would cut its controlled shutdown short).
                processes[node.node_id] = subprocess.Popen(
                    [*_SERVE, "--config", str(node.config_path)],
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    # `kraft dev` runs no other thread, which makes a preexec_fn safe.
                    preexec_fn=_dies_with(os.getpid()),  # noqa: PLW1509
                )
        deadline = time.monotonic() + READY_TIMEOUT_S
        context = security.admin_context() if security is not None else None
        headers = security.admin_headers() if security is not None else {}
        while not _is_ready(cluster, context, headers):
            exited = [n for n, p in processes.items() if p.poll() is not None]
            if exited or time.monotonic() > deadline:
                reason = f"node {exited[0]} exited" if exited else "timed out"
                print(
                    f"kraft dev: the cluster did not become ready ({reason}); "
                    f"see the logs in {data_dir}",
                    file=sys.stderr,
                )
                return 1
            time.sleep(0.2)
        print(ready_line(cluster, security), flush=True)
        while True:
            for node_id, process in list(processes.items()):
                if process.poll() is not None:
                    print(
                        f"kraft dev: node {node_id} exited with status {process.returncode}",
                        file=sys.stderr,
                    )
                    del processes[node_id]
            time.sleep(0.5)
    except _StopRequested:
        return 0
    finally:
        _stop_all(processes)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _stop_all(processes: dict[int, subprocess.Popen[bytes]]) -> None:
    """SIGTERM every node at once (they shut down together, the quorum still up), then wait;
    SIGKILL what has not stopped in time. Another Ctrl-C meanwhile sends a second SIGTERM,
    which makes the nodes skip the rest of their controlled shutdowns."""

    def terminate_all(_signum: int = 0, _frame: FrameType | None = None) -> None:
        for process in processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)

    for signum in _STOP_SIGNALS:
        signal.signal(signum, terminate_all)
    terminate_all()
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for node_id, process in processes.items():
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"kraft dev: node {node_id} did not stop in time; killed", file=sys.stderr)
            process.kill()
            process.wait()
