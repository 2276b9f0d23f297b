"""Which of a log's oldest segments go: retention by time (`retention.ms`) and size
(`retention.bytes`) for `cleanup.policy=delete`, and the segments wholly below a log start
offset that DeleteRecords (or a checkpoint read at open) moved up.

These rules only count segments; the Log deletes them (`Log.enforce_retention`,
`Log.delete_records`) and moves its log start offset past them.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from storage.segment import Segment

if TYPE_CHECKING:
    # Only a type here: storage.log imports this module.
    from storage.log import LogConfig


def segments_past_retention(
    segments: Sequence[Segment], *, high_watermark: int, config: LogConfig, now_ms: int
) -> int:
    """How many of the oldest `segments` are beyond `retention.ms` or `retention.bytes`, when
    the cleanup policy holds "delete". Never the active (last) segment nor one holding data at
    or above the high watermark."""
    if "delete" not in config.cleanup_policy:
        return 0
    retention_ms = config.retention_ms
    retention_bytes = config.retention_bytes
    excess = sum(s.size for s in segments) - retention_bytes if retention_bytes is not None else 0
    count = 0
    while count + 1 < len(segments):
        oldest, following = segments[count], segments[count + 1]
        if following.base_offset > high_watermark:
            break
        expired = retention_ms is not None and _segment_timestamp(oldest) < now_ms - retention_ms
        oversized = retention_bytes is not None and excess - oldest.size >= 0
        if not (expired or oversized):
            break
        excess -= oldest.size
        count += 1
    return count


def segments_below(base_offsets: Sequence[int], log_start_offset: int) -> int:
    """How many of the oldest segments lie wholly below `log_start_offset`: the segment holding
    it stays, as does the active one."""
    return bisect.bisect_right(base_offsets, log_start_offset) - 1


def _segment_timestamp(segment: Segment) -> int:
    """The time a segment's data is judged by for retention: its max timestamp, or the file's
    modification time when no batch carried a timestamp."""
    if segment.max_timestamp >= 0:
        return segment.max_timestamp
    return os.stat(segment.log_path).st_mtime_ns // 1_000_000
