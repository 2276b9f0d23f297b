"""The metadata state machine on top of `kraft`.

Owns the metadata records and their binary encoding (`records`), one partition's replication
state (`partition_state`), the pure partition change rules — ISR, ELR, LastKnownELR, leader
election, AlterPartition validation (`partition_change`) — replica placement (`placement`), and
the metadata image that every node replays from the metadata log and its snapshots (`image`).
Still to come: the active controller serving broker registration, heartbeats and fencing,
CreateTopics and friends, reassignment, unclean recovery and producer-id blocks.
"""
