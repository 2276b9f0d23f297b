"""The `kraft` command line.

- `kraft serve --config FILE [--override key=value ...]` runs one node until SIGTERM/SIGINT;
  a bad configuration or a foreign log directory exits with status 2 before any data is touched.
- `kraft format --config FILE [--override key=value ...] [--add-scram ENTRY ...]
  [--ignore-formatted]` formats the node's log directories as `kraft serve` does on first start,
  without starting it, and leaves the `--add-scram` SCRAM credentials (Kafka's
  `kafka-storage format` syntax) for the new cluster's first active controller to write.
- `kraft dev [--nodes 3] [--data-dir DIR] [--base-port 9092] [--secure]` runs a local cluster
  of combined nodes, one process each, and prints a JSON line with its addresses once it is
  ready (with `--secure`: TLS, SCRAM and ACLs on, and the super user's client settings).
- `kraft topics|brokers|quorum|partitions|elect|reassign|events ...` drive a cluster through a
  node's HTTP admin API (see `node.admin_cli`).
- `kraft dump-log PATH [--records]` prints the batches of a partition log directory (or of one
  segment file) without changing anything on disk.
"""

from __future__ import annotations

import argparse
import gc
import json
import mmap
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog
import uvloop

from controller.scram import ScramBootstrapCredential, parse_add_scram
from net.record_batch import RecordBatchError, validate_batch
from net.records import decode_batch
from node import admin_cli
from node.bootstrap_records import write_bootstrap_records
from node.config import ConfigError, NodeConfig, load_config
from node.log_opening import open_logs_in_background
from node.logging_setup import configure_logging
from node.meta_properties import LogDirectoryError, ensure_formatted, read_meta_properties
from storage.errors import StorageError

log = structlog.get_logger(__name__)

SEGMENT_SUFFIX = ".log"


def dump_segment(path: Path, *, records: bool) -> int:
    """Print one JSON line per batch of a segment file; returns 1 if it ends in a bad batch."""
    with path.open("rb") as segment:
        size = path.stat().st_size
        if size == 0:
            return 0
        with (
            mmap.mmap(segment.fileno(), 0, access=mmap.ACCESS_READ) as mapped,
            memoryview(mapped) as data,
        ):
            position = 0
            while position < size:
                try:
                    header = validate_batch(data, position)
                except RecordBatchError as error:
                    failure = {"file": str(path), "position": position, "error": str(error)}
                    print(json.dumps(failure))
                    return 1
                line: dict[str, object] = {
                    "file": path.name,
                    "position": position,
                    "base_offset": header.base_offset,
                    "last_offset": header.last_offset,
                    "record_count": header.record_count,
                    "size": header.size,
                    "partition_leader_epoch": header.partition_leader_epoch,
                    "compression": header.compression.name.lower(),
                    "max_timestamp": header.max_timestamp,
                    "producer_id": header.producer_id,
                    "crc": f"{header.crc:#010x}",
                }
                if records:
                    _, decoded = decode_batch(data, position)
                    line["records"] = [
                        {
                            "offset": record.offset,
                            "timestamp": record.timestamp,
                            "key": None if record.key is None else record.key.hex(),
                            "value_size": None if record.value is None else len(record.value),
                            "headers": [header.key for header in record.headers],
                        }
                        for record in decoded
                    ]
                print(json.dumps(line))
                position += header.size
    return 0


def dump_log(target: Path, *, records: bool) -> int:
    """Dump a segment file, or every segment of a partition directory in offset order."""
    if target.is_dir():
        segments = sorted(target.glob("*" + SEGMENT_SUFFIX))
    elif target.suffix == SEGMENT_SUFFIX:
        segments = [target]
    else:
        print(
            f"kraft dump-log: {target} is neither a partition directory nor a .log file",
            file=sys.stderr,
        )
        return 2
    status = 0
    for segment in segments:
        status = max(status, dump_segment(segment, records=records))
    return status


def serve_command(config_file: Path, overrides: Sequence[str]) -> int:
    """Validate everything that can be validated, then run the node."""
    # No garbage collection from here until the node froze its start-up heap (see
    # node.process.serve): the configuration, the node's imports and its start-up make objects
    # that live as long as the process, and collections among them free nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        config = load_config(config_file, overrides)
        configure_logging(config.node_id)
        # The logs open on a thread while the node is imported (see node.log_opening).
        opened_logs = open_logs_in_background(config)
        # Imported here: the node (most of the product) takes seconds to import, which the
        # operator commands sharing this entry point should not pay.
        from node.process import serve  # noqa: PLC0415

        uvloop.run(serve(config, collect_after_start=collecting, opened_logs=opened_logs))
    except ConfigError as error:
        print(f"kraft serve: {error}", file=sys.stderr)
        return 2
    except (StorageError, OSError) as error:
        # A disk or an address the node cannot use: said plainly, with the traceback logged.
        log.exception("node_failed", error=str(error))
        print(f"kraft serve: {error}", file=sys.stderr)
        return 1
    return 0


