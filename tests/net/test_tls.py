"""TLS on KafkaServer and NodeConnection over real sockets: the principal of a connection is
its client certificate's subject (Kafka's default rule), `ssl.client.auth` none / requested /
required, and clients the listener refuses (plaintext, untrusted, without a certificate)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ssl
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography.x509.oid import NameOID
from kio.schema.errors import ErrorCode

from bench.tls_certificates import ALICE_PRINCIPAL, ALICE_SUBJECT, SERVER_SUBJECT
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.client import KafkaConnectionError, NodeConnection
from net.principal import ANONYMOUS, KafkaPrincipal
from net.protocol import make_entity
from net.server import KafkaServer, ListenerSecurity
from net.tls import (
    ClientAuth,
    Pem,
    TlsConfigError,
    TlsSettings,
    client_context,
    server_context,
    subject_name,
)
from node.certificates import CertificateAuthority, KeyPair
from tests.net.schemas import request_type, response_type


class Certificates:
    def __init__(self, directory: Path) -> None:
        self.ca = CertificateAuthority(directory / "ca")
        self.server = self.ca.issue("server", SERVER_SUBJECT, server=True)
        self.alice = self.ca.issue("alice", ALICE_SUBJECT)
        # A client certificate from a CA the server does not trust.
        self.mallory = CertificateAuthority(directory / "other", "other CA").issue(
            "mallory", {NameOID.COMMON_NAME: "alice"}
        )


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return Certificates(tmp_path_factory.mktemp("tls"))


def principal_registry(seen: list[tuple[KafkaPrincipal, str]]) -> ApiRegistry:
    """Heartbeat records the principal and listener of the request and answers it."""
    registry = ApiRegistry()

    async def heartbeat(context: RequestContext, request: Any) -> Any:
        seen.append((context.principal, context.listener))
        return make_entity(
            response_type(ApiKey.HEARTBEAT, context.header.api_version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
        )

    registry.register(ApiKey.HEARTBEAT, heartbeat, min_version=0, max_version=4)
    return registry


@asynccontextmanager
async def tls_server(
    certificates: Certificates, client_auth: ClientAuth, seen: list[tuple[KafkaPrincipal, str]]
) -> AsyncIterator[KafkaServer]:
    context = server_context(
        TlsSettings(
            certificate_chain=Pem(path=certificates.server.certificate_path),
            private_key=Pem(text=certificates.server.key_pem),
            trusted_certificates=Pem(path=certificates.ca.certificate_path),
            client_auth=client_auth,
        )
    )
    async with KafkaServer(
        principal_registry(seen), listener=ListenerSecurity("CLIENT", context)
    ) as server:
        yield server


def client(certificates: Certificates, key_pair: KeyPair | None) -> ssl.SSLContext:
    return client_context(
        TlsSettings(
            certificate_chain=None if key_pair is None else Pem(path=key_pair.certificate_path),
            private_key=None if key_pair is None else Pem(path=key_pair.key_path),
            trusted_certificates=Pem(text=certificates.ca.certificate_pem),
        )
    )


async def heartbeat_over(port: int, context: ssl.SSLContext) -> None:
    async with NodeConnection(
        "127.0.0.1", port, ssl_context=context, connect_timeout=5, request_timeout=5
    ) as connection:
        version = connection.version_for(ApiKey.HEARTBEAT)
        await connection.send(
            make_entity(
                request_type(ApiKey.HEARTBEAT, version),
                group_id="g",
                generation_id=1,
                member_id="m",
                group_instance_id=None,
            )
        )


@pytest.mark.parametrize(
    ("client_auth", "with_certificate", "principal"),
    [
        (ClientAuth.REQUIRED, True, ALICE_PRINCIPAL),
        (ClientAuth.REQUESTED, True, ALICE_PRINCIPAL),
        (ClientAuth.REQUESTED, False, str(ANONYMOUS)),
        # As Kafka: a certificate the listener did not ask for names no one.
        (ClientAuth.NONE, True, str(ANONYMOUS)),
        (ClientAuth.NONE, False, str(ANONYMOUS)),
    ],
)
async def test_the_principal_is_the_verified_client_certificate_subject(
    certificates: Certificates, client_auth: ClientAuth, with_certificate: bool, principal: str
) -> None:
    seen: list[tuple[KafkaPrincipal, str]] = []
    async with tls_server(certificates, client_auth, seen) as server:
        key_pair = certificates.alice if with_certificate else None
        await heartbeat_over(server.port, client(certificates, key_pair))
    assert [(str(p), listener) for p, listener in seen] == [(principal, "CLIENT")]


@pytest.mark.parametrize("offender", ["no certificate", "untrusted certificate"])
async def test_a_client_the_required_client_auth_refuses_gets_no_request_through(
    certificates: Certificates, offender: str
) -> None:
    seen: list[tuple[KafkaPrincipal, str]] = []
    key_pair = certificates.mallory if offender == "untrusted certificate" else None
    async with tls_server(certificates, ClientAuth.REQUIRED, seen) as server:
        with pytest.raises(KafkaConnectionError):
            await heartbeat_over(server.port, client(certificates, key_pair))
        assert not server.connections
    assert seen == []


async def test_a_client_that_does_not_trust_the_server_certificate_gives_up(
    certificates: Certificates, tmp_path: Path
) -> None:
    seen: list[tuple[KafkaPrincipal, str]] = []
    stranger = CertificateAuthority(tmp_path, "stranger CA")
    untrusting = client_context(
        TlsSettings(trusted_certificates=Pem(path=stranger.certificate_path))
    )
    async with tls_server(certificates, ClientAuth.NONE, seen) as server:
        with pytest.raises(KafkaConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
            await heartbeat_over(server.port, untrusting)
    assert seen == []


async def test_a_plaintext_client_on_a_tls_listener_is_closed_unanswered(
    certificates: Certificates,
) -> None:
    seen: list[tuple[KafkaPrincipal, str]] = []
    async with tls_server(certificates, ClientAuth.NONE, seen) as server:
        with pytest.raises(KafkaConnectionError):
            async with NodeConnection(
                "127.0.0.1", server.port, connect_timeout=5, request_timeout=5
            ):
                pass
        # A raw Kafka request (ApiVersions v0) on the TLS port: the server answers with a TLS
        # alert, if anything, never a Kafka response.
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        client_id = b"a-plaintext-kafka-client-on-the-wrong-port"
        header = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, 7, len(client_id)) + client_id
        writer.write(struct.pack(">i", len(header)) + header)
        async with asyncio.timeout(5):
            answer = await reader.read()
        writer.close()
        assert answer[4:8] != struct.pack(">i", 7)
    assert seen == []


def test_the_subject_is_written_as_rfc_2253_most_specific_first_and_escaped() -> None:
    certificate = {
        "subject": (
            (("countryName", "US"),),
            (("organizationName", "acme, inc."),),
            (("organizationalUnitName", "eng"), ("organizationalUnitName", "ops")),
            (("commonName", "#bob "),),
        )
    }
    assert subject_name(certificate) == r"CN=\#bob\ ,OU=eng+OU=ops,O=acme\, inc.,C=US"


def test_missing_or_unusable_keys_are_named(certificates: Certificates, tmp_path: Path) -> None:
    missing = tmp_path / "missing.pem"
    with pytest.raises(TlsConfigError, match=r"missing\.pem"):
        server_context(
            TlsSettings(certificate_chain=Pem(path=missing), private_key=Pem(path=missing))
        )
    with pytest.raises(TlsConfigError, match=r"ssl\.keystore\.certificate\.chain"):
        server_context(TlsSettings())
    with pytest.raises(TlsConfigError, match=r"ssl\.truststore"):
        server_context(
            TlsSettings(
                certificate_chain=Pem(path=certificates.server.certificate_path),
                private_key=Pem(path=certificates.server.key_path),
                client_auth=ClientAuth.REQUIRED,
            )
        )
    with pytest.raises(TlsConfigError, match="cannot load the key pair"):
        server_context(
            TlsSettings(
                certificate_chain=Pem(path=certificates.server.certificate_path),
                private_key=Pem(path=certificates.alice.key_path),
            )
        )


def test_pem_continued_over_properties_lines_is_read_as_kafka_reads_it(
    certificates: Certificates,
) -> None:
    # `key=-----BEGIN ...-----\` + newline + `MIIB...\`: the properties parser joins the lines.
    joined = "".join(certificates.server.certificate_pem.splitlines())
    joined_key = "".join(certificates.server.key_pem.splitlines())
    server_context(
        TlsSettings(certificate_chain=Pem(text=joined), private_key=Pem(text=joined_key))
    )


async def test_a_peer_that_never_completes_the_handshake_is_dropped(
    certificates: Certificates,
) -> None:
    """A client that opens the TLS port and says nothing is dropped after the handshake
    timeout, not after the listener's idle timeout (600 s by default)."""
    context = server_context(
        TlsSettings(
            certificate_chain=Pem(path=certificates.server.certificate_path),
            private_key=Pem(text=certificates.server.key_pem),
        )
    )
    security = ListenerSecurity("CLIENT", context, ssl_handshake_timeout=0.5)
    async with KafkaServer(ApiRegistry(), listener=security) as server:
        loop = asyncio.get_running_loop()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        started = loop.time()
        try:
            # EOF (or a reset) once the server gives up on the handshake.
            with contextlib.suppress(ConnectionResetError):
                assert await asyncio.wait_for(reader.read(), timeout=30) == b""
        finally:
            writer.close()
        assert loop.time() - started >= 0.4
