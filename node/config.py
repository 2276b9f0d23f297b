"""The node's configuration: Kafka's key names, from a properties file, the environment and
`--override`, validated before anything touches a disk.

Sources, lowest precedence first:
1. a Java-properties file (`key=value` or `key: value`, `#` and `!` comments, `\\` continues a
   line);
2. environment variables `KRAFT_` + the key upper-cased with dots as underscores
   (`KRAFT_NODE_ID=1` sets `node.id`), which is how containers configure a node;
3. `--override key=value` on the command line.

An unknown key (in any source) or a bad value raises ConfigError naming the key.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import ssl
import typing
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from broker.configs import BrokerConfigEntry
from controller.acls import STANDARD_AUTHORIZER, AuthorizerSettings, parse_super_users
from controller.scram import ScramBootstrapCredential, parse_add_scram
from controller.topic_config import ConfigSource, ConfigType, UncleanRecoveryStrategy
from net.record_batch import TimestampType
from net.sasl import (
    DEFAULT_FAILED_AUTHENTICATION_DELAY_MS,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    SUPPORTED_MECHANISMS,
    CredentialLookup,
    SaslClientCredentials,
    SaslListenerConfig,
)
from net.server import ConnectionLimits, ListenerSecurity
from net.tls import (
    ClientAuth,
    Pem,
    TlsConfigError,
    TlsSettings,
    client_context,
    server_context,
)

# ConfigError and parse_properties live in node.properties (light to import); callers import
# them from here too.
from node.properties import ConfigError as ConfigError  # noqa: PLC0414
from node.properties import environment_key
from node.properties import parse_properties as parse_properties  # noqa: PLC0414
from storage.log import LogConfig

_DAY_MS = 24 * 3600 * 1000
_INT_MAX = 2**31 - 1  # Kafka's Integer.MAX_VALUE: no limit


class Role(StrEnum):
    BROKER = "broker"
    CONTROLLER = "controller"


class CleanupPolicy(StrEnum):
    """`log.cleanup.policy` items: Kafka's `cleanup.policy` values."""

    DELETE = "delete"
    COMPACT = "compact"


class SecurityProtocol(StrEnum):
    """Kafka's security protocols of a listener."""

    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def kafka_id(self) -> int:
        """Kafka's id of the protocol (SecurityProtocol.id, the order of the members here), as
        BrokerRegistration carries it."""
        return list(SecurityProtocol).index(self)

    @property
    def sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


class Endpoint(BaseModel):
    """A host and port to listen on or connect to."""

    model_config = ConfigDict(frozen=True)

    host: str
    port: int = Field(ge=0, le=65535)

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class Voter(BaseModel):
    """One voter of the controller quorum: `id@host:port`."""

    model_config = ConfigDict(frozen=True)

    node_id: int = Field(ge=0)
    endpoint: Endpoint


_HOST_PORT = re.compile(r"^(?P<host>\[[0-9a-fA-F:]+\]|[^:\s/@,]+):(?P<port>\d+)$")


def _endpoint(text: str, what: str) -> Endpoint:
    match = _HOST_PORT.match(text.strip())
    if match is None:
        raise ValueError(f"expected host:port for {what}, got {text!r}")
    return Endpoint(host=match["host"].strip("[]"), port=int(match["port"]))


# Kafka's default `listener.security.protocol.map`: each protocol names a listener of its own.
_DEFAULT_PROTOCOL_MAP = {protocol.value: protocol for protocol in SecurityProtocol}
_LISTENER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def _split_listener(value: str) -> tuple[str, str]:
    """`NAME://host:port` into the upper-cased name and the address."""
    name, separator, address = value.strip().partition("://")
    if not separator or not _LISTENER_NAME.match(name):
        raise ValueError(f"expected NAME://host:port (PLAINTEXT://host:port), got {value!r}")
    return name.upper(), address


class ListenerAddress(BaseModel):
    """A named Kafka listener: `NAME://host:port`."""

    model_config = ConfigDict(frozen=True)

    name: str
    endpoint: Endpoint

    def __str__(self) -> str:
        return f"{self.name}://{self.endpoint}"


def _parse_listeners(value: object) -> object:
    """`NAME://host:port,...` into ListenerAddresses with distinct names; an empty host, as
    Kafka allows (`PLAINTEXT://:9092`), listens on every interface."""
    if not isinstance(value, str):
        return value
    addresses = []
    for item in filter(None, (part.strip() for part in value.split(","))):
        name, address = _split_listener(item)
        if address.startswith(":"):
            address = "0.0.0.0" + address
        addresses.append(ListenerAddress(name=name, endpoint=_endpoint(address, name)))
    names = [address.name for address in addresses]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"the listener name {', '.join(repeated)} repeats")
    return tuple(addresses)


def _resolve_controller_listener(data: dict[str, Any]) -> None:
    """Moves the controller listener out of `listeners` (Kafka's
    `listeners=CLIENT://:9092,CONTROLLER://:9093` with `controller.listener.names=CONTROLLER`)
    into `controller.listener`, leaving the Kafka listeners."""
    raw = data.get("listeners")
    if not isinstance(raw, str):
        return
    controller_names = _parse_list(data.get("controller.listener.names", ""))
    assert isinstance(controller_names, list)
    controller_names = [str(name).upper() for name in controller_names]
    kafka: list[str] = []
    seen: set[str] = set()
    for item in filter(None, (part.strip() for part in raw.split(","))):
        name, address = _split_listener(item)
        if name in seen:
            raise ValueError(f"listeners: the listener name {name} repeats")
        seen.add(name)
        if name not in controller_names:
            kafka.append(item)
        elif "controller.listener" in data:
            raise ValueError(
                f"listeners names the controller listener {name} and controller.listener is "
                "set too: set one of them"
            )
        else:
            data["controller.listener"] = (
                "0.0.0.0" + address if address.startswith(":") else address
            )
    if kafka:
        data["listeners"] = ",".join(kafka)
    else:
        del data["listeners"]


def _parse_protocol_map(value: object) -> object:
    """`NAME:PROTOCOL,...` (Kafka's `listener.security.protocol.map`) into a mapping."""
    if not isinstance(value, str):
        return value
    mapping: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in value.split(","))):
        name, separator, protocol = item.partition(":")
        if not separator or not _LISTENER_NAME.match(name.strip()):
            raise ValueError(f"expected LISTENER_NAME:SECURITY_PROTOCOL, got {item!r}")
        mapping[name.strip().upper()] = protocol.strip().upper()
    return mapping


