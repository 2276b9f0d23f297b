"""A partition's log on disk.

Owns: the log (`log`: appends of RecordBatch v2 bytes with offset assignment, zero-copy reads,
truncation, flush policies, the offsets a replica reads), how a log is opened (`log_loader`:
loading its segments and recovery after an unclean shutdown), which old segments retention and
DeleteRecords remove (`log_retention`); segments (`segment`) with their offset and time indexes
(`index`); the leader-epoch cache and its checkpoint (`leader_epoch_cache`, in the format of
`checkpoint_file`); the node's logs across its log directories with the high-watermark /
recovery-point / log-start checkpoints and the clean-shutdown marker (`log_manager`), each log's
topic id (`partition_metadata`); compaction (`cleaner`, its checkpoint in `cleaner_checkpoint`,
and the crash-safe swap of cleaned segments in `cleaner_swap`); errors (`errors`); atomic small
files (`atomic_file`) and the durable-length journal that lets tests simulate a power cut
honestly (`durability`). Imports the batch header view from `net`, and the record codec for the
cleaner, which rewrites records.
"""
