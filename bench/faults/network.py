"""Test hosts for the fault tests: one network namespace per node on a private bridge, iptables
faults inside those namespaces, and a small filesystem of the test's own per node.

Layout of one run (N is claimed per run so parallel runs never share a subnet or a name):

    root namespace: bridge kfbN, 10.77.N.254/24 (the clients live here), and
                    `blackhole 10.77.N.0/24 metric 4242`, so once the bridge is gone no packet
                    for the test subnet can follow the default route off the machine
    namespace kfN-i: eth0 = 10.77.N.i/24 (node i), its veth peer kfN-vi on the bridge

A fault is a set of iptables DROP rules inside the namespaces (each namespace's tables are ours
alone, so healing flushes them). Everything is removed by `close`, also after a failure:
namespaces (which takes their veths and rules along), the bridge, the route, the mounts.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

SUBNET_PREFIX = "10.77"
GATEWAY = 254
BLACKHOLE_METRIC = "4242"


def _run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, check=check, capture_output=True, text=True, timeout=30)


def require_tools() -> str | None:
    """Why the fault tests cannot run here (None when they can)."""
    if os.geteuid() != 0:
        return "the fault tests need root (network namespaces, iptables, mounts)"
    for tool in ("ip", "iptables", "mount", "umount"):
        if _run("sh", "-c", f"command -v {tool}", check=False).returncode != 0:
            return f"the fault tests need `{tool}` on PATH"
    return None


@dataclass
class TestNetwork:
    """The namespaces, bridge and route of one run; `open` claims a free subnet."""

    index: int
    hosts: dict[int, str] = field(default_factory=dict)
    mounts: list[Path] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"kfb{self.index}"

    @property
    def subnet(self) -> str:
        return f"{SUBNET_PREFIX}.{self.index}.0/24"

    @property
    def gateway(self) -> str:
        return f"{SUBNET_PREFIX}.{self.index}.{GATEWAY}"

    def namespace(self, node_id: int) -> str:
        return f"kf{self.index}-{node_id}"

    def exec_prefix(self, node_id: int) -> list[str]:
        """Put before a command to run it on node `node_id`'s test host."""
        return ["ip", "netns", "exec", self.namespace(node_id)]

    @classmethod
    def open(cls, node_ids: list[int]) -> TestNetwork:
        """Claim a subnet (creating the bridge is the claim: the kernel refuses a second link
        of the same name, so two runs cannot both get one) and build a host per node."""
        candidates = list(range(1, 250))
        random.shuffle(candidates)
        for index in candidates:
            if _run("ip", "link", "add", f"kfb{index}", "type", "bridge", check=False).returncode:
                continue
            network = cls(index)
            try:
                network._build(node_ids)
            except BaseException:
                network.close()
                raise
            return network
        raise RuntimeError("no free test subnet 10.77.N.0/24 (every bridge name kfbN taken)")

    def _build(self, node_ids: list[int]) -> None:
        _run("ip", "route", "replace", "blackhole", self.subnet, "metric", BLACKHOLE_METRIC)
        _run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        for node_id in node_ids:
            namespace = self.namespace(node_id)
            veth = f"kf{self.index}-v{node_id}"
            address = f"{SUBNET_PREFIX}.{self.index}.{node_id}"
            _run("ip", "netns", "add", namespace)
            peer = ("peer", "name", "eth0", "netns", namespace)
            _run("ip", "link", "add", veth, "type", "veth", *peer)
            _run("ip", "link", "set", veth, "master", self.bridge, "up")
            _run("ip", "-n", namespace, "addr", "add", f"{address}/24", "dev", "eth0")
            _run("ip", "-n", namespace, "link", "set", "eth0", "up")
            _run("ip", "-n", namespace, "link", "set", "lo", "up")
            self.hosts[node_id] = address

    # -- faults ---------------------------------------------------------------------------------

    def _iptables(self, node_id: int, *rule: str) -> None:
        _run(*self.exec_prefix(node_id), "iptables", "-w", *rule)

    def isolate(self, node_id: int) -> None:
        """Drop everything node `node_id` sends or receives on its link: peers and clients."""
        self._iptables(node_id, "-A", "INPUT", "-i", "eth0", "-j", "DROP")
        self._iptables(node_id, "-A", "OUTPUT", "-o", "eth0", "-j", "DROP")

    def cut(self, first: int, second: int) -> None:
        """Drop traffic between two test hosts only (both directions, on both hosts)."""
        for here, there in ((first, second), (second, first)):
            self._iptables(here, "-A", "INPUT", "-s", self.hosts[there], "-j", "DROP")
            self._iptables(here, "-A", "OUTPUT", "-d", self.hosts[there], "-j", "DROP")

    def heal(self) -> None:
        """Remove every rule on every host."""
        for node_id in self.hosts:
            self._iptables(node_id, "-F", "INPUT")
            self._iptables(node_id, "-F", "OUTPUT")

    def rules(self) -> dict[int, list[str]]:
        """The rules in force per host (for the report)."""
        return {
            node_id: [
                line
                for line in _run(*self.exec_prefix(node_id), "iptables", "-S").stdout.splitlines()
                if line.startswith("-A")
            ]
            for node_id in self.hosts
        }

    # -- disks ----------------------------------------------------------------------------------

    def mount_tmpfs(self, path: Path, size_mib: int) -> None:
        """A filesystem of its own at `path`, `size_mib` MiB, so one node's disk can fill up."""
        path.mkdir(parents=True, exist_ok=True)
        _run("mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", "tmpfs", str(path))
        self.mounts.append(path)

    # -- teardown -------------------------------------------------------------------------------

    def close(self) -> None:
        """Remove everything this run made; every step is tried even if one fails. The caller
        has stopped every process that used the namespaces, mounts or subnet first. What each
        mounted filesystem held is copied beside it first (`<path>-kept`), so a failing run's
        logs can be read after the run."""
        for path in reversed(self.mounts):
            with contextlib.suppress(OSError):
                shutil.copytree(path, path.with_name(path.name + "-kept"), dirs_exist_ok=True)
            # Lazy unmount: a process we could not reap must not keep the mount forever.
            _run("umount", "-l", str(path), check=False)
        self.mounts.clear()
        for node_id in list(self.hosts):
            _run("ip", "netns", "del", self.namespace(node_id), check=False)
        self.hosts.clear()
        _run("ip", "link", "del", self.bridge, check=False)
        route = ("blackhole", self.subnet, "metric", BLACKHOLE_METRIC)
        _run("ip", "route", "del", *route, check=False)


def fill_disk(directory: Path) -> Path:
    """Fill the filesystem holding `directory` to the last byte with a file of ours; returns it.
    (Unbuffered writes: a buffered file would fail again when closed.)"""
    filler = directory / "faults-filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (1 << 20, 4096, 1):
            block = b"\0" * size
            with contextlib.suppress(OSError):
                while os.write(fd, block) == size:
                    pass
    finally:
        os.close(fd)
    return filler
