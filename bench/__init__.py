"""Benchmarks that print JSON lines: storage, record codec, protocol, quorum, controller,
produce/consume through real nodes, consumer groups and the Spark connector. Each is run as
`python -m bench.<name>` and describes its measurements and targets in its docstring.
"""
