"""The TLS benchmarks' and tests' certificates: subjects, and a CA with a node's and a client's
certificates in files (made by node.certificates, the one certificate factory)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography.x509.oid import NameOID

from node.certificates import CertificateAuthority, KeyPair

SERVER_SUBJECT = {NameOID.COMMON_NAME: "localhost"}
# Java's X500Principal.getName() writes this subject "CN=alice,OU=eng,O=acme".
ALICE_SUBJECT = {
    NameOID.ORGANIZATION_NAME: "acme",
    NameOID.ORGANIZATIONAL_UNIT_NAME: "eng",
    NameOID.COMMON_NAME: "alice",
}
ALICE_PRINCIPAL = "User:CN=alice,OU=eng,O=acme"


@dataclass(frozen=True)
class TlsFiles:
    """A CA, the certificate every node uses (as a server and towards the other nodes) and a
    client's certificate, in files."""

    authority: CertificateAuthority
    node: KeyPair
    client: KeyPair
    # The node's private key and certificate in one file: Kafka's PEM keystore.
    keystore: Path

    @classmethod
    def create(cls, directory: Path) -> TlsFiles:
        authority = CertificateAuthority(directory)
        node = authority.issue("node", SERVER_SUBJECT, server=True)
        client = authority.issue("alice", ALICE_SUBJECT)
        keystore = node.write_keystore(directory / "node.keystore.pem")
        return cls(authority, node, client, keystore)

    def node_properties(self) -> dict[str, str]:
        """The keys that put a node's CLIENT and CONTROLLER listeners on TLS with client
        certificates required (with `Cluster.name_listeners("CLIENT", "CONTROLLER")`)."""
        return {
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CLIENT:SSL,CONTROLLER:SSL",
            "inter.broker.listener.name": "CLIENT",
            "ssl.keystore.location": str(self.keystore),
            "ssl.truststore.location": str(self.authority.certificate_path),
            "ssl.client.auth": "required",
        }
