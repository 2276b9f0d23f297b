"""Consumer groups: the group coordinator's state, kept in the `__consumer_offsets` topic.

Owns the classic group protocol (`membership`: JoinGroup, SyncGroup, Heartbeat, LeaveGroup as a
pure state machine per group), committed offsets (`offsets`), the topic's record format
(`records`) and which of its partitions holds a group (`partitioning`).
"""
