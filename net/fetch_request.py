"""A FetchRequest v12 encoder specialised for speed, producing kio's exact bytes.

v12 is the version replica fetchers send, one request per round trip of every partition they
follow: kio's generic writer (a Python call per field) cost about 17 µs for a request of one
partition, a large share of a follower's CPU per replicated message. This encoder packs each
partition's fixed fields with one `struct` call; tests check it byte for byte against kio.
"""

import struct
from typing import Any

from net.compact_forms import append_length, append_string, append_uvarint

_HEAD = struct.Struct(">iiiibii")  # replica, max wait, min/max bytes, isolation, session, epoch
_PARTITION = struct.Struct(">iiqiqi")  # index, leader epoch, offset, last epoch, log start, max
_INT32 = struct.Struct(">i")
_CLUSTER_ID_TAG = 0
VERSION = 12


def encode_fetch_request(request: Any) -> bytes:
    """The body of a kio FetchRequest v12."""
    if request.__version__ != VERSION:
        raise ValueError(f"FetchRequest v{request.__version__} is not this encoder's (v12)")
    out = bytearray(
        _HEAD.pack(
            request.replica_id,
            round(request.max_wait.total_seconds() * 1000),
            request.min_bytes,
            request.max_bytes,
            request.isolation_level,
            request.session_id,
            request.session_epoch,
        )
    )
    append_length(out, len(request.topics), True)
    for topic in request.topics:
        append_string(out, topic.topic, True)
        append_length(out, len(topic.partitions), True)
        for partition in topic.partitions:
            out += _PARTITION.pack(
                partition.partition,
                partition.current_leader_epoch,
                partition.fetch_offset,
                partition.last_fetched_epoch,
                partition.log_start_offset,
                partition.partition_max_bytes,
            )
            out.append(0)  # no tagged fields
        out.append(0)
    append_length(out, len(request.forgotten_topics_data), True)
    for forgotten in request.forgotten_topics_data:
        append_string(out, forgotten.topic, True)
        append_length(out, len(forgotten.partitions), True)
        for index in forgotten.partitions:
            out += _INT32.pack(index)
        out.append(0)
    append_string(out, request.rack_id, True)
    if request.cluster_id is None:
        out.append(0)
    else:
        tagged = bytearray()
        append_string(tagged, request.cluster_id, True)
        out.append(1)  # one tagged field
        append_uvarint(out, _CLUSTER_ID_TAG)
        append_uvarint(out, len(tagged))
        out += tagged
    return bytes(out)