def _parse_http_listener(value: object) -> object:
    if not isinstance(value, str):
        return value
    scheme, separator, address = value.strip().partition("://")
    if not separator or scheme.lower() not in ("http", "https"):
        raise ValueError(f"expected http://host:port or https://host:port, got {value!r}")
    return _endpoint(address.rstrip("/"), "the admin listener")


def _parse_host_port(value: object) -> object:
    return _endpoint(value, "the address") if isinstance(value, str) else value


def _parse_voters(value: object) -> object:
    """`1@host:port,2@host:port` into a list of Voters with distinct ids."""
    if not isinstance(value, str):
        return value
    voters = []
    for item in filter(None, (part.strip() for part in value.split(","))):
        node_id, separator, address = item.partition("@")
        if not separator or not node_id.strip().isdigit():
            raise ValueError(f"expected id@host:port, got {item!r}")
        voters.append(Voter(node_id=int(node_id), endpoint=_endpoint(address, f"voter {node_id}")))
    ids = [voter.node_id for voter in voters]
    if len(set(ids)) != len(ids):
        raise ValueError(f"voter ids repeat: {ids}")
    return voters


def _parse_list(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _parse_authorizer(value: object) -> object:
    if not value:
        return None
    if value != STANDARD_AUTHORIZER:
        raise ValueError(
            f"authorizer.class.name {value!r} is not supported: the only authorizer is "
            f"{STANDARD_AUTHORIZER} (or leave it empty for none)"
        )
    return value


def _parse_super_users(value: object) -> object:
    return parse_super_users(value) if isinstance(value, str) else value


def _parse_optional_long(value: object) -> object:
    """Kafka spells "no limit" as -1 (or Long.MAX_VALUE); here it is None."""
    if isinstance(value, str):
        value = value.strip()
    if value in ("-1", -1, str(2**63 - 1), 2**63 - 1, "", None):
        return None
    return value


def _parse_connection_overrides(value: object) -> object:
    """`address:count,...` (Kafka's `max.connections.per.ip.overrides`) into a mapping; the
    count follows the last ':' so IPv6 addresses need no brackets. Addresses only: Kafka also
    takes host names, which it resolves."""
    if not isinstance(value, str):
        return value
    overrides: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in value.split(","))):
        address, separator, count = item.rpartition(":")
        try:
            parsed = ipaddress.ip_address(address.strip().strip("[]"))
        except ValueError:
            raise ValueError(f"expected ip-address:count, got {item!r}") from None
        if not separator or not count.strip().isdigit():
            raise ValueError(f"expected ip-address:count, got {item!r}")
        overrides[str(parsed)] = int(count)
    return overrides


def check_mechanism_names(mechanisms: list[str]) -> list[str]:
    """`mechanisms` when each is supported; ValueError naming the others."""
    unknown = [name for name in mechanisms if name not in SUPPORTED_MECHANISMS]
    if unknown or not mechanisms:
        raise ValueError(
            f"supported SASL mechanisms are {', '.join(SUPPORTED_MECHANISMS)}, not "
            f"{', '.join(unknown) or 'none'}"
        )
    return mechanisms


# Kafka's per-listener keys: `listener.name.<lower-case name>.<key>` overrides `<key>` for that
# listener. The keys that can be overridden here: TLS and the SASL mechanisms.
_LISTENER_PREFIX = "listener.name."


class ListenerOverrides(BaseModel):
    """The settings of one listener given with Kafka's `listener.name.<name>.` prefix; None:
    the global key's value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ssl_keystore_type: Literal["PEM"] | None = Field(default=None, alias="ssl.keystore.type")
    ssl_keystore_certificate_chain: str | None = Field(
        default=None, alias="ssl.keystore.certificate.chain", min_length=1
    )
    ssl_keystore_key: str | None = Field(default=None, alias="ssl.keystore.key", min_length=1)
    ssl_keystore_location: Path | None = Field(default=None, alias="ssl.keystore.location")
    ssl_key_password: str | None = Field(default=None, alias="ssl.key.password", min_length=1)
    ssl_truststore_type: Literal["PEM"] | None = Field(default=None, alias="ssl.truststore.type")
    ssl_truststore_certificates: str | None = Field(
        default=None, alias="ssl.truststore.certificates", min_length=1
    )
    ssl_truststore_location: Path | None = Field(default=None, alias="ssl.truststore.location")
    ssl_client_auth: ClientAuth | None = Field(default=None, alias="ssl.client.auth")
    sasl_enabled_mechanisms: Annotated[list[str] | None, BeforeValidator(_parse_list)] = Field(
        default=None, alias="sasl.enabled.mechanisms"
    )

    @field_validator("sasl_enabled_mechanisms")
    @classmethod
    def _check_mechanisms(cls, mechanisms: list[str] | None) -> list[str] | None:
        return None if mechanisms is None else check_mechanism_names(mechanisms)

    @property
    def sets_keystore(self) -> bool:
        return any(
            value is not None
            for value in (
                self.ssl_keystore_certificate_chain,
                self.ssl_keystore_key,
                self.ssl_keystore_location,
            )
        )

    @property
    def sets_truststore(self) -> bool:
        return (
            self.ssl_truststore_certificates is not None or self.ssl_truststore_location is not None
        )


_OVERRIDABLE_KEYS = frozenset(
    field.alias for field in ListenerOverrides.model_fields.values() if field.alias is not None
)


def listener_override_key(key: str) -> tuple[str, str] | None:
    """(listener name upper-cased, key) of a `listener.name.<name>.<key>` key this node
    takes; None for any other key."""
    if not key.startswith(_LISTENER_PREFIX):
        return None
    name, _, suffix = key[len(_LISTENER_PREFIX) :].partition(".")
    if not _LISTENER_NAME.match(name) or suffix not in _OVERRIDABLE_KEYS:
        return None
    return name.upper(), suffix


def _take_listener_overrides(data: dict[str, Any]) -> dict[str, ListenerOverrides]:
    """Removes the `listener.name.<name>.*` keys from `data`, validated per listener."""
    given: dict[str, dict[str, Any]] = {}
    for key in [key for key in data if isinstance(key, str) and key.startswith(_LISTENER_PREFIX)]:
        parsed = listener_override_key(key)
        if parsed is None:
            raise ValueError(
                f"{key}: unknown configuration key (listener.name.<name>. takes "
                f"{', '.join(sorted(_OVERRIDABLE_KEYS))})"
            )
        given.setdefault(parsed[0], {})[parsed[1]] = data.pop(key)
    overrides = {}
    for name, values in given.items():
        try:
            overrides[name] = ListenerOverrides.model_validate(values)
        except ValidationError as error:
            detail = error.errors()[0]
            message = str(detail["msg"]).removeprefix("Value error, ")
            raise ValueError(
                f"{_LISTENER_PREFIX}{name.lower()}.{detail['loc'][0]}: {message}"
            ) from None
    return overrides


def _parse_scram_credentials(value: object) -> object:
    """`bootstrap.scram.credentials`: Kafka's `--add-scram` syntax, ';' between users."""
    return parse_add_scram(value) if isinstance(value, str) else value