def format_command(
    config_file: Path, overrides: Sequence[str], add_scram: Sequence[str], ignore_formatted: bool
) -> int:
    """Formats the node's log directories and leaves the bootstrap credentials; exit status 2
    for a bad configuration or entry, 1 for a directory already formatted (unless ignored) or
    one that cannot be used."""
    try:
        config = load_config(config_file, overrides)
    except ConfigError as error:
        print(f"kraft format: {error}", file=sys.stderr)
        return 2
    try:
        credentials = [credential for entry in add_scram for credential in parse_add_scram(entry)]
    except ValueError as error:
        print(f"kraft format: --add-scram: {error}", file=sys.stderr)
        return 2
    try:
        return _format(config, credentials, ignore_formatted)
    except (LogDirectoryError, OSError) as error:
        print(f"kraft format: {error}", file=sys.stderr)
        return 1


def _format(
    config: NodeConfig, credentials: Sequence[ScramBootstrapCredential], ignore_formatted: bool
) -> int:
    formatted = [path for path in config.all_log_dirs if read_meta_properties(path) is not None]
    if formatted and not ignore_formatted:
        print(
            f"kraft format: {', '.join(map(str, formatted))} already formatted "
            "(--ignore-formatted to leave them as they are)",
            file=sys.stderr,
        )
        return 1
    metas = ensure_formatted(config.all_log_dirs, config.cluster_id, config.node_id)
    for meta, directory in zip(metas, config.all_log_dirs, strict=True):
        state = "already formatted" if directory in formatted else "formatted"
        print(f"{directory}: {state} (cluster {meta.cluster_id}, node {meta.node_id})")
    metadata_directory = config.metadata_log_directory
    if credentials and metadata_directory not in formatted:
        path = write_bootstrap_records(
            metadata_directory, [credential.record() for credential in credentials]
        )
        users = ", ".join(f"{c.name} ({c.mechanism.mechanism_name})" for c in credentials)
        print(f"{path}: bootstrap SCRAM credentials of {users}")
    elif credentials:
        print(
            f"kraft format: {metadata_directory} was formatted before: --add-scram ignored "
            "(add users to a running cluster with `kraft users add`)",
            file=sys.stderr,
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kraft", description="A Kafka-compatible log broker.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="run one node until SIGTERM or SIGINT")
    serve_parser.add_argument("--config", type=Path, required=True, help="a properties file")
    serve_parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a configuration key (repeatable; wins over the file and the environment)",
    )
    format_parser = commands.add_parser(
        "format", help="format the log directories of a new node without starting it"
    )
    format_parser.add_argument("--config", type=Path, required=True, help="a properties file")
    format_parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="as for serve"
    )
    format_parser.add_argument(
        "--add-scram",
        action="append",
        default=[],
        metavar="ENTRY",
        help="a SCRAM user of the new cluster, as kafka-storage: "
        "'SCRAM-SHA-256=[name=alice,password=alice-secret]' (iterations=, salt=, "
        "saltedpassword= too; repeatable)",
    )
    format_parser.add_argument(
        "--ignore-formatted",
        action="store_true",
        help="leave directories formatted before as they are instead of failing",
    )
    dev = commands.add_parser(
        "dev", help="run a local cluster of combined nodes until Ctrl-C (one process each)"
    )
    dev.add_argument("--nodes", type=int, default=3, help="how many nodes (default 3)")
    dev.add_argument(
        "--data-dir", type=Path, default=Path("data"), help="where nodes keep data and logs"
    )
    dev.add_argument(
        "--base-port",
        type=int,
        default=9092,
        help="node i listens on P+i (Kafka), P+100+i (controller), P+200+i (admin)",
    )
    dev.add_argument(
        "--secure",
        action="store_true",
        help="TLS, SCRAM-SHA-512 and ACLs on (keys and the super user's password in the data "
        "directory); the JSON line gains the super user's client settings",
    )
    admin_cli.add_admin_commands(commands)
    dump = commands.add_parser(
        "dump-log", help="print the record batches of a partition log (read-only)"
    )
    dump.add_argument("path", type=Path, help="a partition directory or a .log segment file")
    dump.add_argument("--records", action="store_true", help="decode the records of each batch")
    arguments = parser.parse_args(argv)
    if arguments.command == "serve":
        return serve_command(arguments.config, arguments.override)
    if arguments.command == "format":
        return format_command(
            arguments.config, arguments.override, arguments.add_scram, arguments.ignore_formatted
        )
    if arguments.command == "dev":
        # Imported here: its certificates (for --secure) import cryptography, which a node
        # without TLS never needs and `kraft serve` should not pay for at each start.
        from node import dev_cluster  # noqa: PLC0415

        return dev_cluster.run(
            arguments.nodes, arguments.data_dir, arguments.base_port, arguments.secure
        )
    if arguments.command in admin_cli.COMMANDS:
        return admin_cli.run_admin_command(arguments)
    if not arguments.path.exists():
        print(f"kraft dump-log: {arguments.path} does not exist", file=sys.stderr)
        return 2
    return dump_log(arguments.path, records=arguments.records)


if __name__ == "__main__":
    sys.exit(main())
