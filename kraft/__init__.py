"""Raft consensus for the cluster metadata log (KIP-595 style, pull-based).

Owns the pure, deterministic Raft state machine (`kraft.raft.RaftNode`: pre-vote, votes,
BeginQuorumEpoch/EndQuorumEpoch, fetch with diverging-epoch truncation, high watermark,
check-quorum), the messages it exchanges (`kraft.messages`) and their Kafka wire form
(`kraft.wire`, one table of the quorum RPCs), the quorum-state file (`kraft.quorum_state`),
snapshot files (`kraft.snapshot_file`), and the thin asyncio driver that persists, fsyncs,
sends and ticks around the state machine (`kraft.driver`). It knows no metadata record: what
the entries hold is the controller's.
"""
