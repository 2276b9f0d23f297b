"""`python -m node.healthcheck [--config FILE]`: exit 0 when the node's admin API answers
`/v1/health/ready` with 200, else 1 with the reason on one line.

The container image's HEALTHCHECK, run every few seconds for the life of a container. It finds
`admin.listener` where `kraft serve` does (the properties file, then the `KRAFT_*` environment)
but reads only that key, through node.properties: validating the whole configuration would
import most of the broker, about ten times the cost of the probe itself, and a node whose
configuration is invalid is not running anyway. A listener bound to a wildcard address is
probed on loopback. Docker reserves exit status 2, so every failure is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from node.properties import ConfigError, environment_key, parse_properties

ADMIN_LISTENER = "admin.listener"
READY_PATH = "/v1/health/ready"
_WILDCARDS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


def admin_listener(config_file: Path | None, environment: Mapping[str, str]) -> tuple[str, int]:
    """The admin listener's host and port, from the same sources as the node's."""
    value = None
    if config_file is not None:
        try:
            text = config_file.read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(
                f"cannot read the configuration file {config_file}: {error}"
            ) from None
        value = parse_properties(text, str(config_file)).get(ADMIN_LISTENER)
    for name, setting in environment.items():
        if environment_key(name) == ADMIN_LISTENER:
            value = setting
    if not value:
        raise ConfigError(f"{ADMIN_LISTENER} is not set, so readiness cannot be asked")
    parts = urlsplit(value.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme.lower() != "http" or parts.hostname is None or port is None:
        raise ConfigError(f"{ADMIN_LISTENER}: expected http://host:port, got {value!r}")
    return parts.hostname, port


def ready_url(host: str, port: int) -> str:
    """Where a process beside the node asks for its readiness."""
    host = _WILDCARDS.get(host, host)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{READY_PATH}"


def probe(url: str, timeout: float) -> str | None:
    """None when the node is ready; otherwise why not, in a sentence."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            # urlopen raises for every status >= 400; anything else but 200 is not "ready".
            if response.status == 200:
                return None
            return f"{url} answered {response.status}"
    except urllib.error.HTTPError as error:
        return f"{url} answered {error.code}: {_reason(error.read())}"
    except (OSError, urllib.error.URLError) as error:
        return f"{url} unreachable: {error}"


def _reason(body: bytes) -> str:
    """The admin API's `reason` (or `message`) field, else the body as text."""
    try:
        document = json.loads(body)
    except ValueError:
        return body.decode(errors="replace").strip()
    if isinstance(document, dict):
        return str(document.get("reason") or document.get("message") or document)
    return str(document)


def check(config_file: Path | None, environment: Mapping[str, str], timeout: float) -> int:
    """The exit status for the node configured by `config_file` and `environment`."""
    try:
        host, port = admin_listener(config_file, environment)
    except ConfigError as error:
        print(f"unhealthy: {error}")
        return 1
    reason = probe(ready_url(host, port), timeout)
    if reason is not None:
        print(f"unhealthy: {reason}")
        return 1
    print("ready")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m node.healthcheck", description="Exit 0 when the node is ready."
    )
    parser.add_argument("--config", type=Path, help="the node's properties file, if it has one")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for an answer")
    arguments = parser.parse_args(argv)
    return check(arguments.config, os.environ, arguments.timeout)


if __name__ == "__main__":
    sys.exit(main())
