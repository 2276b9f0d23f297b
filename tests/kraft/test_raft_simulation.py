"""Seeded whole-quorum simulations of the KRaft state machine, checked after every step."""

from __future__ import annotations

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
    observer = simulation.nodes[100].raft
    assert observer is not None
    # The observer replicates too (it never counts towards the high watermark).
    simulation.run(400)
    assert observer.log_end_offset > 0, f"seed={seed}: observer never replicated"


def test_simulation_is_deterministic() -> None:
    first = Simulation(seed=7, voters=3)
    second = Simulation(seed=7, voters=3)
    first.run(1500)
    second.run(1500)
    assert first.committed == second.committed
    assert first.leader_of_epoch == second.leader_of_epoch
    assert first.committed, "the run should have committed something"
