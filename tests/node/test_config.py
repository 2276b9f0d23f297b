"""Node configuration: properties file, KRAFT_* environment, --override, validation."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from net.sasl import SaslClientCredentials
from net.server import ConnectionLimits
from node.config import (
    ConfigError,
    Endpoint,
    ListenerAddress,
    NodeConfig,
    Role,
    load_config,
    parse_properties,
)

BASE = """\
# a combined node
node.id=1
cluster.id=AbCdEfGhIjKlMnOpQrStUv
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194
listeners=PLAINTEXT://127.0.0.1:9092
controller.listener=127.0.0.1:9192
admin.listener=http://127.0.0.1:9292
log.dirs=/var/lib/kraft/a, /var/lib/kraft/b
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "node.properties"
    path.write_text(text)
    return path


def test_a_properties_file_sets_every_kind_of_value(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path, BASE + "min.insync.replicas: 2\nlog.retention.bytes=-1\n"), environment={}
    )
    assert config.node_id == 1
    assert config.process_roles == [Role.BROKER, Role.CONTROLLER]
    assert [v.node_id for v in config.controller_quorum_voters] == [1, 2, 3]
    assert config.controller_quorum_voters[2].endpoint == Endpoint(host="127.0.0.1", port=9194)
    assert config.listeners == (
        ListenerAddress(name="PLAINTEXT", endpoint=Endpoint(host="127.0.0.1", port=9092)),
    )
    assert config.advertised_listener("PLAINTEXT") == Endpoint(host="127.0.0.1", port=9092)
    assert config.admin_listener == Endpoint(host="127.0.0.1", port=9292)
    assert config.log_dirs == [Path("/var/lib/kraft/a"), Path("/var/lib/kraft/b")]
    assert config.min_insync_replicas == 2
    assert config.log_retention_bytes is None
    assert config.log_config().segment_bytes == 1024**3


def test_environment_then_overrides_take_precedence(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "num.partitions=3\n")
    environment = {"KRAFT_NUM_PARTITIONS": "6", "KRAFT_LOG_SEGMENT_BYTES": "1048576", "HOME": "/"}
    config = load_config(path, [], environment)
    assert (config.num_partitions, config.log_segment_bytes) == (6, 1048576)
    config = load_config(path, ["num.partitions=9"], environment)
    assert config.num_partitions == 9


def test_metadata_snapshot_and_idle_keys_have_kafkas_names_and_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, BASE)
    config = load_config(path, [], {})
    assert config.metadata_log_max_record_bytes_between_snapshots == 20 * 1024 * 1024
    assert config.metadata_max_idle_interval_ms == 500
    overrides = ["metadata.log.max.record.bytes.between.snapshots=4096"]
    config = load_config(path, overrides, {"KRAFT_METADATA_MAX_IDLE_INTERVAL_MS": "0"})
    assert config.metadata_log_max_record_bytes_between_snapshots == 4096
    assert config.metadata_max_idle_interval_ms == 0
    with pytest.raises(ConfigError, match=r"metadata\.max\.idle\.interval\.ms"):
        load_config(path, ["metadata.max.idle.interval.ms=-1"], {})


def test_the_metadata_log_lives_in_the_first_log_dir_unless_metadata_log_dir_says(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, BASE)
    config = load_config(path, [], {})
    assert config.metadata_log_directory == Path("/var/lib/kraft/a")
    assert config.all_log_dirs == config.log_dirs
    config = load_config(path, ["metadata.log.dir=/var/lib/kraft/meta"], {})
    assert config.metadata_log_directory == Path("/var/lib/kraft/meta")
    assert config.all_log_dirs == [*config.log_dirs, Path("/var/lib/kraft/meta")]
    config = load_config(path, ["metadata.log.dir=/var/lib/kraft/b"], {})
    assert config.all_log_dirs == config.log_dirs


def test_a_whole_configuration_can_come_from_the_environment() -> None:
    environment = {
        "KRAFT_NODE_ID": "2",
        "KRAFT_CLUSTER_ID": "c1",
        "KRAFT_PROCESS_ROLES": "broker",
        "KRAFT_CONTROLLER_QUORUM_VOTERS": "1@ctl:9093",
        "KRAFT_LISTENERS": "PLAINTEXT://0.0.0.0:9092",
        "KRAFT_ADVERTISED_LISTENERS": "PLAINTEXT://broker-2:9092",
        "KRAFT_LOG_DIRS": "/data",
        "KRAFT_DURABILITY_JOURNAL": "/tmp/journal",
    }
    config = load_config(None, [], environment)
    assert config.advertised_listener("PLAINTEXT") == Endpoint(host="broker-2", port=9092)


