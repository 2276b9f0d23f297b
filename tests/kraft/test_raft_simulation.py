"""Seeded whole-quorum simulations of the KRaft state machine, checked after every step."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kraft.sim import Simulation

SEEDS = range(50)
FAULT_STEPS = 4000
HEAL_BOUND_MS = 5_000


@pytest.mark.parametrize("voters", [3, 5])
@pytest.mark.parametrize("seed", SEEDS)
def test_quorum_survives_faults_and_recovers(seed: int, voters: int) -> None:
    simulation = Simulation(seed=seed, voters=voters, observers=1)
    simulation.run(FAULT_STEPS)
    simulation.heal()
    simulation.run_until_commit_after_heal(within_ms=HEAL_BOUND_MS)
    # Everyone, the observer included (it never counts towards the high watermark), ends with
    # the leader's log, whether by fetching entries or a snapshot.
    simulation.run_until_converged(within_ms=HEAL_BOUND_MS)
    assert simulation.snapshots_taken > 0, f"seed={seed}: no snapshot was taken"


@pytest.mark.parametrize("voters", [3, 5])
@pytest.mark.parametrize("seed", range(15))
def test_the_metadata_log_on_disk_follows_the_state_machine_through_faults(
    seed: int, voters: int, tmp_path: Path
) -> None:
    # The same schedules, with every Ready also applied to a real storage log and snapshot
    # store by the driver's own MetadataLog, checked against the state machine after each.
    simulation = Simulation(seed=seed, voters=voters, observers=1, storage_root=tmp_path)
    simulation.run(FAULT_STEPS)
    simulation.heal()
    simulation.run_until_commit_after_heal(within_ms=HEAL_BOUND_MS)
    simulation.run_until_converged(within_ms=HEAL_BOUND_MS)
    assert simulation.snapshots_taken > 0, f"seed={seed}: no snapshot was taken"


@pytest.mark.parametrize("seed", range(5))
def test_nodes_behind_the_log_start_catch_up_through_snapshot_chunks(seed: int) -> None:
    simulation = Simulation(seed=seed, voters=3, observers=1)
    simulation.faults_enabled = False
    simulation.run(300)
    # The observer loses its disk; a voter is down while the others commit and snapshot past
    # everything it has.
    simulation.crash(100, lose_disk=True)
    simulation.crash(3)
    simulation.run(3000)
    leader = simulation.leader()
    assert leader is not None and leader.log_start_offset > 0
    simulation.heal()
    simulation.run_until_converged(within_ms=HEAL_BOUND_MS)
    assert simulation.snapshot_loads[100] >= 1 and simulation.snapshot_loads[3] >= 1
    # The snapshots are larger than one FetchSnapshot chunk.
    assert simulation.snapshot_chunks > sum(simulation.snapshot_loads.values())


def test_simulation_is_deterministic() -> None:
    first = Simulation(seed=7, voters=3)
    second = Simulation(seed=7, voters=3)
    first.run(1500)
    second.run(1500)
    assert first.committed == second.committed
    assert first.leader_of_epoch == second.leader_of_epoch
    assert first.committed, "the run should have committed something"
