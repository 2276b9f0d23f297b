"""Real `kraft serve` processes on 127.0.0.1 for tests and benchmarks: start, query, kill,
restart.

Every process is started from its own properties file, tracked by pid, and killed (SIGKILL) by
`stop_all` if still running, so a failing test leaves nothing behind.

Clusters are combined nodes (`Cluster.combined`), or controller-only voters
(`Cluster.controllers`) to which `add_brokers` adds broker-only nodes. A node started after
`keep_durability_journal` records what each of its fsyncs made durable, and `power_cut` kills it
and cuts its files back to that, as a power failure that loses the page cache would.
"""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from storage.durability import power_cut

CLUSTER_ID = "integration"

# node.log_opening.DURABILITY_JOURNAL_ENV (not imported: it would load the whole node into every
# test that only starts processes).
DURABILITY_JOURNAL_ENV = "KRAFT_DURABILITY_JOURNAL"

T = TypeVar("T")


def _ephemeral_range() -> range:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    except (OSError, ValueError):
        return range(32768, 61000)
    return range(int(low), int(high) + 1)


# Ports are taken below the kernel's ephemeral range: a port from inside it, closed until a
# node binds it (or while a node restarts), can meanwhile become the source port of any
# outgoing connection, and the node then fails with "address already in use".
_EPHEMERAL = _ephemeral_range()
_CANDIDATES = [port for port in range(20000, 32768) if port not in _EPHEMERAL] or list(
    range(20000, 32768)
)
_handed_out: set[int] = set()


def free_ports(count: int) -> list[int]:
    """`count` ports nothing listens on now, outside the ephemeral range, and never handed out
    before in this process (a stopped node's port stays its own for a restart)."""
    ports: list[int] = []
    generator = random.Random(os.getpid() ^ time.monotonic_ns())
    for port in generator.sample(_CANDIDATES, len(_CANDIDATES)):
        if len(ports) == count:
            break
        if port in _handed_out:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        ports.append(port)
    if len(ports) < count:
        raise RuntimeError(f"no {count} free ports outside the ephemeral range")
    return ports


# The packages a node process imports.
NODE_PACKAGES = ("admin", "broker", "controller", "kraft", "net", "node", "storage")


def compile_node_packages() -> None:
    """Compile the packages a node imports, as `pip install .` does for a deployment: with an
    editable install and PYTHONDONTWRITEBYTECODE set (as on these machines), every node a
    benchmark starts would otherwise compile ~360 files, a tenth of its start-up."""
    project = Path(__file__).resolve().parent.parent
    for package in NODE_PACKAGES:
        compileall.compile_dir(project / package, quiet=1, workers=0)


def kraft_executable() -> str:
    return str(Path(sys.executable).parent / "kraft")


@dataclass
class Node:
    node_id: int
    config_path: Path
    data_dir: Path
    admin_port: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    # The client listener's port, for nodes with the broker role.
    broker_port: int | None = None
    # The address every listener of this node binds (the fault tests give each node its own
    # network namespace and address).
    host: str = "127.0.0.1"
    # Put before `kraft serve ...` (e.g. `ip netns exec NS`), and set in its environment.
    command_prefix: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    # The durability journal the node keeps from its next start (`Cluster.keep_durability_journal`).
    journal: Path | None = None
    # Set when the node's admin.listener is https://: the context that trusts its certificate.
    admin_tls: ssl.SSLContext | None = None
    # Sent with every admin request, e.g. `Authorization` when the node has an authorizer.
    admin_headers: dict[str, str] = field(default_factory=dict)

    def get(self, path: str, timeout: float = 1.0) -> Any:
        scheme = "http" if self.admin_tls is None else "https"
        url = f"{scheme}://{self.host}:{self.admin_port}{path}"
        request = urllib.request.Request(url, headers=self.admin_headers)
        with urllib.request.urlopen(request, timeout=timeout, context=self.admin_tls) as response:
            return json.loads(response.read())

    def log_events(self) -> list[dict[str, Any]]:
        """The structured events the node logged so far (its JSON lines), in order."""
        lines = self.log_path.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def quorum(self) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = self.get("/v1/quorum")
            return result
        except (OSError, urllib.error.URLError, ValueError):
            return None


