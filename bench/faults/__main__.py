"""Long fault schedules: seeded runs of the fault harness, one JSON line per seed.

    python -m bench.faults [--seconds 60] [--seeds 5] [--seed K] [--first 1] [--heal-bound 90]
                           [--workdir DIR] [--keep]

Each seed starts a fresh 3-node cluster on its own test hosts (network namespaces, root only),
runs the seed's schedule for `--seconds` under an idempotent producer, a plain producer and a
consumer group, heals, reads everything back and checks it (see bench/faults/checker.py). A
seed's line holds its schedule, what was applied when, pass/fail, the counts, the heal time and
the failures; a failing seed also prints its report to stderr with the one command that runs it
again. `--seed K` runs that seed only; otherwise seeds `--first` .. `--first + --seeds - 1`.
`--schedule '0.0 power-cut 1, 4.0 calm'` runs a schedule of one's own (to narrow a failure down).
Exit status 1 if any seed failed. A passing seed's files are removed unless `--keep`.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from bench.faults.network import require_tools
from bench.faults.runner import run_seed


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # SystemExit unwinds through the run's teardown, which stops the clients and nodes and
    # removes the namespaces, bridge, route and mounts (the default SIGTERM skips it).
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0, help="schedule length per seed")
    parser.add_argument("--seeds", type=int, default=5, help="how many seeds to run")
    parser.add_argument("--first", type=int, default=1, help="the first seed")
    parser.add_argument("--seed", type=int, default=None, help="run this one seed only")
    parser.add_argument("--heal-bound", type=float, default=90.0, help="seconds to heal")
    parser.add_argument("--workdir", type=Path, default=None, help="where runs keep files")
    parser.add_argument("--keep", action="store_true", help="keep a passing seed's files")
    parser.add_argument(
        "--schedule",
        default=None,
        help="run this schedule instead of the seed's, e.g. '0.0 power-cut 1, 4.0 calm'",
    )
    args = parser.parse_args(argv)
    missing = require_tools()
    if missing is not None:
        print(f"bench.faults: {missing}", file=sys.stderr)
        return 2
    seeds = [args.seed] if args.seed is not None else range(args.first, args.first + args.seeds)
    root = args.workdir or Path(tempfile.mkdtemp(prefix="kraft-faults-"))
    failed = 0
    for seed in seeds:
        workdir = root / f"seed-{seed}"
        if workdir.exists():
            shutil.rmtree(workdir)
        result = run_seed(
            seed, args.seconds, workdir, heal_bound=args.heal_bound, schedule=args.schedule
        )
        print(result.json_line(), flush=True)
        if result.passed:
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
        else:
            failed += 1
            print(result.report(), file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
