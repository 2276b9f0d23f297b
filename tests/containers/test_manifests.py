"""deploy/compose.yaml and deploy/kubernetes/kraft.yaml, checked without a daemon or a cluster:
each node's KRAFT_* environment, applied to the image's defaults exactly as the container does,
is a valid configuration, and the nodes agree with each other (ids, voters, listeners) and with
what runs them (ports, probes, volumes, users, grace periods)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from node.config import NodeConfig, Role, load_config
from node.healthcheck import READY_PATH
from tests.containers.image_spec import (
    COMPOSE,
    DOCKERFILE,
    KUBERNETES,
    ROOT,
    compose,
    image_defaults,
    image_user,
    seconds,
)

# What SIGTERM needs before the process exits, which the grace periods must cover: issue 8's
# controlled shutdown (bounded by controlled.shutdown.timeout.ms, 30 s budgeted) and then
# flushing every log and writing the clean-shutdown marker (30 s budgeted).
CONTROLLED_SHUTDOWN_S = 30
FLUSH_S = 30
NAMESPACE = "streaming"


def compose_nodes() -> dict[str, NodeConfig]:
    return {
        name: image_defaults({key: str(value) for key, value in service["environment"].items()})
        for name, service in compose()["services"].items()
    }


def test_compose_runs_three_combined_nodes_of_the_image() -> None:
    services = compose()["services"]
    assert len(services) == 3
    for service in services.values():
        assert (COMPOSE.parent / service["build"]["context"]).resolve() == ROOT
        assert service["build"]["dockerfile"] == DOCKERFILE.name
        assert service["network_mode"] == "host"
        assert seconds(service["stop_grace_period"]) >= CONTROLLED_SHUTDOWN_S + FLUSH_S
    nodes = compose_nodes()
    assert sorted(config.node_id for config in nodes.values()) == [1, 2, 3]
    for config in nodes.values():
        assert set(config.process_roles) == {Role.BROKER, Role.CONTROLLER}
        assert config.default_replication_factor == 3 and config.min_insync_replicas == 2


def test_compose_nodes_form_one_quorum_like_config_local() -> None:
    nodes = compose_nodes()
    by_id = {config.node_id: config for config in nodes.values()}
    (voters,) = {tuple(config.controller_quorum_voters) for config in nodes.values()}
    assert {voter.node_id: voter.endpoint for voter in voters} == {
        node_id: config.controller_listener for node_id, config in by_id.items()
    }
    assert len({config.cluster_id for config in nodes.values()}) == 1
    for node_id, config in by_id.items():
        # On the host network what a node advertises is where it listens.
        assert config.advertised_listener("PLAINTEXT") == config.listeners[0].endpoint
        local = load_config(ROOT / "config" / "local" / f"node{node_id}.properties", environment={})
        assert config.listeners == local.listeners
        assert config.controller_listener == local.controller_listener
        assert config.admin_listener == local.admin_listener
        assert config.controller_quorum_voters == local.controller_quorum_voters


def test_compose_gives_each_node_its_own_volume_for_its_log_directory() -> None:
    document = compose()
    mounts = {}
    for name, service in document["services"].items():
        (mount,) = service["volumes"]
        volume, _, target = mount.partition(":")
        mounts[name] = volume
        assert [str(path) for path in compose_nodes()[name].log_dirs] == [target]
        assert volume in document["volumes"]
    assert len(set(mounts.values())) == len(mounts)


def kubernetes(path: Path = KUBERNETES) -> dict[str, list[dict[str, Any]]]:
    """The manifests by kind."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for document in yaml.safe_load_all(path.read_text()):
        if document is not None:
            by_kind.setdefault(document["kind"], []).append(document)
    return by_kind


def statefulset(path: Path = KUBERNETES) -> dict[str, Any]:
    (found,) = kubernetes(path)["StatefulSet"]
    return found


def container(path: Path = KUBERNETES) -> dict[str, Any]:
    found: dict[str, Any]
    (found,) = statefulset(path)["spec"]["template"]["spec"]["containers"]
    return found