Listeners = Annotated[tuple[ListenerAddress, ...], BeforeValidator(_parse_listeners)]
OptionalLong = Annotated[Annotated[int, Field(ge=0)] | None, BeforeValidator(_parse_optional_long)]


class NodeConfig(BaseModel):
    """Every setting a node reads. Field aliases are Kafka's key names."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)

    node_id: int = Field(alias="node.id", ge=0)
    cluster_id: str = Field(alias="cluster.id", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    process_roles: Annotated[list[Role], BeforeValidator(_parse_list)] = Field(
        alias="process.roles", min_length=1
    )
    controller_quorum_voters: Annotated[list[Voter], BeforeValidator(_parse_voters)] = Field(
        alias="controller.quorum.voters", min_length=1
    )
    # The Kafka listeners (the controller's, named in controller.listener.names, is moved to
    # controller.listener) and where each is advertised.
    listeners: Listeners = Field(default=(), alias="listeners")
    advertised_listeners: Listeners = Field(default=(), alias="advertised.listeners")
    controller_listener: Annotated[Endpoint | None, BeforeValidator(_parse_host_port)] = Field(
        default=None, alias="controller.listener"
    )
    admin_listener: Annotated[Endpoint | None, BeforeValidator(_parse_http_listener)] = Field(
        default=None, alias="admin.listener"
    )
    admin_token: str | None = Field(default=None, alias="admin.token", min_length=1)
    # Authorization (Kafka's keys). Without an authorizer every request is allowed; with
    # Kafka's StandardAuthorizer (the only one there is) the ACLs of the metadata log decide.
    # An inter-broker connection on a PLAINTEXT listener is User:ANONYMOUS, which must then be
    # a super user (as in Kafka) for brokers to register and replicate.
    authorizer_class_name: Annotated[
        Literal["org.apache.kafka.metadata.authorizer.StandardAuthorizer"] | None,
        BeforeValidator(_parse_authorizer),
    ] = Field(default=None, alias="authorizer.class.name")
    super_users: Annotated[frozenset[str], BeforeValidator(_parse_super_users)] = Field(
        default=frozenset(), alias="super.users"
    )
    allow_everyone_if_no_acl_found: bool = Field(
        default=False, alias="allow.everyone.if.no.acl.found"
    )
    listener_security_protocol_map: Annotated[
        dict[str, SecurityProtocol], BeforeValidator(_parse_protocol_map)
    ] = Field(
        default_factory=lambda: dict(_DEFAULT_PROTOCOL_MAP), alias="listener.security.protocol.map"
    )

    # Kafka's keys: which listeners of `listeners` are the controller's (the first is the one
    # this node's controller clients use), and the listener brokers replicate on.
    controller_listener_names: Annotated[
        list[Annotated[str, AfterValidator(str.upper)]], BeforeValidator(_parse_list)
    ] = Field(default_factory=list, alias="controller.listener.names")
    inter_broker_listener_name: str | None = Field(
        default=None, alias="inter.broker.listener.name", min_length=1
    )
    # TLS of an SSL listener, Kafka's keys (PEM only): the key pair inline or in one file
    # (`ssl.keystore.location`, holding the private key and the certificate chain), the
    # certificates that verify clients inline or in a file.
    # Kafka's key: "https" checks the host name of the node a client connects to against its
    # certificate; empty does not.
    ssl_endpoint_identification_algorithm: Literal["https", ""] = Field(
        default="https", alias="ssl.endpoint.identification.algorithm"
    )
    ssl_keystore_type: Literal["PEM"] = Field(default="PEM", alias="ssl.keystore.type")
    ssl_keystore_certificate_chain: str | None = Field(
        default=None, alias="ssl.keystore.certificate.chain", min_length=1
    )
    ssl_keystore_key: str | None = Field(default=None, alias="ssl.keystore.key", min_length=1)
    ssl_keystore_location: Path | None = Field(default=None, alias="ssl.keystore.location")
    ssl_key_password: str | None = Field(default=None, alias="ssl.key.password", min_length=1)
    ssl_truststore_type: Literal["PEM"] = Field(default="PEM", alias="ssl.truststore.type")
    ssl_truststore_certificates: str | None = Field(
        default=None, alias="ssl.truststore.certificates", min_length=1
    )
    ssl_truststore_location: Path | None = Field(default=None, alias="ssl.truststore.location")
    ssl_client_auth: ClientAuth = Field(default=ClientAuth.NONE, alias="ssl.client.auth")
    # Not a Kafka key (Kafka bounds a handshake by connections.max.idle.ms): how long a TLS
    # listener waits for a new connection's handshake before it drops the connection.
    ssl_handshake_timeout_ms: int = Field(default=10_000, alias="ssl.handshake.timeout.ms", ge=1)
    # Only Kafka's default rule: the principal is the certificate subject, RFC 2253.
    ssl_principal_mapping_rules: Literal["DEFAULT"] = Field(
        default="DEFAULT", alias="ssl.principal.mapping.rules"
    )
    log_dirs: Annotated[list[Path], BeforeValidator(_parse_list)] = Field(
        alias="log.dirs", min_length=1
    )
    # Kafka's key: where the metadata log lives (default: the first of log.dirs). A directory
    # of its own keeps the quorum writing when the partitions' disk fills up.
    metadata_log_dir: Path | None = Field(default=None, alias="metadata.log.dir")
    broker_rack: str | None = Field(default=None, alias="broker.rack", min_length=1)
    # KIP-392: Kafka's rack-aware selector lets consumers with `client.rack` fetch from a
    # follower in their rack; unset (or empty), consumers are served by the leader.
    replica_selector_class: Annotated[
        Literal["org.apache.kafka.common.replica.RackAwareReplicaSelector"] | None,
        BeforeValidator(lambda value: value or None),
    ] = Field(default=None, alias="replica.selector.class")

    # Kafka's default: a Metadata request that allows it (a producer's) creates the topics it
    # names that do not exist, with num.partitions and default.replication.factor.
    auto_create_topics_enable: bool = Field(default=True, alias="auto.create.topics.enable")
    num_partitions: int = Field(default=1, alias="num.partitions", ge=1)
    default_replication_factor: int = Field(default=1, alias="default.replication.factor", ge=1)
    min_insync_replicas: int = Field(default=1, alias="min.insync.replicas", ge=1)
    replica_lag_time_max_ms: int = Field(default=30_000, alias="replica.lag.time.max.ms", ge=1)
    # KIP-227: the fetch sessions the broker caches (Kafka's key and default; 0: none).
    max_incremental_fetch_session_cache_slots: int = Field(
        default=1000, alias="max.incremental.fetch.session.cache.slots", ge=0
    )
    # The replication throttle (Kafka's keys and defaults; Long.MAX_VALUE: no throttle). The
    # rates can also be changed at run time as dynamic broker configs.
    leader_replication_throttled_rate: int = Field(
        default=2**63 - 1, alias="leader.replication.throttled.rate", ge=0, le=2**63 - 1
    )
    follower_replication_throttled_rate: int = Field(
        default=2**63 - 1, alias="follower.replication.throttled.rate", ge=0, le=2**63 - 1
    )
    replication_quota_window_num: int = Field(
        default=11, alias="replication.quota.window.num", ge=1
    )
    replication_quota_window_size_seconds: int = Field(
        default=1, alias="replication.quota.window.size.seconds", ge=1
    )
    unclean_leader_election_enable: bool = Field(
        default=False, alias="unclean.leader.election.enable"
    )
    unclean_recovery_strategy: UncleanRecoveryStrategy = Field(
        default=UncleanRecoveryStrategy.BALANCED, alias="unclean.recovery.strategy"
    )
    unclean_recovery_manager_enabled: bool = Field(
        default=True, alias="unclean.recovery.manager.enabled"
    )
    # How long the controller waits for a broker's GetReplicaLogInfo answer, and the window
    # after which proactive recovery elects the best answer it has.
    unclean_recovery_timeout_ms: int = Field(
        default=10_000, alias="unclean.recovery.timeout.ms", ge=1
    )
    eligible_leader_replicas_enable: bool = Field(
        default=True, alias="eligible.leader.replicas.enable"
    )
    auto_leader_rebalance_enable: bool = Field(default=True, alias="auto.leader.rebalance.enable")
    leader_imbalance_check_interval_seconds: int = Field(
        default=300, alias="leader.imbalance.check.interval.seconds", ge=1
    )

    log_segment_bytes: int = Field(
        default=1024 * 1024 * 1024, alias="log.segment.bytes", ge=14, le=2**31 - 1
    )
    log_roll_ms: int = Field(default=7 * _DAY_MS, alias="log.roll.ms", ge=1)
    log_index_interval_bytes: int = Field(default=4096, alias="log.index.interval.bytes", ge=0)
    log_retention_ms: OptionalLong = Field(default=7 * _DAY_MS, alias="log.retention.ms")
    log_retention_bytes: OptionalLong = Field(default=None, alias="log.retention.bytes")
    log_flush_interval_messages: OptionalLong = Field(
        default=None, alias="log.flush.interval.messages"
    )
    log_flush_interval_ms: OptionalLong = Field(default=None, alias="log.flush.interval.ms")
    message_max_bytes: int = Field(default=1024 * 1024 + 12, alias="message.max.bytes", ge=0)
    log_message_timestamp_type: Literal["CreateTime", "LogAppendTime"] = Field(
        default="CreateTime", alias="log.message.timestamp.type"
    )
    log_message_timestamp_before_max_ms: OptionalLong = Field(
        default=None, alias="log.message.timestamp.before.max.ms"
    )
    log_message_timestamp_after_max_ms: OptionalLong = Field(
        default=3600 * 1000, alias="log.message.timestamp.after.max.ms"
    )
    log_cleanup_policy: Annotated[list[CleanupPolicy], BeforeValidator(_parse_list)] = Field(
        default_factory=lambda: [CleanupPolicy.DELETE], alias="log.cleanup.policy", min_length=1
    )
    log_cleaner_enable: bool = Field(default=True, alias="log.cleaner.enable")
    log_cleaner_backoff_ms: int = Field(default=15_000, alias="log.cleaner.backoff.ms", ge=1)
    log_cleaner_delete_retention_ms: int = Field(
        default=_DAY_MS, alias="log.cleaner.delete.retention.ms", ge=0
    )
    log_cleaner_min_cleanable_ratio: float = Field(
        default=0.5, alias="log.cleaner.min.cleanable.ratio", ge=0, le=1
    )
    log_retention_check_interval_ms: int = Field(
        default=300_000, alias="log.retention.check.interval.ms", ge=1
    )
    log_flush_scheduler_interval_ms: int = Field(
        default=1_000, alias="log.flush.scheduler.interval.ms", ge=1
    )
    log_flush_offset_checkpoint_interval_ms: int = Field(
        default=60_000, alias="log.flush.offset.checkpoint.interval.ms", ge=1
    )

    offsets_topic_num_partitions: int = Field(
        default=50, alias="offsets.topic.num.partitions", ge=1
    )
    offsets_topic_replication_factor: int = Field(
        default=3, alias="offsets.topic.replication.factor", ge=1
    )
    offsets_topic_segment_bytes: int = Field(
        default=100 * 1024 * 1024, alias="offsets.topic.segment.bytes", ge=14, le=2**31 - 1
    )
    offsets_retention_minutes: int = Field(
        default=7 * 24 * 60, alias="offsets.retention.minutes", ge=1
    )
    offsets_commit_timeout_ms: int = Field(default=5_000, alias="offsets.commit.timeout.ms", ge=1)
    offset_metadata_max_bytes: int = Field(default=4096, alias="offset.metadata.max.bytes", ge=0)
    group_initial_rebalance_delay_ms: int = Field(
        default=3_000, alias="group.initial.rebalance.delay.ms", ge=0
    )
    group_min_session_timeout_ms: int = Field(
        default=6_000, alias="group.min.session.timeout.ms", ge=1
    )
    group_max_session_timeout_ms: int = Field(
        default=1_800_000, alias="group.max.session.timeout.ms", ge=1
    )

    broker_session_timeout_ms: int = Field(default=9_000, alias="broker.session.timeout.ms", ge=1)
    # How long a stopping broker waits for the controller to move its leaderships away.
    controlled_shutdown_timeout_ms: int = Field(
        default=30_000, alias="controlled.shutdown.timeout.ms", ge=0
    )
    broker_heartbeat_interval_ms: int = Field(
        default=2_000, alias="broker.heartbeat.interval.ms", ge=1
    )
    controller_quorum_election_timeout_ms: int = Field(
        default=1_000, alias="controller.quorum.election.timeout.ms", ge=1
    )
    controller_quorum_fetch_timeout_ms: int = Field(
        default=2_000, alias="controller.quorum.fetch.timeout.ms", ge=1
    )
    controller_quorum_election_backoff_max_ms: int = Field(
        default=1_000, alias="controller.quorum.election.backoff.max.ms", ge=1
    )
    controller_quorum_request_timeout_ms: int = Field(
        default=2_000, alias="controller.quorum.request.timeout.ms", ge=1
    )
    # Kafka's snapshot policy (KIP-630): snapshot once this many committed bytes accumulated.
    metadata_log_max_record_bytes_between_snapshots: int = Field(
        default=20 * 1024 * 1024, alias="metadata.log.max.record.bytes.between.snapshots", ge=1
    )
    # KIP-835: the active controller appends a NoOpRecord after this long idle; 0: never.
    metadata_max_idle_interval_ms: int = Field(
        default=500, alias="metadata.max.idle.interval.ms", ge=0
    )
    socket_request_max_bytes: int = Field(
        default=104_857_600, alias="socket.request.max.bytes", ge=1024
    )
    connections_max_idle_ms: int = Field(default=600_000, alias="connections.max.idle.ms", ge=1)
    # The Kafka listener's limits (net.server.ConnectionLimits); Kafka's defaults: none.
    max_connections: int = Field(default=_INT_MAX, alias="max.connections", ge=0, le=_INT_MAX)
    max_connections_per_ip: int = Field(
        default=_INT_MAX, alias="max.connections.per.ip", ge=0, le=_INT_MAX
    )
    max_connections_per_ip_overrides: Annotated[
        dict[str, Annotated[int, Field(ge=0, le=_INT_MAX)]],
        BeforeValidator(_parse_connection_overrides),
    ] = Field(default_factory=dict, alias="max.connections.per.ip.overrides")
    queued_max_request_bytes: OptionalLong = Field(default=None, alias="queued.max.request.bytes")
    # Kafka's key, for a SASL listener (SASL_PLAINTEXT or SASL_SSL); Kafka's default (GSSAPI)
    # is not supported, and PLAIN, which sends the password, must be enabled explicitly.
    sasl_enabled_mechanisms: Annotated[list[str], BeforeValidator(_parse_list)] = Field(
        default_factory=lambda: [SCRAM_SHA_256, SCRAM_SHA_512], alias="sasl.enabled.mechanisms"
    )
    connection_failed_authentication_delay_ms: int = Field(
        default=DEFAULT_FAILED_AUTHENTICATION_DELAY_MS,
        alias="connection.failed.authentication.delay.ms",
        ge=0,
    )
    # How this node authenticates to the brokers' SASL listener (replica fetchers, the
    # controller's unclean-recovery questions): Kafka's mechanism key, and a user name and
    # password instead of `listener.name.<name>.<mechanism>.sasl.jaas.config`.
    sasl_mechanism_inter_broker_protocol: str = Field(
        default=SCRAM_SHA_512, alias="sasl.mechanism.inter.broker.protocol"
    )
    # Kafka's key: the mechanism of this node's connections to a SASL controller listener
    # (with the inter-broker user and password).
    sasl_mechanism_controller_protocol: str = Field(
        default=SCRAM_SHA_512, alias="sasl.mechanism.controller.protocol"
    )
    inter_broker_sasl_username: str | None = Field(default=None, alias="inter.broker.sasl.username")
    inter_broker_sasl_password: SecretStr | None = Field(
        default=None, alias="inter.broker.sasl.password"
    )
    # The SCRAM users a new cluster starts with, as `kafka-storage format --add-scram` takes
    # them: `SCRAM-SHA-512=[name=admin,password=secret]`, several separated by ';'. The
    # active controller writes them when the metadata holds no SCRAM credential at all.
    bootstrap_scram_credentials: Annotated[
        tuple[ScramBootstrapCredential, ...], BeforeValidator(_parse_scram_credentials)
    ] = Field(default=(), alias="bootstrap.scram.credentials", repr=False)

    @field_validator("sasl_enabled_mechanisms")
    @classmethod
    def _check_mechanisms(cls, mechanisms: list[str]) -> list[str]:
        return check_mechanism_names(mechanisms)

    # Each listener's `listener.name.<name>.*` keys, by upper-cased listener name.
    _listener_overrides: dict[str, ListenerOverrides] = PrivateAttr(default_factory=dict)
    # `admin.listener=https://...`: the admin API serves TLS with the node's ssl.* keys.
    _admin_tls: bool = PrivateAttr(default=False)

    @model_validator(mode="wrap")
    @classmethod
    def _resolve_listeners(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """Kafka's named listeners: `listeners` may name the controller listener too (one of
        `controller.listener.names`, instead of `controller.listener`); every name has a
        security protocol; a TLS listener's keys load; `listener.name.<name>.*` keys override
        the global ones for their listener."""
        if not isinstance(data, dict):
            return handler(data)
        data = dict(data)
        overrides = _take_listener_overrides(data)
        _resolve_controller_listener(data)
        config = handler(data)
        config._listener_overrides = overrides
        admin = data.get("admin.listener")
        config._admin_tls = isinstance(admin, str) and admin.strip().lower().startswith("https:")
        config._check_listener_names()
        config._check_sasl()
        return config

    def _check_listener_names(self) -> None:
        protocols = self.listener_security_protocol_map
        names = self.listener_names
        for listener in self.listeners:
            if listener.name not in protocols:
                raise ValueError(
                    f"listeners: listener name {listener.name} is not in "
                    f"listener.security.protocol.map ({self._protocol_map_text()})"
                )
        for advertised in self.advertised_listeners:
            if advertised.name not in names:
                raise ValueError(
                    f"advertised.listeners: listener {advertised.name} is not in listeners "
                    f"({', '.join(names) or 'none'})"
                )
        self._check_ports()
        if "listener_security_protocol_map" in self.model_fields_set:
            for name in self.controller_listener_names:
                if name not in protocols:
                    raise ValueError(
                        f"controller.listener.names: listener name {name} is not in "
                        f"listener.security.protocol.map ({self._protocol_map_text()})"
                    )
        if self.listeners:
            self._check_inter_broker_listener()
        known = set(names) | set(self.controller_listener_names)
        for name in self._listener_overrides:
            if name not in known:
                raise ValueError(
                    f"{_LISTENER_PREFIX}{name.lower()}.*: there is no listener {name} in "
                    f"listeners ({', '.join(sorted(known)) or 'none'})"
                )
        self._check_tls_keys()

    def _check_tls_keys(self) -> None:
        checks = [
            (listener.name, self.security_protocol(listener.name)) for listener in self.listeners
        ]
        if self.controller_listener is not None and self.controller_listener_names:
            checks.append((self.controller_listener_names[0], self.controller_security_protocol))
        for name, protocol in checks:
            key = (
                "controller.listener.names"
                if name in self.controller_listener_names
                else "listeners"
            )
            if protocol.tls:
                try:
                    server_context(self.tls_settings(name))
                except TlsConfigError as error:
                    raise ValueError(f"{key}: listener {name}: {error}") from None
        if self._admin_tls:
            try:
                server_context(self.tls_settings())
            except TlsConfigError as error:
                raise ValueError(f"admin.listener: listener https: {error}") from None

    def _check_ports(self) -> None:
        """As Kafka: no two listeners on one port (port 0, any free one, excepted)."""
        bound = [(listener.name, listener.endpoint.port) for listener in self.listeners]
        if self.controller_listener is not None:
            name = next(iter(self.controller_listener_names), "controller.listener")
            bound.append((name, self.controller_listener.port))
        if self.admin_listener is not None:
            bound.append(("admin.listener", self.admin_listener.port))
        seen: dict[int, str] = {}
        for name, port in bound:
            if port and port in seen:
                raise ValueError(
                    f"listeners: {seen[port]} and {name} both use port {port}; each listener "
                    "needs a port of its own"
                )
            seen[port] = name

    def _check_inter_broker_listener(self) -> None:
        name = self.inter_broker_listener
        if self.inter_broker_listener_name is not None and name not in self.listener_names:
            raise ValueError(
                f"inter.broker.listener.name {self.inter_broker_listener_name} is not a "
                f"listener of listeners ({', '.join(self.listener_names)})"
            )
        if name not in self.listener_names:
            raise ValueError(
                "inter.broker.listener.name is required with several listeners and none named "
                f"PLAINTEXT (Kafka's default): listeners are {', '.join(self.listener_names)}"
            )

    def _check_sasl(self) -> None:
        """The inter-broker (when a user is configured for it) and controller mechanisms are
        enabled on the listener they are used on, as Kafka checks; a SASL controller listener
        needs this node's credentials, with which brokers and voters authenticate to it."""
        uses = []
        if self.inter_broker_sasl() is not None and self.listeners:
            uses.append(
                (
                    "sasl.mechanism.inter.broker.protocol",
                    self.sasl_mechanism_inter_broker_protocol,
                    self.inter_broker_listener,
                )
            )
        if self.controller_security_protocol.sasl:
            if self.inter_broker_sasl_username is None or self.inter_broker_sasl_password is None:
                raise ValueError(
                    "controller.listener.names: the SASL controller listener "
                    f"{self.controller_listener_names[0]} needs inter.broker.sasl.username and "
                    "inter.broker.sasl.password (how nodes authenticate to the controllers)"
                )
            uses.append(
                (
                    "sasl.mechanism.controller.protocol",
                    self.sasl_mechanism_controller_protocol,
                    self.controller_listener_names[0],
                )
            )
        for key, mechanism, name in uses:
            enabled = self.sasl_mechanisms(name)
            if mechanism not in enabled:
                raise ValueError(
                    f"{key}: {mechanism} is not enabled on listener {name} "
                    f"(sasl.enabled.mechanisms: {','.join(enabled)})"
                )

    @model_validator(mode="after")
    def _check_roles(self) -> Self:
        voter_ids = {voter.node_id for voter in self.controller_quorum_voters}
        if Role.CONTROLLER in self.process_roles:
            if self.node_id not in voter_ids:
                raise ValueError(
                    f"node.id {self.node_id} has the controller role but is not in "
                    f"controller.quorum.voters {sorted(voter_ids)}"
                )
            if self.controller_listener is None:
                raise ValueError("controller.listener is required for the controller role")
        elif self.node_id in voter_ids:
            raise ValueError(
                f"node.id {self.node_id} is in controller.quorum.voters but process.roles "
                "lacks controller"
            )
        if Role.BROKER in self.process_roles and not self.listeners:
            raise ValueError("listeners is required for the broker role")
        if self.broker_heartbeat_interval_ms >= self.broker_session_timeout_ms:
            raise ValueError("broker.heartbeat.interval.ms must be below broker.session.timeout.ms")
        if len(set(self.process_roles)) != len(self.process_roles):
            raise ValueError("process.roles repeats a role")
        if self.max_connections_per_ip == 0 and not self.max_connections_per_ip_overrides:
            # As Kafka: a limit of 0 for every address lets no client in at all.
            raise ValueError(
                "max.connections.per.ip can be 0 only with max.connections.per.ip.overrides"
            )
        return self

    def authorizer_settings(self) -> AuthorizerSettings | None:
        """The authorizer's settings; None when no authorizer is configured."""
        if self.authorizer_class_name is None:
            return None
        return AuthorizerSettings(self.super_users, self.allow_everyone_if_no_acl_found)

    def _protocol_map_text(self) -> str:
        return ",".join(f"{n}:{p}" for n, p in self.listener_security_protocol_map.items())

    @property
    def listener_names(self) -> list[str]:
        """The Kafka listeners' names, in `listeners` order."""
        return [listener.name for listener in self.listeners]

    def security_protocol(self, name: str) -> SecurityProtocol:
        """The security protocol of the listener `name` (PLAINTEXT for a controller listener
        the map does not name, as in Kafka)."""
        return self.listener_security_protocol_map.get(name, SecurityProtocol.PLAINTEXT)

    @property
    def inter_broker_listener(self) -> str:
        """The listener brokers replicate on: `inter.broker.listener.name`, else the only
        Kafka listener, else (Kafka's default) the one named PLAINTEXT. A controller-only
        node asks brokers on it too (its unclean-recovery questions)."""
        if self.inter_broker_listener_name is not None:
            return self.inter_broker_listener_name.upper()
        if len(self.listeners) == 1:
            return self.listeners[0].name
        return SecurityProtocol.PLAINTEXT.value

    def advertised_listener(self, name: str) -> Endpoint:
        """Where clients of the listener `name` are told to connect: its entry in
        advertised.listeners, else its address in listeners."""
        for advertised in self.advertised_listeners:
            if advertised.name == name:
                return advertised.endpoint
        for listener in self.listeners:
            if listener.name == name:
                return listener.endpoint
        raise KeyError(name)

    def tls_settings(self, name: str | None = None) -> TlsSettings:
        """The TLS settings of the listener `name` (the global `ssl.*` keys without one): its
        `listener.name.<name>.ssl.*` keys override the global ones, the key pair and the
        trusted certificates each as a whole."""
        overrides = self._listener_overrides.get(name or "", ListenerOverrides())
        keys = overrides if overrides.sets_keystore else self
        trust = overrides if overrides.sets_truststore else self
        chain: Pem | None = None
        key: Pem | None = None
        if keys.ssl_keystore_location is not None:
            chain = key = Pem(path=keys.ssl_keystore_location)
        if keys.ssl_keystore_certificate_chain is not None:
            chain = Pem(text=keys.ssl_keystore_certificate_chain)
        if keys.ssl_keystore_key is not None:
            key = Pem(text=keys.ssl_keystore_key)
        trusted: Pem | None = None
        if trust.ssl_truststore_location is not None:
            trusted = Pem(path=trust.ssl_truststore_location)
        if trust.ssl_truststore_certificates is not None:
            trusted = Pem(text=trust.ssl_truststore_certificates)
        return TlsSettings(
            certificate_chain=chain,
            private_key=key,
            key_password=overrides.ssl_key_password or self.ssl_key_password,
            trusted_certificates=trusted,
            client_auth=overrides.ssl_client_auth or self.ssl_client_auth,
        )

    def sasl_mechanisms(self, name: str) -> list[str]:
        """The SASL mechanisms the listener `name` enables."""
        overrides = self._listener_overrides.get(name)
        if overrides is not None and overrides.sasl_enabled_mechanisms is not None:
            return overrides.sasl_enabled_mechanisms
        return self.sasl_enabled_mechanisms

    def listener_security(self, name: str, credentials: CredentialLookup) -> ListenerSecurity:
        """How the listener `name` secures its connections: TLS, SASL (verifying with
        `credentials`), and the bound on a TLS handshake."""
        protocol = self.security_protocol(name)
        return ListenerSecurity(
            name,
            server_context(self.tls_settings(name)) if protocol.tls else None,
            SaslListenerConfig(
                tuple(self.sasl_mechanisms(name)),
                credentials,
                self.connection_failed_authentication_delay_ms,
            )
            if protocol.sasl
            else None,
            ssl_handshake_timeout=self.ssl_handshake_timeout_ms / 1000,
        )

    @property
    def controller_security_protocol(self) -> SecurityProtocol:
        """The controller listener's security protocol: its name's in
        listener.security.protocol.map; PLAINTEXT without a name, or (as Kafka) when the map
        is not set and does not name it."""
        if not self.controller_listener_names:
            return SecurityProtocol.PLAINTEXT
        return self.security_protocol(self.controller_listener_names[0])

    def controller_listener_security(self, credentials: CredentialLookup) -> ListenerSecurity:
        """How the controller listener secures its connections (see `listener_security`)."""
        return self.listener_security(next(iter(self.controller_listener_names), ""), credentials)

    def _client_context(
        self, name: str | None, protocol: SecurityProtocol
    ) -> ssl.SSLContext | None:
        if not protocol.tls:
            return None
        settings = dataclasses.replace(
            self.tls_settings(name),
            check_hostname=self.ssl_endpoint_identification_algorithm == "https",
        )
        return client_context(settings)

    def controller_client_ssl_context(self) -> ssl.SSLContext | None:
        """TLS for this node's connections to the controllers (the controller listener's
        protocol and keys, this node's key pair as its client certificate)."""
        name = next(iter(self.controller_listener_names), None)
        return self._client_context(name, self.controller_security_protocol)

    def inter_broker_ssl_context(self) -> ssl.SSLContext | None:
        """TLS for this node's connections to other brokers' inter-broker listener (replica
        fetchers, the controller's log inspection), this node's key pair as its client
        certificate."""
        name = self.inter_broker_listener
        return self._client_context(name, self.security_protocol(name))

    def admin_ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of the admin API (`admin.listener=https://...`), else None."""
        if not self._admin_tls:
            return None
        # The admin API authenticates with admin.token, not client certificates.
        return server_context(dataclasses.replace(self.tls_settings(), client_auth=ClientAuth.NONE))

    def admin_peer_ssl_context(self) -> ssl.SSLContext | None:
        """TLS for asking other nodes' admin APIs (`admin.listener=https://...`), else None."""
        return self._client_context(None, SecurityProtocol.SSL) if self._admin_tls else None

    @property
    def all_log_dirs(self) -> list[Path]:
        """`log.dirs`, plus `metadata.log.dir` when it is a directory of its own."""
        metadata = self.metadata_log_directory
        return self.log_dirs + ([] if metadata in self.log_dirs else [metadata])

    @property
    def metadata_log_directory(self) -> Path:
        """The directory that holds the metadata log (`__cluster_metadata-0`)."""
        return self.metadata_log_dir or self.log_dirs[0]

    def connection_limits(self) -> ConnectionLimits:
        """What each Kafka listener admits."""
        return ConnectionLimits(
            max_connections=self.max_connections,
            max_connections_per_ip=self.max_connections_per_ip,
            max_connections_per_ip_overrides=dict(self.max_connections_per_ip_overrides),
            queued_max_request_bytes=self.queued_max_request_bytes,
        )

    def _sasl_credentials(self, mechanism: str) -> SaslClientCredentials | None:
        if self.inter_broker_sasl_username is None or self.inter_broker_sasl_password is None:
            return None
        return SaslClientCredentials(
            mechanism,
            self.inter_broker_sasl_username,
            self.inter_broker_sasl_password.get_secret_value(),
        )

    def inter_broker_sasl(self) -> SaslClientCredentials | None:
        """The credentials of this node's own connections to the inter-broker listener; None
        when that listener is not SASL or no user is configured."""
        if not self.security_protocol(self.inter_broker_listener).sasl:
            return None
        return self._sasl_credentials(self.sasl_mechanism_inter_broker_protocol)

    def controller_sasl(self) -> SaslClientCredentials | None:
        """The credentials of this node's connections to the controllers (Kafka's
        `sasl.mechanism.controller.protocol`, the inter-broker user); None when the
        controller listener is not SASL."""
        if not self.controller_security_protocol.sasl:
            return None
        return self._sasl_credentials(self.sasl_mechanism_controller_protocol)

    def log_config(self) -> LogConfig:
        """The storage defaults these broker-level `log.*` settings describe."""
        return LogConfig(
            segment_bytes=self.log_segment_bytes,
            segment_ms=self.log_roll_ms,
            index_interval_bytes=self.log_index_interval_bytes,
            flush_messages=self.log_flush_interval_messages,
            flush_ms=self.log_flush_interval_ms,
            retention_ms=self.log_retention_ms,
            retention_bytes=self.log_retention_bytes,
            max_message_bytes=self.message_max_bytes,
            message_timestamp_type=TimestampType.LOG_APPEND_TIME
            if self.log_message_timestamp_type == "LogAppendTime"
            else TimestampType.CREATE_TIME,
            message_timestamp_before_max_ms=self.log_message_timestamp_before_max_ms,
            message_timestamp_after_max_ms=self.log_message_timestamp_after_max_ms,
            cleanup_policy=frozenset(policy.value for policy in self.log_cleanup_policy),
            delete_retention_ms=self.log_cleaner_delete_retention_ms,
            min_cleanable_dirty_ratio=self.log_cleaner_min_cleanable_ratio,
        )

    def default_unclean_recovery_strategy(self) -> UncleanRecoveryStrategy:
        """The cluster-wide strategy as KIP-966 maps the older key onto it: none with the
        recovery manager disabled; proactive when `unclean.leader.election.enable` is true
        and `unclean.recovery.strategy` is not set; the strategy otherwise."""
        if not self.unclean_recovery_manager_enabled:
            return UncleanRecoveryStrategy.NONE
        if (
            self.unclean_leader_election_enable
            and "unclean_recovery_strategy" not in self.model_fields_set
        ):
            return UncleanRecoveryStrategy.PROACTIVE
        return self.unclean_recovery_strategy

    def broker_config_entries(self) -> tuple[BrokerConfigEntry, ...]:
        """Every setting as DescribeConfigs reports it, in Kafka's spelling: keys set in any
        source are STATIC_BROKER_CONFIG, the others DEFAULT_CONFIG; "no limit" is -1."""
        entries = []
        for name, field in sorted(type(self).model_fields.items(), key=lambda f: str(f[1].alias)):
            assert field.alias is not None
            value = getattr(self, name)
            sensitive = field.alias in _SENSITIVE_KEYS
            text = _kafka_spelling(field.alias, value, field.annotation)
            if field.alias == "admin.listener" and value is not None and self._admin_tls:
                text = f"https://{value}"
            entries.append(
                BrokerConfigEntry(
                    field.alias,
                    text,
                    ConfigSource.STATIC_BROKER_CONFIG
                    if name in self.model_fields_set
                    else ConfigSource.DEFAULT_CONFIG,
                    ConfigType.PASSWORD if sensitive else _config_type(value, field.annotation),
                    sensitive=sensitive,
                )
            )
        return tuple(entries)


