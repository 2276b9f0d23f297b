"""Option parsing without Spark: Spark's Kafka option names and values, and errors naming the
option at fault."""

from __future__ import annotations

import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from net.record_batch import Compression
from net.sasl import SaslClientCredentials
from spark_connector.options import (
    EARLIEST,
    LATEST,
    OptionError,
    parse_read_options,
    parse_write_options,
)
from spark_connector.planning import TopicPartition
from spark_connector.rows import arrow_schema, row_schema

BOOTSTRAP = {"kraft.bootstrap.servers": "127.0.0.1:9092"}


def test_defaults_follow_spark_kafka_source() -> None:
    batch = parse_read_options({**BOOTSTRAP, "subscribe": "a, b"}, streaming=False)
    assert batch.subscription.topics == ("a", "b")
    assert batch.starting.everywhere == EARLIEST
    assert batch.ending.everywhere == LATEST
    assert batch.fail_on_data_loss is True
    assert batch.include_headers is False
    stream = parse_read_options({**BOOTSTRAP, "subscribe": "a"}, streaming=True)
    assert stream.starting.everywhere == LATEST
    assert stream.max_trigger_delay_ms == 15 * 60_000


def test_json_offsets_assign_and_timestamps() -> None:
    options = parse_read_options(
        {
            **BOOTSTRAP,
            "assign": '{"a": [0, 1]}',
            "startingoffsets": '{"a": {"0": 23, "1": -2}}',
            "endingoffsets": '{"a": {"0": -1, "1": 50}}',
        },
        streaming=False,
    )
    assert options.subscription.assigned == (TopicPartition("a", 0), TopicPartition("a", 1))
    assert options.starting.offsets == {TopicPartition("a", 0): 23, TopicPartition("a", 1): -2}
    assert options.ending.offsets == {TopicPartition("a", 0): -1, TopicPartition("a", 1): 50}
    by_time = parse_read_options(
        {
            **BOOTSTRAP,
            "subscribe": "a",
            "startingtimestamp": "1000",
            "startingoffsetsbytimestamp": '{"a": {"0": 5}}',
        },
        streaming=True,
    )
    # startingTimestamp wins, as in Spark.
    assert by_time.starting.timestamp == 1000
    assert by_time.starting.timestamps is None


@pytest.mark.parametrize(
    ("options", "streaming", "named"),
    [
        ({"kraft.bootstrap.servers": None, "subscribe": "a"}, False, "kraft.bootstrap.servers"),
        ({"kraft.bootstrap.servers": "nohost", "subscribe": "a"}, False, "kraft.bootstrap.servers"),
        ({}, False, "subscribe, subscribePattern, assign"),
        ({"subscribe": "a", "assign": '{"a": [0]}'}, False, "given: subscribe, assign"),
        ({"assign": "[0]"}, False, "option assign must be a JSON object"),
        ({"assign": '{"a": "0"}'}, False, "option assign"),
        ({"subscribePattern": "("}, False, "option subscribePattern"),
        ({"subscribe": "a", "startingOffsets": "latest"}, False, "option startingOffsets"),
        ({"subscribe": "a", "startingOffsets": "soon"}, False, "option startingOffsets"),
        (
            {"subscribe": "a", "startingOffsets": '{"a": {"0": "x"}}'},
            False,
            "option startingOffsets",
        ),
        ({"subscribe": "a", "endingOffsets": "earliest"}, False, "option endingOffsets"),
        ({"subscribe": "a", "endingOffsets": "latest"}, True, "option endingOffsets"),
        (
            {"assign": '{"a": [0]}', "startingOffsets": '{"a": {"1": 5}}'},
            False,
            "option startingOffsets",
        ),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "many"}, True, "option maxOffsetsPerTrigger"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "0"}, True, "option maxOffsetsPerTrigger"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "10"}, False, "option maxOffsetsPerTrigger"),
        (
            {"subscribe": "a", "maxOffsetsPerTrigger": "5", "minOffsetsPerTrigger": "9"},
            True,
            "option minOffsetsPerTrigger",
        ),
        ({"subscribe": "a", "maxTriggerDelay": "soon"}, True, "option maxTriggerDelay"),
        ({"subscribe": "a", "failOnDataLoss": "maybe"}, False, "option failOnDataLoss"),
        ({"subscribe": "a", "includeHeaders": "yes"}, False, "option includeHeaders"),
        ({"subscribe": "a", "minPartitions": "0"}, False, "option minPartitions"),
        ({"subscribe": "a", "startingTimestamp": "-5"}, False, "option startingTimestamp"),
        ({"subscribe": "a", "kraft.group.id": "g"}, False, "kraft.group.id"),
    ],
)
def test_bad_read_options_are_named(
    options: dict[str, str | None], streaming: bool, named: str
) -> None:
    given = {**BOOTSTRAP, **options}
    # Spark hands options over with lower-cased keys.
    raw = {key.lower(): value for key, value in given.items() if value is not None}
    with pytest.raises(OptionError, match=named.replace("(", r"\(")):
        parse_read_options(raw, streaming=streaming)


