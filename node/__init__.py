"""The single `kraft` binary.

Owns the command line (`cli`), the configuration (Kafka key names, `KRAFT_*` environment,
overrides: `config`, `properties`), the formatting of log directories (`meta_properties`), the
life of a `kraft serve` process wiring every other package together (`process`: startup,
controlled shutdown, signals), logging setup (`logging_setup`), the watch on the event loop's
lag (`loop_stalls`), the replicas' objects kept out of the garbage collector's walks
(`frozen_heap`), the local cluster of
`kraft dev` (`dev_cluster`), the operator commands over the admin API (`admin_cli`) and the
container image's healthcheck (`python -m node.healthcheck`).
"""