_SENSITIVE_KEYS = frozenset(
    {
        "admin.token",
        "ssl.keystore.key",
        "ssl.key.password",
        "ssl.keystore.password",
        "bootstrap.scram.credentials",
        "inter.broker.sasl.password",
    }
)


def _kafka_spelling(key: str, value: object, annotation: object) -> str | None:
    if value is None:
        return "-1" if _is_optional_long(annotation) else None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, Endpoint):
        return f"http://{value}" if key == "admin.listener" else str(value)
    if isinstance(value, tuple) and key in ("listeners", "advertised.listeners"):
        return ",".join(str(listener) for listener in value) or None
    if isinstance(value, frozenset):
        return ";".join(sorted(value))
    if isinstance(value, dict):
        return ",".join(f"{name}:{item}" for name, item in value.items())
    if isinstance(value, list):
        return ",".join(
            f"{item.node_id}@{item.endpoint}" if isinstance(item, Voter) else str(item)
            for item in value
        )
    return str(value)


def _is_optional_long(annotation: object) -> bool:
    return any(int in typing.get_args(arg) for arg in typing.get_args(annotation))


def _config_type(value: object, annotation: object) -> ConfigType:
    if isinstance(value, bool):
        return ConfigType.BOOLEAN
    if isinstance(value, int) or _is_optional_long(annotation):
        return ConfigType.LONG
    if isinstance(value, float):
        return ConfigType.DOUBLE
    return ConfigType.LIST if isinstance(value, list) else ConfigType.STRING


