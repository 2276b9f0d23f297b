"""What `kraft dev --secure` adds to the local cluster: TLS, SCRAM and ACLs on.

Everything lives in `data_dir/security/`, made on the first start and reused by every later
one (the same command starts the same cluster again): a certificate authority, one node
certificate (for 127.0.0.1 and localhost) every node serves and presents to the others, and
the generated password of the super user `admin`, readable by its owner only. The Kafka
listeners are SASL_SSL with SCRAM-SHA-512 (replication too, as `admin`); the controller
listener is SSL, where the nodes present their certificate (its subject is a super user, so
only they may register as brokers); the authorizer is on with `admin` and the nodes as super
users; the admin API is https, with the same password as its `admin.token`.
"""

from __future__ import annotations

import datetime
import secrets
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography.x509.oid import NameOID

from node.certificates import CertificateAuthority, write_private_file

SUPER_USER = "admin"
MECHANISM = "SCRAM-SHA-512"
KAFKA_LISTENER = "SASL_SSL"
CONTROLLER_LISTENER = "CONTROLLER"
# The nodes' certificate subject, and so their principal on the controller listener.
NODE_SUBJECT = {NameOID.COMMON_NAME: "kraft-node"}
NODE_PRINCIPAL = "User:CN=kraft-node"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# A development cluster outlives many restarts: its certificates do not expire under it.
VALIDITY = datetime.timedelta(days=3650)


@dataclass(frozen=True, slots=True)
class DevSecurity:
    """The files of a secure local cluster and the settings that use them."""

    directory: Path
    password: str

    @property
    def ca_path(self) -> Path:
        return self.directory / "kraft-dev-CA.pem"

    @property
    def keystore_path(self) -> Path:
        return self.directory / "node.keystore.pem"

    @property
    def password_path(self) -> Path:
        return self.directory / f"{SUPER_USER}.password"

    @classmethod
    def prepare(cls, data_dir: Path) -> DevSecurity:
        """The security of the cluster in `data_dir`: what an earlier start made, else new
        certificates and a new password (written 0600)."""
        directory = data_dir / "security"
        directory.mkdir(parents=True, exist_ok=True)
        password_path = directory / f"{SUPER_USER}.password"
        if password_path.exists():
            password = password_path.read_text().strip()
        else:
            # URL-safe characters only: none of them is special in bootstrap.scram.credentials.
            password = secrets.token_urlsafe(24)
            write_private_file(password_path, password + "\n")
        security = cls(directory, password)
        if not (security.ca_path.exists() and security.keystore_path.exists()):
            authority = CertificateAuthority(directory, "kraft dev CA", VALIDITY)
            node = authority.issue("node", NODE_SUBJECT, server=True)
            node.write_keystore(security.keystore_path)
        return security

    def node_settings(self, kafka_address: str, controller_address: str) -> dict[str, object]:
        """A node's keys beyond the plaintext cluster's: listeners, TLS, SASL, authorizer."""
        return {
            "listeners": (
                f"{KAFKA_LISTENER}://{kafka_address},{CONTROLLER_LISTENER}://{controller_address}"
            ),
            "listener.security.protocol.map": (
                f"{KAFKA_LISTENER}:SASL_SSL,{CONTROLLER_LISTENER}:SSL"
            ),
            "controller.listener.names": CONTROLLER_LISTENER,
            "inter.broker.listener.name": KAFKA_LISTENER,
            "ssl.keystore.location": self.keystore_path,
            "ssl.truststore.location": self.ca_path,
            # Asked, not required, as the listeners share the ssl.* keys: Kafka clients log in
            # with SASL and need no certificate; the nodes present theirs.
            "ssl.client.auth": "requested",
            "sasl.enabled.mechanisms": MECHANISM,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            "inter.broker.sasl.username": SUPER_USER,
            "inter.broker.sasl.password": self.password,
            "bootstrap.scram.credentials": (
                f"{MECHANISM}=[name={SUPER_USER},password={self.password}]"
            ),
            "authorizer.class.name": AUTHORIZER,
            "super.users": f"User:{SUPER_USER};{NODE_PRINCIPAL}",
            "admin.token": self.password,
        }

    def client(self) -> dict[str, str]:
        """The super user's librdkafka settings (with the bootstrap servers, a client's
        whole configuration)."""
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": MECHANISM,
            "sasl.username": SUPER_USER,
            "sasl.password": self.password,
            "ssl.ca.location": str(self.ca_path),
        }

    def admin_headers(self) -> dict[str, str]:
        """The super user's credentials for the admin APIs: their token, the password."""
        return {"Authorization": f"Bearer {self.password}"}

    def admin_context(self) -> ssl.SSLContext:
        """TLS towards the nodes' admin APIs, trusting the cluster's CA."""
        return ssl.create_default_context(cafile=self.ca_path)
