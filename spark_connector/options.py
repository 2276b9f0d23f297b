"""The options of the `kraft` format, named and valued as Spark's built-in Kafka source names
them, parsed and checked before any query runs.

Spark hands options over with lower-cased keys and string values; every error here names the
option as the user wrote it in Spark's documentation (`startingOffsets`, not `startingoffsets`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from net.client import parse_bootstrap_servers
from net.producer import ProducerConfig
from net.record_batch import Compression
from net.sasl import SaslClientCredentials, parse_jaas_config
from net.tls import Pem, TlsConfigError, TlsSettings, client_context
from spark_connector.planning import TopicPartition

EARLIEST = -2
LATEST = -1
_BOOTSTRAP = "kraft.bootstrap.servers"
_CLIENT_PREFIX = "kraft."
# Client settings a reader accepts, with their defaults.
_READ_CLIENT_KEYS = {
    "kraft.client.id": "kraft-spark",
    "kraft.request.timeout.ms": "30000",
    "kraft.fetch.max.wait.ms": "500",
    "kraft.max.partition.fetch.bytes": str(8 * 1024 * 1024),
}
_WRITE_CLIENT_KEYS = {
    "kraft.client.id": "kraft-spark",
    "kraft.acks": "all",
    "kraft.compression.type": "none",
    "kraft.linger.ms": "5",
    "kraft.batch.size": str(512 * 1024),
    "kraft.max.in.flight.requests.per.connection": "5",
    "kraft.retry.backoff.ms": "100",
    "kraft.delivery.timeout.ms": "120000",
    "kraft.request.timeout.ms": "30000",
    "kraft.buffer.memory": str(32 * 1024 * 1024),
    "kraft.enable.idempotence": "true",
}
# Spark's Kafka security options (`kafka.security.protocol`, `kafka.ssl.*`, `kafka.sasl.*`)
# under `kraft.`: TLS with PEM keys and certificates, inline or in files; SASL with the mechanism
# and the user from a JAAS config (ScramLoginModule or PlainLoginModule) or from username and
# password.
_SECURITY_KEYS = {
    "kraft.security.protocol": "PLAINTEXT",
    "kraft.ssl.truststore.type": "PEM",
    "kraft.ssl.truststore.location": "",
    "kraft.ssl.truststore.certificates": "",
    "kraft.ssl.keystore.type": "PEM",
    "kraft.ssl.keystore.location": "",
    "kraft.ssl.keystore.certificate.chain": "",
    "kraft.ssl.keystore.key": "",
    "kraft.ssl.key.password": "",
    "kraft.ssl.endpoint.identification.algorithm": "https",
    "kraft.sasl.mechanism": "",
    "kraft.sasl.jaas.config": "",
    "kraft.sasl.username": "",
    "kraft.sasl.password": "",
}
_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SUBSCRIPTIONS = ("subscribe", "subscribePattern", "assign")
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$")
_DURATION_MS = {None: 1, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}
_DAY_MS = 86_400_000


class OptionError(ValueError):
    """An option is missing, malformed or in conflict with another; the message names it."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """Which partitions a query reads: named topics, topics matching a pattern, or an explicit
    list of partitions."""

    kind: Literal["subscribe", "subscribePattern", "assign"]
    topics: tuple[str, ...] = ()
    pattern: str = ""
    assigned: tuple[TopicPartition, ...] = ()

    def topics_to_describe(self) -> list[str] | None:
        """The topics whose metadata the subscription needs (None: every topic)."""
        if self.kind == "subscribePattern":
            return None
        if self.kind == "assign":
            return sorted({tp.topic for tp in self.assigned})
        return list(self.topics)

    def select(self, partition_counts: Mapping[str, int]) -> list[TopicPartition]:
        """The subscribed partitions that exist, given each existing topic's partition count."""
        if self.kind == "assign":
            return sorted(
                tp for tp in self.assigned if tp.partition < partition_counts.get(tp.topic, 0)
            )
        if self.kind == "subscribe":
            names = [t for t in self.topics if t in partition_counts]
        else:
            regex = re.compile(self.pattern)
            names = [t for t in partition_counts if regex.fullmatch(t)]
        return sorted(
            TopicPartition(topic, p) for topic in names for p in range(partition_counts[topic])
        )


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Where reading starts or ends: EARLIEST or LATEST everywhere, an offset per partition
    (EARLIEST / LATEST allowed as values), or a timestamp everywhere or per partition."""

    everywhere: int | None = None
    offsets: Mapping[TopicPartition, int] | None = None
    timestamp: int | None = None
    timestamps: Mapping[TopicPartition, int] | None = None


@dataclass(frozen=True, slots=True)
class ClientSettings:
    client_id: str
    request_timeout_ms: int
    fetch_max_wait_ms: int
    max_partition_fetch_bytes: int
    # TLS to the brokers (kraft.security.protocol=SSL); None: PLAINTEXT.
    tls: TlsSettings | None = None
    sasl: SaslClientCredentials | None = None


@dataclass(frozen=True, slots=True)
class ReadOptions:
    bootstrap_servers: str
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    timestamp_strategy: Literal["error", "latest"]
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    fail_on_data_loss: bool
    include_headers: bool
    min_partitions: int | None
    client: ClientSettings


@dataclass(frozen=True, slots=True)
class WriteOptions:
    bootstrap_servers: str
    topic: str | None
    client_id: str
    producer: ProducerConfig = field(default_factory=ProducerConfig)
    # TLS to the brokers (kraft.security.protocol=SSL); None: PLAINTEXT.
    tls: TlsSettings | None = None
    sasl: SaslClientCredentials | None = None


class _Options:
    """Case-insensitive access to Spark's options, with errors naming each option."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self._values = {key.lower(): value for key, value in options.items()}

    def get(self, name: str) -> str | None:
        return self._values.get(name.lower())

    def keys(self) -> list[str]:
        return list(self._values)

    def text(self, name: str, default: str) -> str:
        value = self.get(name)
        return default if value is None else value

    def integer(self, name: str, *, minimum: int) -> int | None:
        value = self.get(name)
        if value is None:
            return None
        try:
            number = int(value.strip())
        except ValueError:
            raise OptionError(f"option {name} must be an integer, not {value!r}") from None
        if number < minimum:
            raise OptionError(f"option {name} must be at least {minimum}, not {number}")
        return number

    def boolean(self, name: str, default: bool) -> bool:
        value = self.get(name)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise OptionError(f"option {name} must be true or false, not {value!r}")
        return lowered == "true"

    def duration_ms(self, name: str, default: int) -> int:
        value = self.get(name)
        if value is None:
            return default
        match = _DURATION.match(value.lower())
        if match is None:
            raise OptionError(f"option {name} must be a duration such as 15m or 500ms")
        unit = match.group(2)
        scale = _DAY_MS if unit == "d" else _DURATION_MS[unit]
        return int(match.group(1)) * scale

    def json_object(self, name: str) -> dict[str, Any] | None:
        value = self.get(name)
        if value is None:
            return None
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as error:
            raise OptionError(f"option {name} is not valid JSON: {error}") from None
        if not isinstance(parsed, dict):
            raise OptionError(f"option {name} must be a JSON object")
        return parsed

    def bootstrap(self) -> str:
        value = self.get(_BOOTSTRAP)
        if value is None or not value.strip():
            raise OptionError(f"option {_BOOTSTRAP} is required (host:port,...)")
        try:
            parse_bootstrap_servers(value)
        except ValueError as error:
            raise OptionError(f"option {_BOOTSTRAP}: {error}") from None
        return value

    def security_protocol(self) -> str:
        protocol = self.text("kraft.security.protocol", "PLAINTEXT").strip().upper()
        if protocol not in _SECURITY_PROTOCOLS:
            raise OptionError(
                f"option kraft.security.protocol must be one of {', '.join(_SECURITY_PROTOCOLS)}, "
                f"not {protocol!r}"
            )
        return protocol

    def sasl(self) -> SaslClientCredentials | None:
        """The SASL credentials of `kraft.security.protocol=SASL_PLAINTEXT` or SASL_SSL, else
        None."""
        if self.security_protocol() not in ("SASL_PLAINTEXT", "SASL_SSL"):
            return None
        mechanism = self.text("kraft.sasl.mechanism", "").strip().upper()
        jaas = self.get("kraft.sasl.jaas.config")
        try:
            if jaas is not None:
                username, password = parse_jaas_config(jaas)
            else:
                username = self.text("kraft.sasl.username", "")
                password = self.text("kraft.sasl.password", "")
                if not username or not password:
                    raise ValueError(
                        "SASL needs kraft.sasl.jaas.config or kraft.sasl.username and "
                        "kraft.sasl.password"
                    )
            return SaslClientCredentials(mechanism, username, password)
        except ValueError as error:
            raise OptionError(f"option kraft.sasl.*: {error}") from None

    def check_client_keys(self, allowed: Mapping[str, str]) -> None:
        known = {key.lower() for key in allowed} | {_BOOTSTRAP}
        unknown = sorted(
            key for key in self.keys() if key.startswith(_CLIENT_PREFIX) and key not in known
        )
        if unknown:
            raise OptionError(
                f"unknown option {unknown[0]}; kraft.* options are: " + ", ".join(sorted(known))
            )


