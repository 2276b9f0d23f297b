"""Errors a log raises, each carrying the Kafka error code a broker answers with."""

from __future__ import annotations

from net.record_batch import RecordError


class StorageError(Exception):
    """Base of the storage errors; `error_code` is the Kafka protocol error to report."""

    error_code = 56  # KAFKA_STORAGE_ERROR


class OffsetOutOfRangeError(StorageError):
    """The requested offset is below the log start offset or above the log end offset."""

    error_code = 1  # OFFSET_OUT_OF_RANGE


class RecordBatchTooLargeError(StorageError):
    """A batch is larger than `max.message.bytes` or than a whole segment may hold."""

    error_code = 10  # MESSAGE_TOO_LARGE


class SegmentOverflowError(RecordBatchTooLargeError):
    """An append larger than a whole segment (`segment.bytes`) may hold."""

    error_code = 18  # RECORD_LIST_TOO_LARGE


class InvalidTimestampError(StorageError):
    """A producer's CreateTime timestamp lies further in the past or future than the log's
    `message.timestamp.before.max.ms` / `message.timestamp.after.max.ms` allow;
    `record_errors` names the records at fault (KIP-467)."""

    error_code = 32  # INVALID_TIMESTAMP

    def __init__(self, message: str, record_errors: tuple[RecordError, ...] = ()) -> None:
        super().__init__(message)
        self.record_errors = record_errors


class UnexpectedAppendOffsetError(StorageError):
    """A replicated batch does not continue the log: its offsets are below the log end offset
    or not increasing."""

    error_code = 56


class StorageIOError(StorageError):
    """The disk refused an operation (ENOSPC, EIO, ...). The log was left consistent: what the
    failed call was writing is not part of it."""

    def __init__(self, message: str, errno: int | None) -> None:
        super().__init__(message)
        self.errno = errno


class LogOfflineError(StorageError):
    """An earlier disk error left the log in a state only a reopen (with recovery) can trust,
    for instance a failed fsync, whose outcome the kernel does not let us retry."""


class InconsistentTopicIdError(StorageError):
    """A log was asked for under another topic id than the one its directory records: it
    belongs to an earlier topic of the same name."""

    error_code = 103  # INCONSISTENT_TOPIC_ID
