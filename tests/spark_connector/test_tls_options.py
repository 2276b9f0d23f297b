"""The connector's TLS options (Spark's `kafka.security.protocol` / `kafka.ssl.*` under
`kraft.`): parsed into the settings executors connect with, which a TLS listener requiring
client certificates accepts; bad ones are named."""

from __future__ import annotations

import pytest

from bench.tls_certificates import ALICE_SUBJECT, SERVER_SUBJECT
from net.api_registry import ApiRegistry
from net.client import NodeConnection
from net.server import KafkaServer, ListenerSecurity
from net.tls import ClientAuth, Pem, TlsSettings, client_context, server_context
from node.certificates import CertificateAuthority, KeyPair
from spark_connector.options import OptionError, parse_read_options, parse_write_options

BOOTSTRAP = {"kraft.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertificateAuthority, KeyPair, KeyPair]:
    authority = CertificateAuthority(tmp_path_factory.mktemp("ca"))
    server = authority.issue("server", SERVER_SUBJECT, server=True)
    return authority, server, authority.issue("alice", ALICE_SUBJECT)


def test_plaintext_is_the_default() -> None:
    assert parse_read_options(BOOTSTRAP, streaming=False).client.tls is None
    assert parse_write_options({"kraft.bootstrap.servers": "127.0.0.1:9092"}).tls is None


async def test_ssl_options_connect_to_a_listener_that_requires_client_certificates(
    keys: tuple[CertificateAuthority, KeyPair, KeyPair],
) -> None:
    authority, server, alice = keys
    read = parse_read_options(
        {
            **BOOTSTRAP,
            "kraft.security.protocol": "SSL",
            "kraft.ssl.truststore.type": "PEM",
            "kraft.ssl.truststore.location": str(authority.certificate_path),
            "kraft.ssl.keystore.type": "PEM",
            "kraft.ssl.keystore.certificate.chain": alice.certificate_pem,
            "kraft.ssl.keystore.key": alice.key_pem,
        },
        streaming=False,
    )
    write = parse_write_options(
        {
            "kraft.bootstrap.servers": "127.0.0.1:9092",
            "kraft.security.protocol": "ssl",
            "kraft.ssl.truststore.certificates": authority.certificate_pem,
            "kraft.ssl.keystore.location": str(alice.certificate_path),
            "kraft.ssl.keystore.key": alice.key_pem,
        }
    )
    listener = server_context(
        TlsSettings(
            certificate_chain=Pem(path=server.certificate_path),
            private_key=Pem(path=server.key_path),
            trusted_certificates=Pem(path=authority.certificate_path),
            client_auth=ClientAuth.REQUIRED,
        )
    )
    async with KafkaServer(ApiRegistry(), listener=ListenerSecurity("SSL", listener)) as kafka:
        for settings in (read.client.tls, write.tls):
            assert settings is not None
            async with NodeConnection(
                "127.0.0.1", kafka.port, ssl_context=client_context(settings), connect_timeout=5
            ) as connection:
                assert connection.connected


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"kraft.security.protocol": "KERBEROS"}, r"kraft\.security\.protocol"),
        (
            {"kraft.security.protocol": "SSL", "kraft.ssl.truststore.type": "JKS"},
            r"kraft\.ssl\.truststore\.type must be PEM",
        ),
        (
            {"kraft.security.protocol": "SSL", "kraft.ssl.truststore.location": "/no/such.pem"},
            r"kraft\.ssl\.\*: cannot load the trusted certificates \(/no/such\.pem",
        ),
        ({"kraft.ssl.trustore.location": "/x"}, r"unknown option kraft\.ssl\.trustore\.location"),
    ],
)
def test_bad_tls_options_are_named(options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=named):
        parse_read_options({**BOOTSTRAP, **options}, streaming=False)