def pod_environment(
    ordinal: int, path: Path = KUBERNETES, secrets: dict[tuple[str, str], str] | None = None
) -> dict[str, str]:
    """The container's environment in pod `ordinal` as the kubelet makes it: field and Secret
    references resolved (`secrets` by Secret name and key), and `$(NAME)` replaced by the value
    of an earlier variable."""
    name = f"{statefulset(path)['metadata']['name']}-{ordinal}"
    fields = {
        "metadata.name": name,
        "metadata.namespace": NAMESPACE,
        "metadata.labels['apps.kubernetes.io/pod-index']": str(ordinal),
    }
    environment: dict[str, str] = {}
    for variable in container(path)["env"]:
        source = variable.get("valueFrom", {})
        if "secretKeyRef" in source:
            reference = source["secretKeyRef"]
            value = (secrets or {})[(reference["name"], reference["key"])]
        elif "fieldRef" in source:
            value = fields[source["fieldRef"]["fieldPath"]]
        else:
            value = re.sub(
                r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                lambda match: environment.get(match[1], match[0]),
                str(variable["value"]),
            )
        environment[variable["name"]] = value
    return environment


def pod_config(ordinal: int) -> NodeConfig:
    environment = pod_environment(ordinal)
    return image_defaults({k: v for k, v in environment.items() if k.startswith("KRAFT_")})


def pod_dns(ordinal: int) -> str:
    spec = statefulset()
    name, service = spec["metadata"]["name"], spec["spec"]["serviceName"]
    return f"{name}-{ordinal}.{service}.{NAMESPACE}.svc.cluster.local"


@pytest.mark.parametrize("ordinal", [0, 1, 2])
def test_each_pod_is_the_node_of_its_ordinal(ordinal: int) -> None:
    config = pod_config(ordinal)
    replicas = statefulset()["spec"]["replicas"]
    assert config.node_id == ordinal
    assert [voter.node_id for voter in config.controller_quorum_voters] == list(range(replicas))
    assert config.controller_listener is not None
    (listener,) = config.listeners
    advertised = config.advertised_listener(listener.name)
    for voter in config.controller_quorum_voters:
        assert voter.endpoint.host == pod_dns(voter.node_id)
        assert voter.endpoint.port == config.controller_listener.port
    assert advertised.host == pod_dns(ordinal)
    assert advertised.port == listener.endpoint.port
    assert listener.endpoint.host == config.controller_listener.host == "0.0.0.0"


def test_the_pods_ports_probes_and_volume_match_their_configuration() -> None:
    config = pod_config(0)
    assert config.listeners and config.controller_listener and config.admin_listener
    ports = {port["name"]: port["containerPort"] for port in container()["ports"]}
    assert ports == {
        "kafka": config.listeners[0].endpoint.port,
        "controller": config.controller_listener.port,
        "admin": config.admin_listener.port,
    }
    assert container()["readinessProbe"]["httpGet"] == {"path": READY_PATH, "port": "admin"}
    assert container()["livenessProbe"]["httpGet"] == {"path": "/v1/health/live", "port": "admin"}
    claims = {claim["metadata"]["name"] for claim in statefulset()["spec"]["volumeClaimTemplates"]}
    mounts = {mount["mountPath"]: mount["name"] for mount in container()["volumeMounts"]}
    for log_dir in config.log_dirs:
        assert mounts[str(log_dir)] in claims


def test_the_pods_run_as_the_image_user_and_get_time_for_a_clean_stop() -> None:
    pod = statefulset()["spec"]["template"]["spec"]
    user, group = image_user()
    security = pod["securityContext"]
    assert security["runAsNonRoot"] is True
    assert (security["runAsUser"], security["runAsGroup"], security["fsGroup"]) == (
        user,
        group,
        group,
    )
    assert pod["terminationGracePeriodSeconds"] >= CONTROLLED_SHUTDOWN_S + FLUSH_S


def test_the_quorum_can_form_before_any_pod_is_ready() -> None:
    spec = statefulset()["spec"]
    # Readiness needs a quorum leader, so the voters must start together and find each other
    # by name before they are ready.
    assert spec["podManagementPolicy"] == "Parallel"
    (headless,) = [
        service
        for service in kubernetes()["Service"]
        if service["metadata"]["name"] == spec["serviceName"]
    ]
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    for service in kubernetes()["Service"]:
        assert service["spec"]["selector"].items() <= labels.items()


def test_disruptions_keep_a_quorum_and_min_insync_replicas() -> None:
    spec = statefulset()["spec"]
    (budget,) = kubernetes()["PodDisruptionBudget"]
    labels = spec["template"]["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    remaining = spec["replicas"] - budget["spec"]["maxUnavailable"]
    assert remaining >= spec["replicas"] // 2 + 1
    assert remaining >= pod_config(0).min_insync_replicas
