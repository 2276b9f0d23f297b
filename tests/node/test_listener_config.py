"""Kafka's listener keys: named listeners, listener.security.protocol.map,
controller.listener.names, inter.broker.listener.name and the ssl.* keys of TLS listeners; bad
listener configuration is refused at start with a message naming the key."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from bench.tls_certificates import SERVER_SUBJECT
from node.certificates import CertificateAuthority, KeyPair
from node.config import ConfigError, Endpoint, NodeConfig, SecurityProtocol, load_config

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
    assert config.listeners == Endpoint(host="127.0.0.1", port=9092)
    assert config.listener_name == "PLAINTEXT"
    assert config.listener_security_protocol is SecurityProtocol.PLAINTEXT
    assert config.controller_security_protocol is SecurityProtocol.PLAINTEXT
    assert config.kafka_ssl_context() is None
    assert config.controller_ssl_context() is None
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
    assert config.listeners == Endpoint(host="0.0.0.0", port=9092)
    assert config.controller_listener == Endpoint(host="127.0.0.1", port=9193)
    assert config.listener_name == "CLIENT"
    assert config.listener_security_protocol is SecurityProtocol.SSL
    assert config.controller_security_protocol is SecurityProtocol.SSL
    server = config.kafka_ssl_context()
    assert server is not None
    assert server.verify_mode == ssl.CERT_REQUIRED
    assert config.controller_ssl_context() is not None
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
            "one Kafka listener is supported",
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