@dataclass
class Cluster:
    root: Path
    nodes: dict[int, Node] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def controllers(cls, root: Path, count: int, **extra: str) -> Cluster:
        """`count` controller-only voters, configured but not started."""
        return cls._configured(root, count, combined=False, extra=extra)

    @classmethod
    def controllers_from(cls, root: Path, first_id: int, count: int, **extra: str) -> Cluster:
        """`count` controller-only voters with node ids from `first_id` on, configured but not
        started, leaving the ids below to broker-only nodes (`add_brokers`)."""
        return cls._configured(root, count, combined=False, extra=extra, first_id=first_id)

    @classmethod
    def combined(cls, root: Path, count: int, **extra: str) -> Cluster:
        """`count` nodes with both roles (broker and controller voter), not started."""
        return cls._configured(root, count, combined=True, extra=extra)

    @classmethod
    def combined_on(cls, root: Path, hosts: list[str], **extra: str) -> Cluster:
        """One combined node per address in `hosts` (node i listens on `hosts[i - 1]`, e.g. a
        test host of its own in a network namespace), not started."""
        return cls._configured(root, len(hosts), combined=True, extra=extra, hosts=hosts)

    @classmethod
    def _configured(
        cls,
        root: Path,
        count: int,
        *,
        combined: bool,
        extra: dict[str, str],
        hosts: list[str] | None = None,
        first_id: int = 1,
    ) -> Cluster:
        hosts = hosts or ["127.0.0.1"] * count
        assert len(hosts) == count
        controller_ports = free_ports(count)
        admin_ports = free_ports(count)
        broker_ports = free_ports(count) if combined else []
        voters = ",".join(
            f"{first_id + index}@{hosts[index]}:{port}"
            for index, port in enumerate(controller_ports)
        )
        root.mkdir(parents=True, exist_ok=True)
        cluster = cls(root, extra=extra)
        for index in range(count):
            node_id = first_id + index
            data_dir = root / f"node{node_id}"
            config = {
                "node.id": str(node_id),
                "cluster.id": CLUSTER_ID,
                "process.roles": "broker,controller" if combined else "controller",
                "controller.quorum.voters": voters,
                "controller.listener": f"{hosts[index]}:{controller_ports[index]}",
                "admin.listener": f"http://{hosts[index]}:{admin_ports[index]}",
                "log.dirs": str(data_dir),
            }
            if combined:
                config["listeners"] = f"PLAINTEXT://{hosts[index]}:{broker_ports[index]}"
            config.update(extra)
            config_path = root / f"node{node_id}.properties"
            config_path.write_text("".join(f"{key}={value}\n" for key, value in config.items()))
            cluster.nodes[node_id] = Node(
                node_id,
                config_path,
                data_dir,
                admin_ports[index],
                root / f"node{node_id}.log",
                host=hosts[index],
            )
            if combined:
                cluster.nodes[node_id].broker_port = broker_ports[index]
        return cluster

    def add_brokers(self, broker_ids: Iterable[int], **extra: str) -> None:
        """Broker-only nodes (`process.roles=broker`), one per id in `broker_ids`, that reach the
        controller quorum through this cluster's voters; configured with the cluster's settings
        and `extra` on top, not started."""
        voters = ",".join(f"{voter}@{host}:{port}" for voter, (host, port) in self.voters().items())
        ids = list(broker_ids)
        assert not set(ids) & set(self.nodes), f"node ids {ids} already taken"
        broker_ports = free_ports(len(ids))
        admin_ports = free_ports(len(ids))
        for node_id, broker_port, admin_port in zip(ids, broker_ports, admin_ports, strict=True):
            data_dir = self.root / f"node{node_id}"
            config = {
                "node.id": str(node_id),
                "cluster.id": CLUSTER_ID,
                "process.roles": "broker",
                "controller.quorum.voters": voters,
                "listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
                "admin.listener": f"http://127.0.0.1:{admin_port}",
                "log.dirs": str(data_dir),
                **self.extra,
                **extra,
            }
            config_path = self.root / f"node{node_id}.properties"
            config_path.write_text("".join(f"{key}={value}\n" for key, value in config.items()))
            self.nodes[node_id] = Node(
                node_id,
                config_path,
                data_dir,
                admin_port,
                self.root / f"node{node_id}.log",
                broker_port=broker_port,
            )

    def name_listeners(self, client: str, controller: str | None = None) -> None:
        """Rewrites the configured nodes' listeners in Kafka's named form: the client listener
        `client://host:port` and, with `controller`, the controller listener moved from
        `controller.listener` into `listeners` as `controller://host:port`. The names' security
        protocols come from the cluster's `listener.security.protocol.map`."""
        for node in self.nodes.values():
            lines = node.config_path.read_text().splitlines()
            kept = [line for line in lines if not line.startswith(("listeners=", "controller."))]
            listeners = [
                line.removeprefix("listeners=").replace("PLAINTEXT://", f"{client}://", 1)
                for line in lines
                if line.startswith("listeners=")
            ]
            for line in lines:
                if line.startswith("controller.listener=") and controller is not None:
                    listeners.append(f"{controller}://{line.removeprefix('controller.listener=')}")
                elif line.startswith("controller."):
                    kept.append(line)
            if listeners:
                kept.append("listeners=" + ",".join(listeners))
            node.config_path.write_text("\n".join(kept) + "\n")

    @property
    def broker_ids(self) -> list[int]:
        """The nodes with the broker role (a client listener)."""
        return [node_id for node_id, node in self.nodes.items() if node.broker_port is not None]

    def keep_durability_journal(self, node_id: int) -> Path:
        """From its next start, node `node_id` appends the durable length of every file it
        fsyncs to a journal (`KRAFT_DURABILITY_JOURNAL`), which `power_cut` replays."""
        node = self.nodes[node_id]
        node.journal = self.root / f"node{node_id}.journal"
        node.env = {**node.env, DURABILITY_JOURNAL_ENV: str(node.journal)}
        return node.journal

    def power_cut(self, node_id: int) -> None:
        """A lossy crash: SIGKILL the node (if it runs), then cut every file of its data
        directory back to the length its last fsync made durable and remove the files never
        synced, as a power failure that drops the page cache leaves them
        (`storage.durability.power_cut`). Needs `keep_durability_journal` before its start."""
        node = self.nodes[node_id]
        assert node.journal is not None, f"node {node_id} keeps no durability journal"
        self.kill(node_id)
        power_cut(node.journal, node.data_dir)

    @property
    def bootstrap(self) -> str:
        """The client listeners, as a Kafka client's bootstrap.servers."""
        return ",".join(
            f"{node.host}:{node.broker_port}" for node in self.nodes.values() if node.broker_port
        )

    def brokers_unfenced(self, asked: int | None = None) -> dict[int, Any] | None:
        """The brokers (by id, as `/v1/brokers` gives them) once every node is registered and
        unfenced, as node `asked` (default: the first running) sees them; else None."""
        running = self.running()
        if not running:
            return None
        try:
            listed = self.nodes[asked or running[0]].get("/v1/brokers")
        except (OSError, ValueError):
            return None
        known = {broker["id"]: broker for broker in listed}
        if sorted(known) != sorted(self.nodes) or any(b["fenced"] for b in known.values()):
            return None
        return known

    def ready(self, node_id: int) -> bool:
        """Node `node_id` answers ready: its own incarnation is registered and unfenced (after
        a restart, the image may still show the previous one unfenced for a session)."""
        try:
            return bool(self.nodes[node_id].get("/v1/health/ready")["status"] == "ok")
        except (OSError, ValueError):
            return False

    def voters(self) -> dict[int, tuple[str, int]]:
        """Voter id -> (host, port) of its controller listener."""
        first = next(iter(self.nodes.values()))
        for line in first.config_path.read_text().splitlines():
            key, _, value = line.partition("=")
            if key == "controller.quorum.voters":
                voters = {}
                for voter in value.split(","):
                    node_id, _, address = voter.partition("@")
                    host, _, port = address.rpartition(":")
                    voters[int(node_id)] = (host, int(port))
                return voters
        raise AssertionError("no controller.quorum.voters in the node configuration")

    def start(self, node_id: int) -> None:
        node = self.nodes[node_id]
        with node.log_path.open("ab") as output:
            node.process = subprocess.Popen(
                [
                    *node.command_prefix,
                    kraft_executable(),
                    "serve",
                    "--config",
                    str(node.config_path),
                ],
                stdout=output,
                stderr=subprocess.STDOUT,
                env={
                    key: value for key, value in os.environ.items() if not key.startswith("KRAFT_")
                }
                | node.env,
            )

    def start_all(self) -> None:
        for node_id in self.nodes:
            self.start(node_id)

    def kill(self, node_id: int) -> None:
        """SIGKILL, as a crash."""
        process = self.nodes[node_id].process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
        self.nodes[node_id].process = None

    def pause(self, node_id: int) -> None:
        """SIGSTOP: the process stays alive but does nothing (a stalled machine)."""
        process = self.nodes[node_id].process
        assert process is not None
        process.send_signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        process = self.nodes[node_id].process
        assert process is not None
        process.send_signal(signal.SIGCONT)

    def terminate(self, node_id: int) -> int:
        """SIGTERM and wait for the clean stop; returns the exit status."""
        process = self.nodes[node_id].process
        assert process is not None
        process.send_signal(signal.SIGTERM)
        status = process.wait(timeout=20)
        self.nodes[node_id].process = None
        return status

    @contextlib.contextmanager
    def started(self, timeout: float = 60.0) -> Iterator[Cluster]:
        """Every node started and every broker unfenced within `timeout` seconds; every
        process killed on exit (`stop_all`), however the block ends."""
        self.start_all()
        try:
            self.wait_for("brokers unfenced", self.brokers_unfenced, timeout)
            yield self
        finally:
            self.stop_all()

    def stop_all(self) -> None:
        for node_id in self.nodes:
            self.kill(node_id)

    def running(self) -> list[int]:
        return [
            node_id
            for node_id, node in self.nodes.items()
            if node.process is not None and node.process.poll() is None
        ]

    def wait_for(self, what: str, check: Callable[[], T | None], timeout: float = 20.0) -> T:
        """Poll `check()` until it returns a truthy value; fail with the node logs otherwise."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = check()
            if result:
                return result
            time.sleep(0.1)
        logs = "\n".join(
            f"--- node {node.node_id}\n" + node.log_path.read_text()[-3000:]
            for node in self.nodes.values()
            if node.log_path.exists()
        )
        raise AssertionError(f"timed out waiting for {what}\n{logs}")

    def agreed_leader(self, among: list[int] | None = None) -> tuple[int, int, int] | None:
        """(leader id, epoch, high watermark) once every running node names the same leader
        and the leader has committed something in its epoch."""
        views = [self.nodes[node_id].quorum() for node_id in (among or self.running())]
        if not views or any(view is None or view["leader_id"] < 0 for view in views):
            return None
        leaders = {(view["leader_id"], view["leader_epoch"]) for view in views if view}
        if len(leaders) != 1:
            return None
        leader_id, epoch = leaders.pop()
        leader_view = self.nodes[leader_id].quorum()
        if leader_view is None or leader_view["high_watermark"] < 1:
            return None
        return leader_id, epoch, leader_view["high_watermark"]
