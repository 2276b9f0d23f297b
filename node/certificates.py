"""Certificates made with `cryptography`: a certificate authority, the node and client
certificates it signs, and PEM files of them. `kraft dev --secure` makes its cluster's with it,
and so do the TLS tests and benchmarks (one factory for all)."""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class KeyPair:
    """A certificate (PEM) and its private key (PEM), and the files holding them."""

    certificate_pem: str
    key_pem: str
    certificate_path: Path
    key_path: Path

    def write_keystore(self, path: Path) -> Path:
        """Writes the private key and the certificate into one file, Kafka's PEM keystore
        (`ssl.keystore.location`), readable by its owner only; returns `path`."""
        write_private_file(path, self.key_pem + self.certificate_pem)
        return path


def write_private_file(path: Path, text: str) -> None:
    """Writes `text` into a file only its owner may read and write (0600 from its creation
    on: a key or a password is never readable by others, not even for a moment)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    path.chmod(0o600)


# Long enough for any test or benchmark run; `kraft dev --secure` asks for years.
TEST_VALIDITY = datetime.timedelta(days=1)


def _name(subject: dict[x509.ObjectIdentifier, str]) -> x509.Name:
    return x509.Name([x509.NameAttribute(oid, value) for oid, value in subject.items()])


class CertificateAuthority:
    """A self-signed CA whose certificates, valid for `validity` from now, are written under
    `directory`."""

    def __init__(
        self,
        directory: Path,
        name: str = "kraft test CA",
        validity: datetime.timedelta = TEST_VALIDITY,
    ) -> None:
        self.directory = directory
        self._validity = validity
        directory.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._subject = _name({NameOID.COMMON_NAME: name})
        self._certificate = (
            self._builder(self._subject, self._key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.certificate_pem = self._certificate.public_bytes(serialization.Encoding.PEM).decode()
        self.certificate_path = directory / f"{name.replace(' ', '-')}.pem"
        self.certificate_path.write_text(self.certificate_pem)

    def _builder(
        self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey
    ) -> x509.CertificateBuilder:
        """A certificate of `public_key` for `subject`, issued by this CA, valid from a few
        minutes ago (clocks differ) for the CA's validity."""
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + self._validity)
        )

    def issue(
        self,
        file_name: str,
        subject: dict[x509.ObjectIdentifier, str],
        *,
        server: bool = False,
    ) -> KeyPair:
        """A certificate for `subject`: a node's (for 127.0.0.1 and localhost, a server's and a
        client's) or a client's."""
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            self._builder(_name(subject), key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                # A node's certificate serves its listeners and is its client certificate
                # towards the other nodes.
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                    if server
                    else [ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.DNSName("localhost"),
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    ]
                ),
                critical=False,
            )
        certificate = builder.sign(self._key, hashes.SHA256())
        certificate_pem = certificate.public_bytes(serialization.Encoding.PEM).decode()
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        certificate_path = self.directory / f"{file_name}.crt"
        key_path = self.directory / f"{file_name}.key"
        certificate_path.write_text(certificate_pem)
        write_private_file(key_path, key_pem)
        return KeyPair(certificate_pem, key_pem, certificate_path, key_path)
