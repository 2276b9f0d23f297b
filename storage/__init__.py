"""A partition's log on disk.

Owns segments with their offset and time indexes, appends of RecordBatch v2 bytes with offset
assignment, zero-copy reads, the leader-epoch cache and its checkpoint, the high-watermark /
recovery-point / log-start checkpoints, flush policies, recovery after an unclean shutdown,
retention, compaction (the cleaner and its checkpoint), the node's clean-shutdown marker, and the
durable-length journal that lets tests simulate a power cut honestly. Imports the batch header
view from `net`, and the record codec for the cleaner, which rewrites records.
"""
