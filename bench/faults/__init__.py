"""The fault harness: seeded schedules of faults (network cuts, power cuts, disk full) applied
to a 3-node cluster on test hosts of its own, real clients, and the checker that judges a run.
`python -m bench.faults` runs long seeds; `tests/faults` runs a few in CI.
"""
