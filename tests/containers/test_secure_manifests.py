"""deploy/compose-secure.yaml and deploy/kubernetes/kraft-secure.yaml, checked without a daemon
or a cluster: each node's environment (with the example secrets, and certificates made here
in place of the mounted ones) is a valid configuration with SASL_SSL Kafka listeners, an SSL
controller listener, the authorizer and an https admin API; the files the configuration names
are where the mounts put them; the nodes, ports and volumes are the plain variants'."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from node.certificates import CertificateAuthority
from node.config import NodeConfig, SecurityProtocol
from node.dev_security import NODE_PRINCIPAL, NODE_SUBJECT
from tests.containers.image_spec import (
    COMPOSE,
    SECURE_COMPOSE,
    SECURE_ENV_EXAMPLE,
    SECURE_KUBERNETES,
    compose,
    image_defaults,
)
from tests.containers.test_manifests import container, kubernetes, pod_environment, statefulset

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PASSWORD = "test-password"
# The keys that name files of the mounted certificate directory.
FILE_KEYS = ("KRAFT_SSL_KEYSTORE_LOCATION", "KRAFT_SSL_TRUSTSTORE_LOCATION")


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with what the secure variants mount: ca.pem and node.keystore.pem."""
    directory = tmp_path_factory.mktemp("tls")
    authority = CertificateAuthority(directory)
    authority.certificate_path.rename(directory / "ca.pem")
    authority.issue("node", NODE_SUBJECT, server=True).write_keystore(
        directory / "node.keystore.pem"
    )
    return directory


def mounted(environment: dict[str, str], mount: str, certificates: Path) -> dict[str, str]:
    """`environment` with the files under `mount` (the container's path of the certificates)
    replaced by the same files of `certificates`; every named file must lie under `mount`."""
    replaced = dict(environment)
    for key in FILE_KEYS:
        path = PurePosixPath(environment[key])
        assert path.parent == PurePosixPath(mount), f"{key} {path} is not in the mount {mount}"
        replaced[key] = str(certificates / path.name)
        assert Path(replaced[key]).exists(), f"{key}: no {path.name} among the mounted files"
    return replaced


def example_secrets() -> dict[str, str]:
    """deploy/secure/kraft.env.example, its placeholders replaced by one password."""
    values = {}
    for line in SECURE_ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value.replace("CHANGE-ME", PASSWORD)
    return values


def assert_secured(config: NodeConfig) -> None:
    assert config.security_protocol(config.inter_broker_listener) is SecurityProtocol.SASL_SSL
    assert config.controller_security_protocol is SecurityProtocol.SSL
    assert config.inter_broker_listener_name == "SASL_SSL"
    assert config.sasl_enabled_mechanisms == ["SCRAM-SHA-512"]
    assert config.sasl_mechanism_inter_broker_protocol == "SCRAM-SHA-512"
    assert config.authorizer_class_name == AUTHORIZER
    assert config.admin_ssl_context() is not None
    assert config.admin_token == PASSWORD
    # The nodes replicate as a super user, and register (on the controller listener, by their
    # certificate) as one.
    username = config.inter_broker_sasl_username
    assert config.inter_broker_sasl_password is not None
    assert config.inter_broker_sasl_password.get_secret_value() == PASSWORD
    assert {f"User:{username}", NODE_PRINCIPAL} <= config.super_users
    (bootstrap,) = config.bootstrap_scram_credentials
    assert (bootstrap.mechanism.mechanism_name, bootstrap.name) == ("SCRAM-SHA-512", username)


def secure_compose_nodes(certificates: Path) -> dict[str, NodeConfig]:
    document = compose(SECURE_COMPOSE)
    nodes = {}
    for name, service in document["services"].items():
        assert service["env_file"] == "secure/kraft.env"
        (tls_mount,) = [volume for volume in service["volumes"] if volume.startswith("./")]
        source, target, mode = tls_mount.split(":")
        assert (source, mode) == ("./secure/tls", "ro")
        environment = {key: str(value) for key, value in service["environment"].items()}
        nodes[name] = image_defaults(
            mounted({**environment, **example_secrets()}, target, certificates)
        )
    return nodes


def test_secure_compose_nodes_run_sasl_ssl_tls_and_acls(certificates: Path) -> None:
    for config in secure_compose_nodes(certificates).values():
        assert_secured(config)


def test_secure_compose_nodes_are_the_plain_nodes_on_the_same_ports(certificates: Path) -> None:
    secure = secure_compose_nodes(certificates)
    plain = {
        name: image_defaults({key: str(value) for key, value in service["environment"].items()})
        for name, service in compose(COMPOSE)["services"].items()
    }
    assert secure.keys() == plain.keys()
    for name, config in secure.items():
        other = plain[name]
        assert config.node_id == other.node_id
        assert [listener.endpoint for listener in config.listeners] == [
            listener.endpoint for listener in other.listeners
        ]
        assert all(
            config.advertised_listener(listener.name) == listener.endpoint
            for listener in config.listeners
        )
        assert config.controller_listener == other.controller_listener
        assert config.admin_listener == other.admin_listener
        assert config.controller_quorum_voters == other.controller_quorum_voters
    services = compose(SECURE_COMPOSE)["services"].values()
    data_volumes = [
        next(volume for volume in service["volumes"] if not volume.startswith("./"))
        for service in services
    ]
    assert len(set(data_volumes)) == len(data_volumes)


def kubernetes_secrets() -> dict[tuple[str, str], str]:
    return {("kraft-scram", "password"): PASSWORD}


def secure_pod_config(ordinal: int, certificates: Path) -> NodeConfig:
    mounts = {m["name"]: m["mountPath"] for m in container(SECURE_KUBERNETES)["volumeMounts"]}
    environment = pod_environment(ordinal, SECURE_KUBERNETES, kubernetes_secrets())
    kraft = {key: value for key, value in environment.items() if key.startswith("KRAFT_")}
    return image_defaults(mounted(kraft, mounts["tls"], certificates))


@pytest.mark.parametrize("ordinal", [0, 1, 2])
def test_each_secure_pod_runs_sasl_ssl_tls_and_acls(ordinal: int, certificates: Path) -> None:
    config = secure_pod_config(ordinal, certificates)
    assert_secured(config)
    assert config.node_id == ordinal


def test_the_secure_pods_mount_their_certificates_from_a_secret(certificates: Path) -> None:
    pod = statefulset(SECURE_KUBERNETES)["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    tls: dict[str, Any] = volumes["tls"]
    assert tls["secret"]["secretName"] == "kraft-tls"
    mount = next(m for m in container(SECURE_KUBERNETES)["volumeMounts"] if m["name"] == "tls")
    assert mount["readOnly"] is True
    # Files the node's group (fsGroup) may read, nobody else.
    assert tls["secret"]["defaultMode"] == 0o440


def test_the_secure_pods_are_the_plain_pods_with_https_probes(certificates: Path) -> None:
    secure, plain = container(SECURE_KUBERNETES), container()
    assert secure["ports"] == plain["ports"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert secure[probe]["httpGet"] == {**plain[probe]["httpGet"], "scheme": "HTTPS"}
    config = secure_pod_config(0, certificates)
    assert config.admin_listener is not None and config.listeners is not None
    ports = {port["name"]: port["containerPort"] for port in secure["ports"]}
    assert (ports["kafka"], ports["admin"]) == (
        config.listeners[0].endpoint.port,
        config.admin_listener.port,
    )
    assert kubernetes(SECURE_KUBERNETES).keys() == kubernetes().keys()
    assert statefulset(SECURE_KUBERNETES)["spec"]["replicas"] == statefulset()["spec"]["replicas"]
