"""The metadata state machine on top of `kraft`.

Will own metadata records, the metadata image, broker registration, heartbeats and fencing,
topic creation and placement, partition changes (ISR, ELR, LastKnownELR, elections),
reassignment, unclean recovery and producer-id blocks. Not built yet.
"""
