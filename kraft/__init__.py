"""Raft consensus for the cluster metadata log (KIP-595 style, pull-based).

Owns the pure, deterministic Raft state machine (`kraft.raft.RaftNode`: pre-vote, votes,
BeginQuorumEpoch/EndQuorumEpoch, fetch with diverging-epoch truncation, high watermark,
check-quorum), the messages it exchanges (`kraft.messages`) and the quorum-state file format
(`kraft.quorum_state`). Still to come: the asyncio driver that persists, fsyncs, sends and ticks
around it, and snapshots (FetchSnapshot).
"""
