"""The metadata state machine on top of `kraft`.

Owns the metadata records and their binary encoding (`records`), one partition's replication
state (`partition_state`), and the metadata image that every node replays from the metadata log
and its snapshots (`image`). Will also own broker registration, heartbeats and fencing, topic
creation and placement, partition changes (ISR, ELR, LastKnownELR, elections), reassignment,
unclean recovery and producer-id blocks.
"""
