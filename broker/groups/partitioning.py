"""Which `__consumer_offsets` partition holds a group, as Kafka computes it.

Kafka's rule is `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`: Java's
String.hashCode over the id's UTF-16 code units, in 32-bit arithmetic, and a `Utils.abs` that
maps Integer.MIN_VALUE to 0. Following it exactly keeps every group on the partition a Kafka
cluster would put it on, so tools that derive coordinators themselves agree with this broker.
"""

from __future__ import annotations

import functools

_INT32_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode()` of `text`: a signed 32-bit int."""
    units = text.encode("utf-16-be")
    value = 0
    for index in range(0, len(units), 2):
        value = (31 * value + (units[index] << 8 | units[index + 1])) & 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


# Asked on every group request; a broker sees the same few thousand groups over and over.
@functools.lru_cache(maxsize=16_384)
def offsets_partition_for(group_id: str, partitions: int) -> int:
    """The `__consumer_offsets` partition of `group_id` among `partitions`."""
    hash_code = java_string_hash(group_id)
    return (0 if hash_code == _INT32_MIN else abs(hash_code)) % partitions
