"""`meta.properties`: which cluster and node a log directory belongs to.

A node formats its empty `log.dirs` on first start, and refuses to start on a directory that
belongs to another cluster or node, or that holds data but no `meta.properties` (its origin is
unknown). Every directory is checked before any is written, so a refusal touches nothing.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import structlog

from node.config import ConfigError, parse_properties
from storage.atomic_file import write_atomically

META_PROPERTIES = "meta.properties"
META_VERSION = 1

log = structlog.get_logger(__name__)


class LogDirectoryError(ConfigError):
    """A log directory this node must not use; the message names the directory and why."""


@dataclass(frozen=True, slots=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: str

    def render(self) -> bytes:
        lines = [
            "# Written by kraft on first start; identifies this log directory.",
            f"version={META_VERSION}",
            f"cluster.id={self.cluster_id}",
            f"node.id={self.node_id}",
            f"directory.id={self.directory_id}",
        ]
        return ("\n".join(lines) + "\n").encode()


def new_directory_id() -> str:
    """A random id in Kafka's form: a UUID as 22 characters of URL-safe base64."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def read_meta_properties(directory: Path) -> MetaProperties | None:
    path = directory / META_PROPERTIES
    try:
        values = parse_properties(path.read_text(encoding="utf-8"), str(path))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ConfigError) as error:
        raise LogDirectoryError(f"{path} is unreadable: {error}") from error
    try:
        if int(values["version"]) != META_VERSION:
            raise LogDirectoryError(f"{path}: unsupported version {values['version']}")
        return MetaProperties(values["cluster.id"], int(values["node.id"]), values["directory.id"])
    except (KeyError, ValueError) as error:
        raise LogDirectoryError(f"{path} is malformed: {error}") from error


def ensure_formatted(
    log_dirs: Iterable[Path], cluster_id: str, node_id: int
) -> list[MetaProperties]:
    """Check every directory belongs to (`cluster_id`, `node_id`), then format the empty ones.

    Raises LogDirectoryError, before writing anything, for a directory formatted for another
    cluster or node, a non-empty directory without `meta.properties`, or two directories
    sharing a directory id.
    """
    checked: list[tuple[Path, MetaProperties | None]] = []
    for directory in log_dirs:
        if directory.exists() and not directory.is_dir():
            raise LogDirectoryError(f"log directory {directory} is not a directory")
        found = read_meta_properties(directory) if directory.exists() else None
        if found is None:
            if directory.exists() and any(directory.iterdir()):
                raise LogDirectoryError(
                    f"log directory {directory} holds data but no {META_PROPERTIES}: "
                    "refusing to adopt it"
                )
        elif found.cluster_id != cluster_id:
            raise LogDirectoryError(
                f"log directory {directory} belongs to cluster {found.cluster_id!r}, "
                f"not to cluster.id {cluster_id!r}"
            )
        elif found.node_id != node_id:
            raise LogDirectoryError(
                f"log directory {directory} belongs to node {found.node_id}, "
                f"not to node.id {node_id}"
            )
        checked.append((directory, found))
    ids = [found.directory_id for _, found in checked if found is not None]
    if len(set(ids)) != len(ids):
        raise LogDirectoryError(f"log directories share a directory.id: {sorted(ids)}")
    result = []
    for directory, existing in checked:
        meta = existing or MetaProperties(cluster_id, node_id, new_directory_id())
        if existing is None:
            directory.mkdir(parents=True, exist_ok=True)
            write_atomically(directory / META_PROPERTIES, meta.render())
            log.info(
                "log_directory_formatted",
                directory=str(directory),
                cluster_id=cluster_id,
                node_id=node_id,
                directory_id=meta.directory_id,
            )
        result.append(meta)
    return result
