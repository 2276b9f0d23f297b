"""Short seeded fault schedules against a real 3-node cluster on its own test hosts (see
bench/faults/runner.py): a few seeds in CI; `python -m bench.faults` runs long ones. A failure
prints the seed's report: its schedule, what was applied when, the checker's findings and the
one command that runs it again."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.faults.network import require_tools
from bench.faults.runner import run_seed
from bench.faults.schedule import KINDS, generate

SECONDS = 18.0
# Between them these seeds' short schedules use every fault kind (checked below), so CI
# exercises each at least once.
CI_SEEDS = [1, 2, 5]

pytestmark = pytest.mark.skipif(require_tools() is not None, reason=str(require_tools()))


def test_ci_seeds_cover_every_fault_kind() -> None:
    used = {step.kind for seed in CI_SEEDS for step in generate(seed, SECONDS, [1, 2, 3])}
    assert used == set(KINDS)


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("seed", CI_SEEDS)
def test_short_schedule(seed: int, tmp_path: Path) -> None:
    result = run_seed(seed, SECONDS, tmp_path / f"seed-{seed}", heal_bound=60.0)
    print(result.report())
    if not result.passed:
        pytest.fail(result.report(), pytrace=False)