def test_log_cleaner_and_maintenance_keys_reach_the_log_config(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, BASE), [], {})
    defaults = config.log_config()
    assert defaults.cleanup_policy == {"delete"}
    assert (defaults.delete_retention_ms, defaults.min_cleanable_dirty_ratio) == (86_400_000, 0.5)
    assert (config.log_cleaner_enable, config.log_cleaner_backoff_ms) == (True, 15_000)
    config = load_config(
        write(tmp_path, BASE),
        [
            "log.cleanup.policy=compact, delete",
            "log.cleaner.delete.retention.ms=1000",
            "log.cleaner.min.cleanable.ratio=0.25",
            "log.retention.check.interval.ms=500",
        ],
        {},
    )
    assert config.log_config().cleanup_policy == {"compact", "delete"}
    assert config.log_config().delete_retention_ms == 1000
    assert config.log_config().min_cleanable_dirty_ratio == 0.25
    assert config.log_retention_check_interval_ms == 500


def test_connection_limits_have_kafkas_names_and_defaults(tmp_path: Path) -> None:
    unlimited = load_config(write(tmp_path, BASE), environment={}).connection_limits()
    assert unlimited == ConnectionLimits(2**31 - 1, 2**31 - 1, {}, None)
    config = load_config(
        write(
            tmp_path,
            BASE
            + "max.connections=100\nmax.connections.per.ip=0\n"
            + "max.connections.per.ip.overrides=10.0.0.1:5, ::1:7\n"
            + "queued.max.request.bytes=1048576\n",
        ),
        environment={},
    )
    limits = config.connection_limits()
    assert limits == ConnectionLimits(100, 0, {"10.0.0.1": 5, "::1": 7}, 1048576)
    assert limits.per_ip("10.0.0.1") == 5
    assert limits.per_ip("10.0.0.2") == 0


def test_the_fetch_session_cache_size_has_kafkas_name_and_default(tmp_path: Path) -> None:
    default = load_config(write(tmp_path, BASE), environment={})
    assert default.max_incremental_fetch_session_cache_slots == 1000
    config = load_config(
        write(tmp_path, BASE + "max.incremental.fetch.session.cache.slots=0\n"), environment={}
    )
    assert config.max_incremental_fetch_session_cache_slots == 0


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ("node.id=one\n", "node.id"),
        ("log.segment.bytes=10\n", "log.segment.bytes"),
        ("unclean.recovery.strategy=sometimes\n", "unclean.recovery.strategy"),
        ("controller.quorum.voters=1@nowhere\n", "controller.quorum.voters"),
        ("controller.quorum.voters=1@a:1,1@b:2\n", "controller.quorum.voters"),
        ("listeners=SSL://127.0.0.1:9092\n", "listeners"),
        ("admin.listener=127.0.0.1:80\n", "admin.listener"),
        ("process.roles=broker,gateway\n", "process.roles"),
        ("unclean.leader.election.enable=maybe\n", "unclean.leader.election.enable"),
        ("log.retentoin.ms=1000\n", "log.retentoin.ms"),
        ("node.id=4\n", "not in controller.quorum.voters"),
        ("broker.heartbeat.interval.ms=10000\n", "broker.heartbeat.interval.ms"),
        ("log.cleanup.policy=shred\n", "log.cleanup.policy"),
        ("log.cleaner.min.cleanable.ratio=1.5\n", "log.cleaner.min.cleanable.ratio"),
        ("max.connections=-1\n", "max.connections"),
        ("max.connections.per.ip=many\n", "max.connections.per.ip"),
        ("max.connections.per.ip=0\n", "max.connections.per.ip"),
        ("max.connections.per.ip.overrides=broker-1:10\n", "max.connections.per.ip.overrides"),
        ("max.connections.per.ip.overrides=10.0.0.1\n", "max.connections.per.ip.overrides"),
        ("queued.max.request.bytes=lots\n", "queued.max.request.bytes"),
        ("replica.selector.class=com.example.Nearest\n", "replica.selector.class"),
        (
            "max.incremental.fetch.session.cache.slots=-1\n",
            "max.incremental.fetch.session.cache.slots",
        ),
    ],
)
def test_bad_values_and_unknown_keys_are_named(tmp_path: Path, extra: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_config(write(tmp_path, BASE + extra), environment={})


def test_required_keys_and_bad_sources_are_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"log\.dirs"):
        load_config(write(tmp_path, BASE.replace("log.dirs", "#")), environment={})
    with pytest.raises(ConfigError, match="KRAFT_LOG_DIRZ"):
        load_config(write(tmp_path, BASE), environment={"KRAFT_LOG_DIRZ": "/x"})
    with pytest.raises(ConfigError, match="expected key=value"):
        load_config(write(tmp_path, BASE), ["num.partitions"], environment={})
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.properties", environment={})


