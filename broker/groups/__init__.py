"""Consumer groups: the group coordinator's state, kept in the `__consumer_offsets` topic.

Owns the classic group protocol (`membership`: JoinGroup, SyncGroup, Heartbeat, LeaveGroup as a
pure state machine per group), committed offsets (`offsets`), the topic's record format
(`records`), which of its partitions holds a group (`partitioning`), the pure state of one
partition's coordinator (`shard`), its asyncio driver (`coordinator`), and the group APIs on
the wire (`wire` translates, `apis` serves).
"""