def parse_read_options(raw: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """The reader's options, checked; OptionError names the first bad one."""
    options = _Options(raw)
    options.check_client_keys(_READ_CLIENT_KEYS | _SECURITY_KEYS)
    bootstrap = options.bootstrap()
    subscription = _subscription(options)
    starting = _starting(options, streaming=streaming)
    ending = _ending(options, streaming=streaming)
    strategy = options.text("startingOffsetsByTimestampStrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise OptionError("option startingOffsetsByTimestampStrategy must be error or latest")
    for spec_name, spec in (("startingOffsets", starting), ("endingOffsets", ending)):
        if spec.offsets is not None and subscription.kind == "assign":
            missing = set(spec.offsets) ^ set(subscription.assigned)
            if missing:
                raise OptionError(
                    f"option {spec_name} must name exactly the assigned partitions "
                    f"(differs in {', '.join(sorted(map(str, missing)))})"
                )
    max_offsets = options.integer("maxOffsetsPerTrigger", minimum=1)
    min_offsets = options.integer("minOffsetsPerTrigger", minimum=1)
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise OptionError(
            f"option minOffsetsPerTrigger ({min_offsets}) must not exceed "
            f"maxOffsetsPerTrigger ({max_offsets})"
        )
    if not streaming:
        for name in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"):
            if options.get(name) is not None:
                raise OptionError(f"option {name} applies to streaming queries only")
    return ReadOptions(
        bootstrap_servers=bootstrap,
        subscription=subscription,
        starting=starting,
        ending=ending,
        timestamp_strategy="latest" if strategy == "latest" else "error",
        max_offsets_per_trigger=max_offsets,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=options.duration_ms("maxTriggerDelay", 15 * 60_000),
        fail_on_data_loss=options.boolean("failOnDataLoss", True),
        include_headers=options.boolean("includeHeaders", False),
        min_partitions=options.integer("minPartitions", minimum=1),
        client=ClientSettings(
            client_id=options.text("kraft.client.id", _READ_CLIENT_KEYS["kraft.client.id"]),
            request_timeout_ms=_client_integer(options, "kraft.request.timeout.ms"),
            fetch_max_wait_ms=_client_integer(options, "kraft.fetch.max.wait.ms"),
            max_partition_fetch_bytes=_client_integer(options, "kraft.max.partition.fetch.bytes"),
            tls=_tls(options),
            sasl=options.sasl(),
        ),
    )


def _client_integer(options: _Options, name: str) -> int:
    value = options.integer(name, minimum=1)
    return int(_READ_CLIENT_KEYS[name]) if value is None else value


def _subscription(options: _Options) -> Subscription:
    given = [name for name in _SUBSCRIPTIONS if options.get(name) is not None]
    if len(given) != 1:
        which = "none" if not given else ", ".join(given)
        raise OptionError(
            f"exactly one of the options subscribe, subscribePattern, assign is required "
            f"(given: {which})"
        )
    kind = given[0]
    value = options.get(kind) or ""
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError("option subscribe names no topic")
        return Subscription("subscribe", topics=topics)
    if kind == "subscribePattern":
        if not value.strip():
            raise OptionError("option subscribePattern is empty")
        try:
            re.compile(value)
        except re.error as error:
            raise OptionError(f"option subscribePattern is not a valid pattern: {error}") from None
        return Subscription("subscribePattern", pattern=value)
    assigned = _partition_map(options, "assign", _partition_list)
    if not assigned:
        raise OptionError("option assign names no partition")
    return Subscription("assign", assigned=tuple(sorted(assigned)))


def _partition_list(name: str, topic: str, value: Any) -> list[tuple[TopicPartition, int]]:
    if not isinstance(value, list) or not all(
        isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in value
    ):
        raise OptionError(
            f'option {name}: topic {topic!r} needs a list of partitions, as {{"{topic}": [0, 1]}}'
        )
    return [(TopicPartition(topic, p), 0) for p in value]


def _partition_offsets(name: str, topic: str, value: Any) -> list[tuple[TopicPartition, int]]:
    if not isinstance(value, dict):
        raise OptionError(
            f"option {name}: topic {topic!r} needs an object of partition to offset, "
            f'as {{"{topic}": {{"0": 23}}}}'
        )
    pairs = []
    for partition, offset in value.items():
        if not str(partition).isdigit() or not isinstance(offset, int) or isinstance(offset, bool):
            raise OptionError(
                f"option {name}: partition {partition!r} of topic {topic!r} needs an integer "
                f"offset (-2 earliest, -1 latest)"
            )
        pairs.append((TopicPartition(topic, int(partition)), offset))
    return pairs


def _partition_map(options: _Options, name: str, entries: Any) -> dict[TopicPartition, int]:
    parsed = options.json_object(name)
    assert parsed is not None
    result: dict[TopicPartition, int] = {}
    for topic, value in parsed.items():
        for tp, number in entries(name, topic, value):
            result[tp] = number
    return result


def _starting(options: _Options, *, streaming: bool) -> OffsetSpec:
    # As Spark: startingTimestamp wins over startingOffsetsByTimestamp, which wins over
    # startingOffsets.
    timestamp = options.integer("startingTimestamp", minimum=0)
    if timestamp is not None:
        return OffsetSpec(timestamp=timestamp)
    if options.get("startingOffsetsByTimestamp") is not None:
        by_time = _partition_map(options, "startingOffsetsByTimestamp", _partition_offsets)
        if any(value < 0 for value in by_time.values()):
            raise OptionError("option startingOffsetsByTimestamp needs timestamps >= 0")
        return OffsetSpec(timestamps=by_time)
    return _offset_spec(
        options,
        "startingOffsets",
        default=LATEST if streaming else EARLIEST,
        refused=None if streaming else LATEST,
    )


def _ending(options: _Options, *, streaming: bool) -> OffsetSpec:
    if streaming:
        if options.get("endingOffsets") is not None:
            raise OptionError("option endingOffsets applies to batch queries only")
        return OffsetSpec(everywhere=LATEST)
    return _offset_spec(options, "endingOffsets", default=LATEST, refused=EARLIEST)


def _offset_spec(options: _Options, name: str, *, default: int, refused: int | None) -> OffsetSpec:
    value = options.get(name)
    refused_word = {EARLIEST: "earliest", LATEST: "latest", None: None}[refused]
    if value is None:
        return OffsetSpec(everywhere=default)
    word = value.strip().lower()
    if word in ("earliest", "latest"):
        if word == refused_word:
            raise OptionError(f"option {name} cannot be {word} in a batch query")
        return OffsetSpec(everywhere=EARLIEST if word == "earliest" else LATEST)
    if not word.startswith("{"):
        raise OptionError(f"option {name} must be earliest, latest or a JSON object")
    offsets = _partition_map(options, name, _partition_offsets)
    for tp, offset in offsets.items():
        if offset < EARLIEST or offset == refused:
            raise OptionError(f"option {name}: offset {offset} for {tp} is not allowed here")
    return OffsetSpec(offsets=offsets)


def parse_write_options(raw: Mapping[str, str]) -> WriteOptions:
    """The writer's options, checked; OptionError names the first bad one."""
    options = _Options(raw)
    options.check_client_keys(_WRITE_CLIENT_KEYS | _SECURITY_KEYS)
    acks_text = options.text("kraft.acks", "all").strip().lower()
    acks = {"all": -1, "-1": -1, "0": 0, "1": 1}.get(acks_text)
    if acks is None:
        raise OptionError(f"option kraft.acks must be all, -1, 0 or 1, not {acks_text!r}")
    compression_text = options.text("kraft.compression.type", "none").strip().lower()
    try:
        compression = Compression[compression_text.upper()]
    except KeyError:
        raise OptionError(
            "option kraft.compression.type must be none, gzip, snappy, lz4 or zstd"
        ) from None
    explicit_idempotence = options.get("kraft.enable.idempotence")
    idempotent = options.boolean("kraft.enable.idempotence", True)
    if idempotent and acks != -1:
        if explicit_idempotence is not None:
            raise OptionError("option kraft.enable.idempotence=true needs kraft.acks=all")
        # As Kafka's producer: idempotence by default only when the acks allow it.
        idempotent = False

    def number(name: str, minimum: int) -> int:
        value = options.integer(name, minimum=minimum)
        return int(_WRITE_CLIENT_KEYS[name]) if value is None else value

    topic = options.get("topic")
    return WriteOptions(
        bootstrap_servers=options.bootstrap(),
        topic=topic.strip() if topic is not None and topic.strip() else None,
        client_id=options.text("kraft.client.id", _WRITE_CLIENT_KEYS["kraft.client.id"]),
        producer=ProducerConfig(
            acks=acks,
            compression=compression,
            linger_ms=number("kraft.linger.ms", 0),
            batch_size=number("kraft.batch.size", 1),
            max_in_flight=number("kraft.max.in.flight.requests.per.connection", 1),
            retry_backoff_ms=number("kraft.retry.backoff.ms", 0),
            delivery_timeout_ms=number("kraft.delivery.timeout.ms", 1),
            request_timeout_ms=number("kraft.request.timeout.ms", 1),
            buffer_memory=number("kraft.buffer.memory", 1),
            idempotent=idempotent,
        ),
        tls=_tls(options),
        sasl=options.sasl(),
    )


def _tls(options: _Options) -> TlsSettings | None:
    """The TLS settings of `kraft.security.protocol=SSL` from the `kraft.ssl.*` options (PEM);
    None for PLAINTEXT."""
    if options.security_protocol() not in ("SSL", "SASL_SSL"):
        return None
    for name in ("kraft.ssl.truststore.type", "kraft.ssl.keystore.type"):
        if options.text(name, "PEM").strip().upper() != "PEM":
            raise OptionError(f"option {name} must be PEM (the only store type supported)")

    def pem(text_option: str, location_option: str) -> Pem | None:
        text, location = options.get(text_option), options.get(location_option)
        if text and text.strip():
            return Pem(text=text)
        if location and location.strip():
            return Pem(path=Path(location.strip()))
        return None

    keystore = pem("kraft.ssl.keystore.certificate.chain", "kraft.ssl.keystore.location")
    key = pem("kraft.ssl.keystore.key", "kraft.ssl.keystore.location")
    password = options.get("kraft.ssl.key.password")
    algorithm = options.text("kraft.ssl.endpoint.identification.algorithm", "https").strip()
    settings = TlsSettings(
        certificate_chain=keystore,
        private_key=key,
        key_password=password or None,
        trusted_certificates=pem(
            "kraft.ssl.truststore.certificates", "kraft.ssl.truststore.location"
        ),
        check_hostname=algorithm.lower() == "https",
    )
    try:
        client_context(settings)
    except TlsConfigError as error:
        raise OptionError(f"option kraft.ssl.*: {error}") from None
    return settings
