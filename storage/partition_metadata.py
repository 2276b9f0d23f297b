"""A partition directory's `partition.metadata` file: the id of the topic its log belongs to.

The format is Kafka's (`PartitionMetadataFile`), two text lines:

    version: 0
    topic_id: <the topic id as Kafka prints a Uuid: URL-safe base64 of its 16 bytes, unpadded>

A topic deleted and created again under the same name gets a new id, so a log whose file names
another id than the metadata's topic of that name holds the records of a topic that no longer
exists, and must never be served.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from uuid import UUID

from storage.atomic_file import write_atomically, write_new_unsynced

PARTITION_METADATA_FILE = "partition.metadata"
_VERSION = 0
# Kafka splits each line at a colon followed by white space.
_FIELD = re.compile(r":\s+")
_ENCODED_UUID_LENGTH = 22


class PartitionMetadataError(Exception):
    """A `partition.metadata` file that is not in the format above."""


def encode_topic_id(topic_id: UUID) -> str:
    """`topic_id` as Kafka's `Uuid.toString` prints it (22 characters)."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")


def decode_topic_id(text: str) -> UUID:
    """The topic id Kafka's `Uuid.toString` printed as `text`; ValueError if it is none."""
    if len(text) != _ENCODED_UUID_LENGTH:
        raise ValueError(f"a topic id has {_ENCODED_UUID_LENGTH} characters, not {len(text)}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"not URL-safe base64: {text!r}") from error
    # The padding bits of the last character must be zero, or two spellings name one id.
    if encode_topic_id(UUID(bytes=raw)) != text:
        raise ValueError(f"not a canonical topic id: {text!r}")
    return UUID(bytes=raw)


def write_partition_metadata(
    directory: Path, topic_id: UUID, *, sync_directory: bool = True
) -> None:
    """Record `topic_id` in `directory`, atomically and durably: the file is fsynced, and
    so is its directory entry (unless not `sync_directory`: then it is durable from the next
    sync of `directory`, which is enough for a new partition directory, whose log syncs it
    before any of its records is durable)."""
    write_atomically(
        directory / PARTITION_METADATA_FILE, _content(topic_id), sync_directory=sync_directory
    )


def write_partition_metadata_unsynced(directory: Path, topic_id: UUID) -> Path:
    """Record `topic_id` in `directory`, a new log's directory just made, in place and with
    no fsync (as Kafka records it at creation and syncs it with the log's first flush): the
    caller syncs the returned file (`atomic_file.sync_replaced`) before any record of the
    log is durable. A crash before may leave the file missing, empty or cut short: read as
    no topic id yet (`read_partition_metadata`), as nothing of the log was durable."""
    path = directory / PARTITION_METADATA_FILE
    write_new_unsynced(path, _content(topic_id))
    return path


def _content(topic_id: UUID) -> bytes:
    if topic_id.int == 0:
        # Kafka's zero Uuid means "no id": a file holding it would be refused when read.
        raise ValueError("the zero topic id names no topic")
    return f"version: {_VERSION}\ntopic_id: {encode_topic_id(topic_id)}\n".encode("ascii")


def read_partition_metadata(directory: Path) -> UUID | None:
    """The topic id recorded in `directory`, or None when it has no `partition.metadata` (a
    log from before topic ids were recorded) or one a crash cut short while a new log's
    directory was made (`write_partition_metadata_unsynced`): empty, NUL bytes only, or a
    prefix of the file that ends before the topic id is whole. Raises PartitionMetadataError for a
    file that is not in Kafka's format, OSError if it cannot be read."""
    path = directory / PARTITION_METADATA_FILE
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        raise PartitionMetadataError(f"{path}: not ASCII text") from error
    if _cut_short(text):
        return None
    lines = text.splitlines()
    # The version line and the topic id line (Kafka ignores what follows them).
    if len(lines) < 2:
        raise PartitionMetadataError(f"{path}: expected a version and a topic_id line")
    version = _value(path, lines[0], "version")
    if version != str(_VERSION):
        raise PartitionMetadataError(f"{path}: unknown version {version!r}")
    try:
        topic_id = decode_topic_id(_value(path, lines[1], "topic_id"))
    except ValueError as error:
        raise PartitionMetadataError(f"{path}: {error}") from error
    if topic_id.int == 0:
        raise PartitionMetadataError(f"{path}: the zero topic id names no topic")
    return topic_id


def _cut_short(text: str) -> bool:
    """Whether `text` is what a crash leaves of a file being written: nothing (or the NUL
    bytes of a size extended before its data), or a prefix of the two lines that ends
    before the topic id is whole."""
    if not text.strip("\0"):
        return True
    shape = f"version: {_VERSION}\ntopic_id: "
    if len(text) <= len(shape):
        return shape.startswith(text)
    rest = text[len(shape) :]
    return text.startswith(shape) and len(rest) < _ENCODED_UUID_LENGTH and "\n" not in rest


def _value(path: Path, line: str, key: str) -> str:
    parts = _FIELD.split(line.strip(), maxsplit=1)
    if len(parts) != 2 or parts[0] != key:
        raise PartitionMetadataError(f"{path}: expected '{key}: <value>', found {line!r}")
    return parts[1]
