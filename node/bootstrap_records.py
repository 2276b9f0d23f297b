"""The bootstrap records `kraft format` leaves in the metadata log directory
(`bootstrap.records`, as Kafka's `kafka-storage format` leaves `bootstrap.checkpoint`): the
SCRAM credentials (`--add-scram`) a new cluster starts with. A voter that becomes the active
controller of a cluster whose metadata holds no SCRAM credential writes them into the metadata
log, as it writes `bootstrap.scram.credentials`. The file keeps the credential records (salt,
iterations, stored and server keys), never a password.

Format: the line `kraft-bootstrap-records v1`, then each record framed as a metadata-log entry
(`controller.records.encode_record`) behind its 4-byte big-endian length.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

from controller.records import (
    RecordDecodeError,
    UserScramCredentialRecord,
    decode_record,
    encode_record,
)
from node.properties import ConfigError
from storage.atomic_file import write_atomically

BOOTSTRAP_RECORDS = "bootstrap.records"
_MAGIC = b"kraft-bootstrap-records v1\n"
_LENGTH = struct.Struct(">I")


def write_bootstrap_records(directory: Path, records: Sequence[UserScramCredentialRecord]) -> Path:
    """Writes `records` (replacing any written before) into `directory`; the file's path."""
    out = bytearray(_MAGIC)
    for record in records:
        encoded = encode_record(record)
        out += _LENGTH.pack(len(encoded)) + encoded
    path = directory / BOOTSTRAP_RECORDS
    write_atomically(path, bytes(out))
    return path


def read_bootstrap_records(directory: Path) -> tuple[UserScramCredentialRecord, ...]:
    """The records `kraft format` left in `directory` (none without the file); ConfigError
    naming the file when it is not one `write_bootstrap_records` wrote."""
    path = directory / BOOTSTRAP_RECORDS
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ()
    except OSError as error:
        raise ConfigError(f"{path} is unreadable: {error}") from None
    if not data.startswith(_MAGIC):
        raise ConfigError(f"{path} is not a bootstrap records file")
    records = []
    position = len(_MAGIC)
    try:
        while position < len(data):
            (length,) = _LENGTH.unpack_from(data, position)
            position += _LENGTH.size
            if position + length > len(data):
                raise ConfigError(f"{path} is truncated")
            record = decode_record(data[position : position + length])
            position += length
            if not isinstance(record, UserScramCredentialRecord):
                raise ConfigError(f"{path} holds a {type(record).__name__}, not a credential")
            records.append(record)
    except (struct.error, RecordDecodeError) as error:
        raise ConfigError(f"{path} is malformed: {error}") from None
    return tuple(records)