def test_write_options_pass_producer_settings_through() -> None:
    options = parse_write_options(
        {
            **BOOTSTRAP,
            "topic": "out",
            "kraft.compression.type": "zstd",
            "kraft.linger.ms": "20",
            "kraft.batch.size": "65536",
        }
    )
    assert options.topic == "out"
    assert options.producer.compression is Compression.ZSTD
    assert options.producer.linger_ms == 20
    assert options.producer.batch_size == 65536
    assert options.producer.idempotent is True
    assert options.producer.acks == -1
    # acks=1 turns the default idempotence off, as Kafka's producer does.
    relaxed = parse_write_options({**BOOTSTRAP, "kraft.acks": "1"})
    assert (relaxed.producer.acks, relaxed.producer.idempotent) == (1, False)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"kraft.acks": "most"}, "option kraft.acks"),
        ({"kraft.compression.type": "brotli"}, "option kraft.compression.type"),
        ({"kraft.acks": "1", "kraft.enable.idempotence": "true"}, "kraft.enable.idempotence"),
        ({"kraft.linger.ms": "-1"}, "option kraft.linger.ms"),
        ({"kraft.transactional.id": "t"}, "kraft.transactional.id"),
    ],
)
def test_bad_write_options_are_named(options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=named):
        parse_write_options({**BOOTSTRAP, **options})


@pytest.mark.parametrize("include_headers", [False, True])
def test_arrow_schema_is_the_one_spark_checks_against(include_headers: bool) -> None:
    spark_form = to_arrow_schema(row_schema(include_headers), timezone="UTC")
    assert arrow_schema(include_headers).equals(spark_form, check_metadata=True)


def test_sasl_options_give_the_connections_credentials() -> None:
    base = {"kraft.bootstrap.servers": "h:1", "subscribe": "t"}
    assert parse_read_options(base, streaming=False).client.sasl is None
    jaas = {
        **base,
        "kraft.security.protocol": "SASL_PLAINTEXT",
        "kraft.sasl.mechanism": "SCRAM-SHA-256",
        "kraft.sasl.jaas.config": 'x.ScramLoginModule required username="u" password="p";',
    }
    assert parse_read_options(jaas, streaming=False).client.sasl == SaslClientCredentials(
        "SCRAM-SHA-256", "u", "p"
    )
    pair = {
        "kraft.bootstrap.servers": "h:1",
        "kraft.security.protocol": "sasl_plaintext",
        "kraft.sasl.mechanism": "plain",
        "kraft.sasl.username": "u",
        "kraft.sasl.password": "p",
    }
    assert parse_write_options(pair).sasl == SaslClientCredentials("PLAIN", "u", "p")
    assert "p" not in repr(parse_write_options(pair).sasl).replace("PLAIN", "")
    for bad in (
        {**base, "kraft.security.protocol": "KERBEROS"},
        {**base, "kraft.security.protocol": "SASL_PLAINTEXT", "kraft.sasl.mechanism": "PLAIN"},
        {**jaas, "kraft.sasl.mechanism": "GSSAPI"},
    ):
        with pytest.raises(OptionError, match=r"kraft\.s"):
            parse_read_options(bad, streaming=False)
