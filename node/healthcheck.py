"""`python -m node.healthcheck [--config FILE]`: exit 0 when the node's admin API answers
`/v1/health/ready` with 200, else 1 with the reason on one line.

The container image's HEALTHCHECK. It reads the same configuration as `kraft serve` (the
properties file and the `KRAFT_*` environment), so the probe follows `admin.listener` wherever
the operator moved it, and it needs nothing but the Python the image already has (no curl).
A listener bound to a wildcard address is probed on loopback. Docker reserves exit status 2, so
every failure is 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from node.config import ConfigError, Endpoint, load_config

READY_PATH = "/v1/health/ready"
_WILDCARDS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


def ready_url(admin: Endpoint) -> str:
    """Where a process beside the node asks for its readiness."""
    host = _WILDCARDS.get(admin.host, admin.host)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{admin.port}{READY_PATH}"


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


def check(config_file: Path | None, environment: Mapping[str, str] | None, timeout: float) -> int:
    """The exit status for the node configured by `config_file` and `environment`."""
    try:
        config = load_config(config_file, environment=environment)
    except ConfigError as error:
        print(f"unhealthy: {error}")
        return 1
    if config.admin_listener is None:
        print("unhealthy: admin.listener is not set, so readiness cannot be asked")
        return 1
    reason = probe(ready_url(config.admin_listener), timeout)
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
    return check(arguments.config, None, arguments.timeout)


if __name__ == "__main__":
    sys.exit(main())
