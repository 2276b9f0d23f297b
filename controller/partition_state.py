"""What the cluster metadata says about one partition (KIP-966's fields included).

Only the controller changes it, by appending PartitionRecords / PartitionChangeRecords; every
node replays those into the same values. The fields, in the words of the reference designs:

- `replicas`: the assigned replicas (AR), the first being the preferred replica;
- `isr`: the in-sync replicas, leader included; only they (then the ELR) may lead;
- `elr`: eligible leader replicas, removed from the ISR while it was below MinISR, so still
  complete (async-storage-and-recovery.txt 5.2);
- `last_known_elr`: former ELR members that had an unclean shutdown: the recovery quorum for
  balanced unclean recovery (5.3);
- `leader`: the broker id of the leader, or NO_LEADER;
- `leader_epoch`: bumped by every leader change; replicas fence stale leaders with it;
- `partition_epoch`: bumped by every change; AlterPartition requests are fenced with it;
- `adding_replicas` / `removing_replicas`: an ongoing reassignment.
"""

from __future__ import annotations

from dataclasses import dataclass

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition's replication state, as of some offset of the metadata log."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0]

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER
