"""The single `kraft` binary.

Owns the command line, and will own configuration, the process lifecycle (startup, controlled
shutdown, signals) and logging setup, wiring every other package together.
"""
