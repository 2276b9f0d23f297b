"""Kafka's listener keys: named listeners, listener.security.protocol.map,
controller.listener.names, inter.broker.listener.name and the ssl.* keys of TLS listeners; bad
listener configuration is refused at start with a message naming the key."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from bench.tls_certificates import SERVER_SUBJECT
from net.sasl import SaslClientCredentials, ScramCredential
from net.tls import Pem
from node.certificates import CertificateAuthority, KeyPair
from node.config import (
    ConfigError,
    Endpoint,
    ListenerAddress,
    NodeConfig,
    SecurityProtocol,
    load_config,
)

COMMON = """\
node.id=1
cluster.id=AbCdEfGhIjKlMnOpQrStUv
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:9193
log.dirs=/var/lib/kraft/a
"""
LEGACY = COMMON + "listeners=PLAINTEXT://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n"


@pytest.fixture(scope="module")
def server_keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertificateAuthority, KeyPair]:
    authority = CertificateAuthority(tmp_path_factory.mktemp("ca"))
    return authority, authority.issue("server", SERVER_SUBJECT, server=True)


def no_users(user: str, mechanism: str) -> ScramCredential | None:
    return None


def load(tmp_path: Path, text: str) -> NodeConfig:
    path = tmp_path / "node.properties"
    path.write_text(text)
    return load_config(path, environment={})


def tls_keys(keys: tuple[CertificateAuthority, KeyPair]) -> str:
    """Kafka's PEM keystore file (the private key and the certificate chain in one file) and
    truststore file."""
    authority, server = keys
    keystore = server.key_path.with_suffix(".keystore.pem")
    keystore.write_text(server.key_pem + server.certificate_pem)
    return (
        f"ssl.keystore.location={keystore}\nssl.truststore.location={authority.certificate_path}\n"
    )


def test_a_bare_configuration_is_plaintext_as_before(tmp_path: Path) -> None:
    config = load(tmp_path, LEGACY)
    (listener,) = config.listeners
    assert listener == ListenerAddress(
        name="PLAINTEXT", endpoint=Endpoint(host="127.0.0.1", port=9092)
    )
    assert config.inter_broker_listener == "PLAINTEXT"
    assert config.security_protocol("PLAINTEXT") is SecurityProtocol.PLAINTEXT
    assert config.controller_security_protocol is SecurityProtocol.PLAINTEXT
    security = config.listener_security("PLAINTEXT", no_users)
    assert security.ssl_context is None and security.sasl is None
    assert config.controller_listener_security(no_users).ssl_context is None
    assert config.inter_broker_ssl_context() is None


def test_kafkas_named_listeners_put_client_and_controller_traffic_on_tls(
    tmp_path: Path, server_keys: tuple[CertificateAuthority, KeyPair]
) -> None:
    config = load(
        tmp_path,
        COMMON
        + "listeners=CLIENT://:9092,CONTROLLER://127.0.0.1:9193\n"
        + "controller.listener.names=CONTROLLER\n"
        + "listener.security.protocol.map=CLIENT:SSL,CONTROLLER:SSL\n"
        + "inter.broker.listener.name=CLIENT\n"
        + "ssl.client.auth=required\n"
        + tls_keys(server_keys),
    )
    assert [str(listener) for listener in config.listeners] == ["CLIENT://0.0.0.0:9092"]
    assert config.controller_listener == Endpoint(host="127.0.0.1", port=9193)
    assert config.inter_broker_listener == "CLIENT"
    assert config.controller_security_protocol is SecurityProtocol.SSL
    server = config.listener_security("CLIENT", no_users).ssl_context
    assert server is not None
    assert server.verify_mode == ssl.CERT_REQUIRED
    assert config.controller_listener_security(no_users).ssl_context is not None
    client = config.inter_broker_ssl_context()
    assert client is not None
    assert client.check_hostname


@pytest.mark.parametrize(
    ("listeners", "named"),
    [
        # A listener name with no security protocol.
        (
            "listeners=CLIENT://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n",
            "listener name CLIENT is not in listener.security.protocol.map",
        ),
        (
            "listeners=PLAINTEXT://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n"
            "listener.security.protocol.map=PLAINTEXT:TLS\n",
            r"listener\.security\.protocol\.map",
        ),
        (
            "listeners=PLAINTEXT://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n"
            "inter.broker.listener.name=REPLICATION\n",
            "inter.broker.listener.name REPLICATION is not a listener",
        ),
        (
            "listeners=CLIENT://127.0.0.1:9092,REPLICATION://127.0.0.1:9094\n"
            "controller.listener=127.0.0.1:9193\n"
            "listener.security.protocol.map=CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT\n",
            "inter.broker.listener.name is required with several listeners",
        ),
        (
            "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9193\n"
            "controller.listener.names=CONTROLLER\ncontroller.listener=127.0.0.1:9193\n",
            "set one of them",
        ),
        (
            "listeners=PLAINTEXT://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n"
            "advertised.listeners=CLIENT://broker-1:9092\n",
            "advertised.listeners: listener CLIENT is not in listeners",
        ),
        (
            "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9193\n"
            "controller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT\n",
            "controller.listener.names: listener name CONTROLLER is not in",
        ),
        (
            "listeners=CLIENT://127.0.0.1:9092,CLIENT://127.0.0.1:9094\n"
            "controller.listener=127.0.0.1:9193\nlistener.security.protocol.map=CLIENT:SSL\n",
            "the listener name CLIENT repeats",
        ),
        (
            "listeners=CLIENT://127.0.0.1:9092,REPLICATION://0.0.0.0:9092\n"
            "controller.listener=127.0.0.1:9193\ninter.broker.listener.name=REPLICATION\n"
            "listener.security.protocol.map=CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT\n",
            "CLIENT and REPLICATION both use port 9092",
        ),
        (
            "listeners=PLAINTEXT://127.0.0.1:9193\ncontroller.listener=127.0.0.1:9193\n",
            "PLAINTEXT and controller.listener both use port 9193",
        ),
        (
            "listeners=CLIENT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9193\n"
            "controller.listener.names=CONTROLLER\ninter.broker.listener.name=CONTROLLER\n"
            "listener.security.protocol.map=CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT\n",
            "inter.broker.listener.name CONTROLLER is not a listener of listeners",
        ),
        (
            "listeners=PLAINTEXT://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n"
            "listener.name.replication.ssl.client.auth=required\n",
            r"listener\.name\.replication\.\*: there is no listener REPLICATION",
        ),
        (
            "listeners=PLAINTEXT://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n"
            "listener.name.plaintext.ssl.client.auth=sometimes\n",
            r"listener\.name\.plaintext\.ssl\.client\.auth: ",
        ),
        (
            "listeners=PLAINTEXT://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n"
            "listener.name.plaintext.sasl.enabled.mechanisms=GSSAPI\n",
            r"listener\.name\.plaintext\.sasl\.enabled\.mechanisms: supported SASL",
        ),
        (
            "listeners=PLAINTEXT://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n"
            "listener.name.plaintext.log.dirs=/tmp\n",
            r"unknown configuration key.*listener\.name\.plaintext\.log\.dirs",
        ),
        (
            "listeners=CLIENT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9193\n"
            "controller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=CLIENT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT\n",
            "the SASL controller listener CONTROLLER needs inter.broker.sasl.username",
        ),
        (
            "listeners=CLIENT://127.0.0.1:9092,REPLICATION://127.0.0.1:9094\n"
            "controller.listener=127.0.0.1:9193\ninter.broker.listener.name=REPLICATION\n"
            "listener.security.protocol.map=CLIENT:PLAINTEXT,REPLICATION:SASL_PLAINTEXT\n"
            "listener.name.replication.sasl.enabled.mechanisms=SCRAM-SHA-256\n"
            "inter.broker.sasl.username=broker\ninter.broker.sasl.password=secret\n",
            "sasl.mechanism.inter.broker.protocol: SCRAM-SHA-512 is not enabled on listener "
            "REPLICATION",
        ),
    ],
)
def test_bad_listener_configuration_is_named_at_start(
    tmp_path: Path, listeners: str, named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        load(tmp_path, COMMON + listeners)


def test_missing_or_incomplete_tls_keys_are_named_at_start(
    tmp_path: Path, server_keys: tuple[CertificateAuthority, KeyPair]
) -> None:
    ssl_listener = "listeners=SSL://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n"
    missing = tmp_path / "no-such-key.pem"
    with pytest.raises(ConfigError, match=r"listener SSL: cannot load .*no-such-key\.pem"):
        load(tmp_path, COMMON + ssl_listener + f"ssl.keystore.location={missing}\n")
    with pytest.raises(ConfigError, match=r"needs ssl\.keystore\.certificate\.chain"):
        load(tmp_path, COMMON + ssl_listener)
    _authority, server = server_keys
    with pytest.raises(ConfigError, match=r"ssl\.client\.auth=required needs ssl\.truststore"):
        load(
            tmp_path,
            COMMON
            + ssl_listener
            + f"ssl.keystore.location={server.certificate_path}\n"
            + f"ssl.keystore.key={server.key_pem.strip().replace(chr(10), '')}\n"
            + "ssl.client.auth=required\n",
        )


def test_describe_configs_spells_the_listener_and_hides_the_key(
    tmp_path: Path, server_keys: tuple[CertificateAuthority, KeyPair]
) -> None:
    _authority, server = server_keys
    config = load(
        tmp_path,
        COMMON
        + "listeners=SSL://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n"
        + "admin.listener=https://127.0.0.1:9292\n"
        + f"ssl.keystore.certificate.chain={server.certificate_pem.strip().replace(chr(10), '')}\n"
        + f"ssl.keystore.key={server.key_pem.strip().replace(chr(10), '')}\n",
    )
    entries = {entry.name: entry for entry in config.broker_config_entries()}
    assert entries["listeners"].value == "SSL://127.0.0.1:9092"
    assert entries["admin.listener"].value == "https://127.0.0.1:9292"
    assert entries["ssl.keystore.key"].sensitive
    assert config.admin_ssl_context() is not None


THREE_LISTENERS = (
    COMMON
    + "listeners=CLIENT://:9092,REPLICATION://10.0.0.1:9093,CONTROLLER://10.0.0.1:9193\n"
    + "advertised.listeners=CLIENT://broker-1.example:19092\n"
    + "controller.listener.names=CONTROLLER\n"
    + "listener.security.protocol.map=CLIENT:SASL_SSL,REPLICATION:SSL,CONTROLLER:SASL_PLAINTEXT\n"
    + "inter.broker.listener.name=REPLICATION\n"
    + "inter.broker.sasl.username=broker\ninter.broker.sasl.password=broker-secret\n"
    + "sasl.mechanism.controller.protocol=SCRAM-SHA-256\n"
)


def test_several_named_listeners_each_with_its_own_protocol(
    tmp_path: Path, server_keys: tuple[CertificateAuthority, KeyPair]
) -> None:
    config = load(tmp_path, THREE_LISTENERS + tls_keys(server_keys))
    assert [str(listener) for listener in config.listeners] == [
        "CLIENT://0.0.0.0:9092",
        "REPLICATION://10.0.0.1:9093",
    ]
    assert config.controller_listener == Endpoint(host="10.0.0.1", port=9193)
    # Advertised per name; a name not advertised is advertised where it listens.
    assert config.advertised_listener("CLIENT") == Endpoint(host="broker-1.example", port=19092)
    assert config.advertised_listener("REPLICATION") == Endpoint(host="10.0.0.1", port=9093)
    assert config.inter_broker_listener == "REPLICATION"
    client = config.listener_security("CLIENT", no_users)
    assert client.name == "CLIENT" and client.ssl_context is not None and client.sasl is not None
    replication = config.listener_security("REPLICATION", no_users)
    assert replication.ssl_context is not None and replication.sasl is None
    controller = config.controller_listener_security(no_users)
    assert controller.ssl_context is None and controller.sasl is not None
    # Replication is SSL without SASL; the controllers are reached with the node's user.
    assert config.inter_broker_ssl_context() is not None
    assert config.inter_broker_sasl() is None
    assert config.controller_client_ssl_context() is None
    assert config.controller_sasl() == SaslClientCredentials(
        "SCRAM-SHA-256", "broker", "broker-secret"
    )
    entries = {entry.name: entry for entry in config.broker_config_entries()}
    assert entries["listeners"].value == "CLIENT://0.0.0.0:9092,REPLICATION://10.0.0.1:9093"
    # Kafka's SecurityProtocol ids, as BrokerRegistration carries them.
    assert [config.security_protocol(name).kafka_id for name in config.listener_names] == [3, 1]
    assert SecurityProtocol.PLAINTEXT.kafka_id == 0
    assert SecurityProtocol.SASL_PLAINTEXT.kafka_id == 2


def test_listener_overrides_win_over_the_global_keys_for_their_listener(
    tmp_path: Path, server_keys: tuple[CertificateAuthority, KeyPair]
) -> None:
    other = CertificateAuthority(tmp_path / "other", "other CA")
    config = load(
        tmp_path,
        THREE_LISTENERS
        + tls_keys(server_keys)
        + "ssl.client.auth=none\n"
        + "listener.name.replication.ssl.client.auth=required\n"
        + f"listener.name.replication.ssl.truststore.location={other.certificate_path}\n"
        + "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512\n"
        + "listener.name.client.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN\n",
    )
    client = config.listener_security("CLIENT", no_users)
    replication = config.listener_security("REPLICATION", no_users)
    assert client.ssl_context is not None and client.ssl_context.verify_mode == ssl.CERT_NONE
    assert replication.ssl_context is not None
    assert replication.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert config.tls_settings("REPLICATION").trusted_certificates == Pem(
        path=other.certificate_path
    )
    assert config.tls_settings("CLIENT").trusted_certificates == Pem(
        path=server_keys[0].certificate_path
    )
    # The key pair is not overridden: the global one serves.
    assert (
        config.tls_settings("REPLICATION").certificate_chain
        == config.tls_settings("CLIENT").certificate_chain
    )
    assert client.sasl is not None
    assert tuple(client.sasl.enabled_mechanisms) == ("SCRAM-SHA-512", "PLAIN")
    controller = config.controller_listener_security(no_users).sasl
    assert controller is not None
    assert tuple(controller.enabled_mechanisms) == ("SCRAM-SHA-256", "SCRAM-SHA-512")


def test_listener_overrides_come_from_the_environment_too(tmp_path: Path) -> None:
    path = tmp_path / "node.properties"
    path.write_text(LEGACY + "listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT\n")
    config = load_config(
        path,
        environment={"KRAFT_LISTENER_NAME_PLAINTEXT_SASL_ENABLED_MECHANISMS": "PLAIN"},
    )
    sasl = config.listener_security("PLAINTEXT", no_users).sasl
    assert sasl is not None and tuple(sasl.enabled_mechanisms) == ("PLAIN",)
    with pytest.raises(ConfigError, match=r"KRAFT_LISTENER_NAME_PLAINTEXT_NO_SUCH_KEY"):
        load_config(path, environment={"KRAFT_LISTENER_NAME_PLAINTEXT_NO_SUCH_KEY": "x"})


def test_a_tls_listener_bounds_the_handshake(
    tmp_path: Path, server_keys: tuple[CertificateAuthority, KeyPair]
) -> None:
    config = load(
        tmp_path,
        COMMON
        + "listeners=SSL://127.0.0.1:9092\ncontroller.listener=127.0.0.1:9193\n"
        + "ssl.handshake.timeout.ms=2500\n"
        + tls_keys(server_keys),
    )
    assert config.listener_security("SSL", no_users).ssl_handshake_timeout == 2.5
