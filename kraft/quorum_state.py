"""The persisted quorum state: current epoch, the vote cast in it, and the leader if known.

Kafka keeps this in the `quorum-state` JSON file of the metadata log directory. This module is
the pure encode/decode; the driver writes the bytes atomically (temp file, fsync, rename).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

DATA_VERSION = 0


class QuorumStateError(ValueError):
    """The quorum-state bytes are not a valid quorum state."""


@dataclass(frozen=True, slots=True)
class QuorumState:
    """What a voter must remember across restarts to never vote twice in one epoch."""

    leader_epoch: int = 0
    voted_for: int | None = None
    leader_id: int | None = None

    def encode(self) -> bytes:
        """The JSON bytes of the quorum-state file (Kafka's field names)."""
        document = {
            "data_version": DATA_VERSION,
            "leaderEpoch": self.leader_epoch,
            "votedId": -1 if self.voted_for is None else self.voted_for,
            "leaderId": -1 if self.leader_id is None else self.leader_id,
        }
        return json.dumps(document, sort_keys=True).encode()

    @classmethod
    def decode(cls, raw: bytes) -> QuorumState:
        """Parse quorum-state file bytes; raises QuorumStateError if they are malformed."""
        try:
            document = json.loads(raw)
            version = document["data_version"]
            epoch = document["leaderEpoch"]
            voted = document["votedId"]
            leader = document["leaderId"]
        except (ValueError, KeyError, TypeError) as exc:
            raise QuorumStateError(f"malformed quorum state: {exc}") from exc
        if version != DATA_VERSION:
            raise QuorumStateError(f"unsupported quorum state data_version {version}")
        fields = (epoch, voted, leader)
        if not all(isinstance(value, int) and not isinstance(value, bool) for value in fields):
            raise QuorumStateError("quorum state fields must be integers")
        if epoch < 0:
            raise QuorumStateError(f"negative leader epoch {epoch}")
        return cls(
            leader_epoch=epoch,
            voted_for=None if voted < 0 else voted,
            leader_id=None if leader < 0 else leader,
        )