KNOWN_KEYS = frozenset(
    field.alias for field in NodeConfig.model_fields.values() if field.alias is not None
)


def is_known_key(key: str) -> bool:
    """Whether `key` is a key this node takes (one of KNOWN_KEYS, or a listener's override)."""
    return key in KNOWN_KEYS or listener_override_key(key) is not None


def environment_values(environment: Mapping[str, str]) -> dict[str, str]:
    """Configuration keys set through `KRAFT_*` variables."""
    values = {}
    for name, value in environment.items():
        key = environment_key(name)
        if key is None:
            continue
        if not is_known_key(key):
            raise ConfigError(f"environment variable {name}: unknown configuration key {key!r}")
        values[key] = value
    return values


def parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    """`key=value` strings from `--override`."""
    values = {}
    for override in overrides:
        key, separator, value = override.partition("=")
        if not separator or not key.strip():
            raise ConfigError(f"--override {override!r}: expected key=value")
        values[key.strip()] = value.strip()
    return values


def load_config(
    config_file: Path | None,
    overrides: Iterable[str] = (),
    environment: Mapping[str, str] | None = None,
) -> NodeConfig:
    """Merge the three sources and validate them; raises ConfigError naming each bad key."""
    values: dict[str, str] = {}
    if config_file is not None:
        try:
            text = config_file.read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(
                f"cannot read the configuration file {config_file}: {error}"
            ) from error
        values.update(parse_properties(text, str(config_file)))
    values.update(environment_values(os.environ if environment is None else environment))
    values.update(parse_overrides(overrides))
    unknown = sorted(key for key in values if not is_known_key(key))
    if unknown:
        raise ConfigError(f"unknown configuration key(s): {', '.join(unknown)}")
    try:
        return NodeConfig.model_validate(values)
    except ValidationError as error:
        raise ConfigError(_describe(error)) from None


def _describe(error: ValidationError) -> str:
    problems = []
    for detail in error.errors():
        message = str(detail["msg"]).removeprefix("Value error, ")
        if not detail["loc"]:
            # A check across keys: its message names them.
            problems.append(message)
            continue
        given = detail.get("input")
        shown = f" (got {given!r})" if isinstance(given, str | int) else ""
        problems.append(f"{detail['loc'][0]}: {message}{shown}")
    return "invalid configuration: " + "; ".join(problems)
