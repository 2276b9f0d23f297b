"""TLS for Kafka listeners and our own clients, with the standard library's `ssl`.

Keys and certificates are PEM, as Kafka's `ssl.keystore.type=PEM` takes them: given inline
(Kafka's `ssl.keystore.certificate.chain`, `ssl.keystore.key`, `ssl.truststore.certificates`)
or as file locations. `ssl.client.auth` is Kafka's: `none` asks for no client certificate,
`requested` verifies one when the client sends it, `required` refuses a client without one.

The principal of a TLS connection is that of Kafka's DefaultKafkaPrincipalBuilder with the
default `ssl.principal.mapping.rules`: `User:` + the certificate subject as Java's
`X500Principal.getName()` writes it (RFC 2253: most specific RDN first, `CN=alice,OU=eng,O=acme`);
a connection without a verified client certificate is User:ANONYMOUS, as in Kafka.
"""

from __future__ import annotations

import enum
import os
import re
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from net.principal import ANONYMOUS, KafkaPrincipal


class ClientAuth(enum.StrEnum):
    """Kafka's `ssl.client.auth`."""

    NONE = "none"
    REQUESTED = "requested"
    REQUIRED = "required"


_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


def normalized_pem(text: str) -> str:
    """PEM text with its blocks' lines rebuilt: a properties file continues a value over lines
    with `\\` and drops the line breaks (`-----BEGIN CERTIFICATE-----MIIB...`), which Kafka's
    PEM reader accepts and OpenSSL does not."""
    blocks = []
    for match in _PEM_BLOCK.finditer(text):
        label, body = match[1], "".join(match[2].split())
        lines = [body[start : start + 64] for start in range(0, len(body), 64)]
        blocks.append("\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"]))
    return "\n".join(blocks) + "\n" if blocks else text


@dataclass(frozen=True, slots=True)
class Pem:
    """PEM text given inline, or the file that holds it."""

    text: str | None = None
    path: Path | None = None

    def describe(self) -> str:
        return str(self.path) if self.path is not None else "inline PEM"

    def read(self) -> str:
        """The PEM text; OSError naming the file when it cannot be read."""
        if self.text is not None:
            return normalized_pem(self.text)
        assert self.path is not None
        return self.path.read_text()


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """What a TLS endpoint (server or client) is configured with."""

    certificate_chain: Pem | None = None
    private_key: Pem | None = None
    key_password: str | None = None
    trusted_certificates: Pem | None = None
    client_auth: ClientAuth = ClientAuth.NONE
    # Kafka's `ssl.endpoint.identification.algorithm`: "https" checks the server's host name.
    check_hostname: bool = True


class TlsConfigError(ValueError):
    """A TLS setting that cannot be used; the message names what is wrong."""


@contextmanager
def _pem_file(pem: Pem) -> Iterator[str]:
    """A path `ssl` can load: the file itself, or a private temporary copy of inline PEM."""
    if pem.path is not None:
        yield str(pem.path)
        return
    assert pem.text is not None
    descriptor, name = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(pem.read())
        yield name
    finally:
        os.unlink(name)


def _load_key_pair(context: ssl.SSLContext, settings: TlsSettings) -> None:
    chain, key = settings.certificate_chain, settings.private_key
    if chain is None or key is None:
        raise TlsConfigError(
            "a TLS listener needs ssl.keystore.certificate.chain and ssl.keystore.key "
            "(or ssl.keystore.location holding both)"
        )
    try:
        with _pem_file(chain) as chain_path, _pem_file(key) as key_path:
            context.load_cert_chain(chain_path, key_path, password=settings.key_password)
    except (OSError, ssl.SSLError) as error:
        raise TlsConfigError(
            f"cannot load the key pair ({chain.describe()}, {key.describe()}): {error}"
        ) from None


def _load_trust(context: ssl.SSLContext, trusted: Pem) -> None:
    try:
        context.load_verify_locations(cadata=trusted.read())
    except (OSError, ssl.SSLError, ValueError) as error:
        raise TlsConfigError(
            f"cannot load the trusted certificates ({trusted.describe()}): {error}"
        ) from None


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """The context of a TLS listener; TlsConfigError names a missing or unreadable key."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_key_pair(context, settings)
    if settings.client_auth is not ClientAuth.NONE:
        if settings.trusted_certificates is None:
            raise TlsConfigError(
                f"ssl.client.auth={settings.client_auth} needs ssl.truststore.certificates "
                "(or ssl.truststore.location) to verify client certificates with"
            )
        _load_trust(context, settings.trusted_certificates)
        context.verify_mode = (
            ssl.CERT_REQUIRED if settings.client_auth is ClientAuth.REQUIRED else ssl.CERT_OPTIONAL
        )
    return context


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """The context of a client of a TLS listener: it trusts the configured certificates (the
    system's when none are) and presents its own key pair when it has one."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = settings.check_hostname
    if settings.trusted_certificates is not None:
        _load_trust(context, settings.trusted_certificates)
    else:
        context.load_default_certs()
    if settings.certificate_chain is not None or settings.private_key is not None:
        _load_key_pair(context, settings)
    return context


# Java's X500Principal RFC 2253 keywords; other attributes are written as their OID there
# (with a hex value), which the dictionary `getpeercert` returns cannot reproduce: those keep
# Python's attribute name.
_RFC2253_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def _escape(value: str) -> str:
    """An attribute value escaped as RFC 2253 requires."""
    escaped = "".join(f"\\{char}" if char in ',+"\\<>;' else char for char in value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def subject_name(certificate: dict[str, Any]) -> str:
    """The subject of a certificate (`SSLSocket.getpeercert()`'s form) as Java's
    `X500Principal.getName()` writes it: RFC 2253, most specific RDN first."""
    rdns = []
    for rdn in reversed(certificate.get("subject", ())):
        rdns.append(
            "+".join(f"{_RFC2253_KEYWORDS.get(name, name)}={_escape(value)}" for name, value in rdn)
        )
    return ",".join(rdns)


def principal_of(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> KafkaPrincipal:
    """The principal of a TLS connection: User:<subject> of the verified client certificate,
    else User:ANONYMOUS (no TLS, or no certificate asked for or sent)."""
    if ssl_object is None:
        return ANONYMOUS
    certificate = ssl_object.getpeercert()
    if not certificate:
        return ANONYMOUS
    return KafkaPrincipal.user(subject_name(certificate))
