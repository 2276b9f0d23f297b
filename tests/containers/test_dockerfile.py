"""The Dockerfile and its build context, checked without a daemon: hadolint at warning level and
the structure the image promises (multi-stage on a pinned slim base, non-root, exec-form
`kraft serve`, the default ports exposed, the log directory a volume, a HEALTHCHECK on
readiness)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

from docker.utils.build import exclude_paths

from tests.containers.image_spec import (
    DEFAULT_PORTS,
    DEFAULTS,
    DOCKERFILE,
    ROOT,
    config_path,
    entrypoint,
    exec_form,
    final_stage,
    image_defaults,
    image_user,
    instruction,
    parser,
)


def test_hadolint_finds_nothing_at_warning_level() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    result = subprocess.run(
        [str(hadolint), "--failure-threshold", "warning", "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_multi_stage_on_a_slim_python_base_pinned_by_tag() -> None:
    dockerfile = parser()
    assert dockerfile.is_multistage
    stages = dockerfile.parent_images
    assert len(stages) >= 2
    for image in stages:
        name, _, tag = image.partition(":")
        assert name == "python", image
        # A moving tag would change the image under the same Dockerfile.
        assert re.fullmatch(r"3\.\d+(\.\d+)?-slim-[a-z]+", tag), image
    # Build and runtime share the base: the virtual environment's interpreter path must exist
    # where it is copied to.
    assert len(set(stages)) == 1
    copies = [item["value"] for item in final_stage() if item["instruction"] == "COPY"]
    assert any(value.startswith("--from=build ") for value in copies)


def test_runs_as_a_numeric_non_root_user() -> None:
    user, group = image_user()
    assert user > 0 and group > 0


def test_the_entrypoint_is_kraft_serve_in_exec_form() -> None:
    # Exec form: the node is PID 1 and receives docker stop's SIGTERM itself.
    arguments = entrypoint()
    assert arguments[:2] == ["kraft", "serve"]
    copies = [shlex.split(item["value"]) for item in final_stage() if item["instruction"] == "COPY"]
    assert [str(DEFAULTS.relative_to(ROOT)), config_path()] in copies
    assert instruction("STOPSIGNAL") == "SIGTERM"


def test_the_default_configuration_is_a_single_node_cluster_on_the_default_ports() -> None:
    config = image_defaults()
    (listener,) = config.listeners
    assert listener.endpoint.port == DEFAULT_PORTS["kafka"]
    assert config.controller_listener is not None
    assert config.controller_listener.port == DEFAULT_PORTS["controller"]
    assert config.admin_listener is not None
    assert config.admin_listener.port == DEFAULT_PORTS["admin"]
    # Reachable from outside the container's network namespace.
    assert {listener.endpoint.host, config.controller_listener.host} == {"0.0.0.0"}
    assert config.admin_listener.host == "0.0.0.0"
    assert [voter.node_id for voter in config.controller_quorum_voters] == [config.node_id]


def test_exposes_the_kafka_controller_and_admin_ports() -> None:
    exposed = {int(port.partition("/")[0]) for port in instruction("EXPOSE").split()}
    assert exposed == set(DEFAULT_PORTS.values())


def test_the_log_directories_are_a_volume() -> None:
    volumes = set(exec_form(instruction("VOLUME")))
    assert {str(path) for path in image_defaults().log_dirs} <= volumes


def test_the_healthcheck_asks_for_readiness_with_the_node_configuration() -> None:
    options, _, command = instruction("HEALTHCHECK").partition("CMD")
    arguments = exec_form(command.strip())
    assert arguments[:3] == ["python", "-m", "node.healthcheck"]
    assert arguments[arguments.index("--config") + 1] == config_path()
    # The node needs a few seconds to elect itself; the start period keeps those from counting.
    assert "--start-period=" in options and "--interval=" in options


def test_the_build_context_is_exactly_what_the_wheel_and_the_image_need() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    context = set(exclude_paths(str(ROOT), patterns))
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"
    ]["find"]["include"]
    packages = [pattern.rstrip("*") for pattern in include]
    for package in packages:
        for source in (ROOT / package).rglob("*.py"):
            assert str(source.relative_to(ROOT)) in context
    assert {"pyproject.toml", "README.md", str(DEFAULTS.relative_to(ROOT))} <= context
    top_level = {path.split("/")[0] for path in context}
    # Docker always sends the Dockerfile and .dockerignore themselves.
    expected = {*packages, "pyproject.toml", "README.md", "deploy", "Dockerfile", ".dockerignore"}
    assert top_level == expected
    assert not any("__pycache__" in path for path in context)
