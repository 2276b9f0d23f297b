"""What the container tests read from the repository: the Dockerfile's final stage and the
image's default configuration, each parsed by the same code its consumer uses."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

import yaml
from dockerfile_parse import DockerfileParser

from node.config import NodeConfig, load_config

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DEFAULTS = ROOT / "deploy" / "docker" / "server.properties"
COMPOSE = ROOT / "deploy" / "compose.yaml"
KUBERNETES = ROOT / "deploy" / "kubernetes" / "kraft.yaml"
# The secure variants (TLS, SCRAM, ACLs) and the example of the compose variant's secrets.
SECURE_COMPOSE = ROOT / "deploy" / "compose-secure.yaml"
SECURE_KUBERNETES = ROOT / "deploy" / "kubernetes" / "kraft-secure.yaml"
SECURE_ENV_EXAMPLE = ROOT / "deploy" / "secure" / "kraft.env.example"
# DESIGN.md: node 0 of `kraft dev` listens on P (Kafka), P+100 (controller), P+200 (admin HTTP),
# P = 9092.
DEFAULT_PORTS = {"kafka": 9092, "controller": 9192, "admin": 9292}


def parser() -> DockerfileParser:
    return DockerfileParser(path=str(DOCKERFILE))


class Instruction(TypedDict):
    """An instruction as `DockerfileParser.structure` gives it (which has line numbers and
    the raw content too)."""

    instruction: str
    value: str


def final_stage() -> Sequence[Instruction]:
    """The instructions after the last FROM."""
    structure: Sequence[Instruction] = parser().structure
    last_from = max(i for i, item in enumerate(structure) if item["instruction"] == "FROM")
    return structure[last_from:]


def instruction(name: str) -> str:
    """The value of the final stage's last `name` instruction (the one that takes effect)."""
    values = [item["value"] for item in final_stage() if item["instruction"] == name]
    assert values, f"the final stage has no {name}"
    return str(values[-1])


def exec_form(value: str) -> list[str]:
    """A JSON-array instruction argument; a shell-form one fails the test that asks."""
    parsed = json.loads(value)
    assert isinstance(parsed, list) and all(isinstance(part, str) for part in parsed), value
    return parsed


def entrypoint() -> list[str]:
    return exec_form(instruction("ENTRYPOINT"))


def config_path() -> str:
    """The properties file the entrypoint passes to `kraft serve --config`."""
    arguments = entrypoint()
    return arguments[arguments.index("--config") + 1]


def image_defaults(environment: dict[str, str] | None = None) -> NodeConfig:
    """The node a container of the image runs, for the given KRAFT_* environment."""
    return load_config(DEFAULTS, environment=environment or {})


def image_user() -> tuple[int, int]:
    user, _, group = instruction("USER").partition(":")
    return int(user), int(group or user)


def seconds(duration: str) -> float:
    """A compose duration such as `1m30s`."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(float(number) * units[unit] for number, unit in parts)


def compose(path: Path = COMPOSE) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(path.read_text())
    return document