def test_properties_syntax() -> None:
    text = "a=1\n! comment\n  b : two words \nc = x\\\n    y\nd\te\n"
    assert parse_properties(text) == {"a": "1", "b": "two words", "c": "xy", "d": "e"}
    with pytest.raises(ConfigError, match=r"<properties>:1:"):
        parse_properties("=nokey\n")


def test_the_replica_selector_is_kafkas_rack_aware_one_or_none(tmp_path: Path) -> None:
    rack_aware = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
    assert load_config(write(tmp_path, BASE), environment={}).replica_selector_class is None
    empty = load_config(write(tmp_path, BASE + "replica.selector.class=\n"), environment={})
    assert empty.replica_selector_class is None
    config = load_config(
        write(tmp_path, BASE + f"replica.selector.class={rack_aware}\nbroker.rack=eu-1a\n"),
        environment={},
    )
    assert (config.replica_selector_class, config.broker_rack) == (rack_aware, "eu-1a")


def test_sasl_keys_are_parsed_and_checked() -> None:
    base = {
        "node.id": "1",
        "process.roles": "broker,controller",
        "controller.quorum.voters": "1@127.0.0.1:9093",
        "controller.listener": "127.0.0.1:9093",
        "listeners": "SASL_PLAINTEXT://127.0.0.1:9092",
        "log.dirs": "/tmp/x",
        "cluster.id": "c",
    }
    config = NodeConfig.model_validate(
        {
            **base,
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "bootstrap.scram.credentials": (
                "SCRAM-SHA-512=[name=admin,password=s3cret];"
                "SCRAM-SHA-256=[name=bob,password=x,iterations=8192]"
            ),
            "inter.broker.sasl.username": "admin",
            "inter.broker.sasl.password": "s3cret",
        }
    )
    assert [
        (c.mechanism.mechanism_name, c.name, c.iterations)
        for c in config.bootstrap_scram_credentials
    ] == [
        ("SCRAM-SHA-512", "admin", 4096),
        ("SCRAM-SHA-256", "bob", 8192),
    ]
    assert "s3cret" not in repr(config)
    assert config.inter_broker_sasl() == SaslClientCredentials("SCRAM-SHA-512", "admin", "s3cret")
    listener = config.listener_security("SASL_PLAINTEXT", lambda user, mechanism: None).sasl
    assert listener is not None and tuple(listener.enabled_mechanisms) == ("PLAIN", "SCRAM-SHA-512")
    entries = {entry.name: entry for entry in config.broker_config_entries()}
    assert entries["bootstrap.scram.credentials"].sensitive
    assert entries["inter.broker.sasl.password"].sensitive
    for bad in (
        {"sasl.enabled.mechanisms": "GSSAPI"},
        {"bootstrap.scram.credentials": "SCRAM-SHA-1=[name=a,password=b]"},
        {"bootstrap.scram.credentials": "SCRAM-SHA-512=[name=a]"},
        {"bootstrap.scram.credentials": "SCRAM-SHA-512=[name=a,password=b,iterations=10]"},
        {
            "controller.listener.names": "CONTROLLER",
            "listeners": "SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            "listener.security.protocol.map": (
                "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
            ),
            # Not among the listener's sasl.enabled.mechanisms.
            "sasl.mechanism.controller.protocol": "SCRAM-SHA-256",
        },
    ):
        with pytest.raises(ValidationError):
            NodeConfig.model_validate({**base, **bad})
