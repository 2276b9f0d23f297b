"""The single `kraft` binary.

Owns the command line, the configuration (Kafka key names, `KRAFT_*` environment, overrides)
and the formatting of log directories (`meta.properties`), and the container image's
healthcheck (`python -m node.healthcheck`). Will own the process lifecycle
(startup, controlled shutdown, signals) and logging setup, wiring every other package together.
"""
