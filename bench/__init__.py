"""Benchmarks that print JSON lines: storage, record codec, protocol, quorum, controller,
produce/consume through real nodes, consumer groups and the Spark connector. Each is run as
`python -m bench.<name>` and describes its measurements and targets in its docstring;
`python -m bench.faults` runs long seeded fault schedules.

It also holds the harness the benchmarks share with the tests: real `kraft serve` clusters on
127.0.0.1 (`cluster`), a broker's side of the controller APIs (`broker_stand_in`), raw group
requests (`group_requests`) and the fault harness (`faults`). Tests import it; it imports no
test module.
"""
