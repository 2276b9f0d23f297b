"""Raft consensus for the cluster metadata log (KIP-595 style, pull-based).

Will own the pure Raft state machine, its asyncio driver, the quorum-state file and snapshots.
Not built yet: see the controller-quorum issue.
"""
