"""`python -m node.healthcheck [--config FILE] [--cafile PEM]`: exit 0 when the node's admin
API answers `/v1/health/ready` with 200, else 1 with the reason on one line.

The container image's HEALTHCHECK, run every few seconds for the life of a container. It finds
`admin.listener` where `kraft serve` does (the properties file, then the `KRAFT_*` environment)
but reads only that key, through node.properties: validating the whole configuration would
import most of the broker, about ten times the cost of the probe itself, and a node whose
configuration is invalid is not running anyway. A listener bound to a wildcard address is
probed on loopback. Docker reserves exit status 2, so every failure is 1.

An `https://` admin listener is probed over TLS: the certificate chain is verified against
`--cafile` (or `KRAFT_HEALTHCHECK_CAFILE`), else the node's own `ssl.truststore.location`, else
the system's CAs. The host name is not checked: the probe runs beside the node and asks it on
its own address or loopback, which its certificate (issued for the name clients use) need not
name. The health endpoints need no credentials (as Kafka operators expect of probes: they tell
readiness and nothing else), so the probe sends none.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from node.properties import ConfigError, environment_key, parse_properties

ADMIN_LISTENER = "admin.listener"
READY_PATH = "/v1/health/ready"
_WILDCARDS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


TRUSTSTORE_LOCATION = "ssl.truststore.location"
CAFILE_VARIABLE = "KRAFT_HEALTHCHECK_CAFILE"


def _settings(
    config_file: Path | None, environment: Mapping[str, str], keys: Sequence[str]
) -> dict[str, str]:
    """The values of `keys`, from the same sources as the node's (the environment wins)."""
    values: dict[str, str] = {}
    if config_file is not None:
        try:
            text = config_file.read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(
                f"cannot read the configuration file {config_file}: {error}"
            ) from None
        properties = parse_properties(text, str(config_file))
        values.update({key: properties[key] for key in keys if key in properties})
    for name, setting in environment.items():
        key = environment_key(name)
        if key is not None and key in keys:
            values[key] = setting
    return values


@dataclass(frozen=True, slots=True)
class AdminListener:
    """Where the node serves its admin API, and whether over TLS."""

    host: str
    port: int
    tls: bool = False
    # The PEM file of the CAs its certificate chains to (`ssl.truststore.location`), if set.
    truststore: Path | None = None


def admin_listener(config_file: Path | None, environment: Mapping[str, str]) -> AdminListener:
    """The admin listener, from the same sources as the node's."""
    settings = _settings(config_file, environment, (ADMIN_LISTENER, TRUSTSTORE_LOCATION))
    value = settings.get(ADMIN_LISTENER)
    if not value:
        raise ConfigError(f"{ADMIN_LISTENER} is not set, so readiness cannot be asked")
    parts = urlsplit(value.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or parts.hostname is None or port is None:
        raise ConfigError(
            f"{ADMIN_LISTENER}: expected http://host:port or https://host:port, got {value!r}"
        )
    truststore = settings.get(TRUSTSTORE_LOCATION)
    return AdminListener(
        parts.hostname, port, scheme == "https", Path(truststore) if truststore else None
    )


def ready_url(host: str, port: int, *, tls: bool = False) -> str:
    """Where a process beside the node asks for its readiness."""
    host = _WILDCARDS.get(host, host)
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}{READY_PATH}"


def probe_context(cafile: Path | None) -> ssl.SSLContext:
    """TLS to the node beside the probe: the chain verified (against `cafile` when given), the
    host name not (see the module docstring)."""
    context = ssl.create_default_context(cafile=None if cafile is None else str(cafile))
    context.check_hostname = False
    return context


def probe(url: str, timeout: float, context: ssl.SSLContext | None = None) -> str | None:
    """None when the node is ready; otherwise why not, in a sentence."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as response:
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


def check(
    config_file: Path | None,
    environment: Mapping[str, str],
    timeout: float,
    cafile: Path | None = None,
) -> int:
    """The exit status for the node configured by `config_file` and `environment`."""
    try:
        listener = admin_listener(config_file, environment)
        context = None
        if listener.tls:
            trusted = cafile or _cafile(environment) or listener.truststore
            context = probe_context(trusted)
    except (ConfigError, OSError, ssl.SSLError) as error:
        print(f"unhealthy: {error}")
        return 1
    reason = probe(ready_url(listener.host, listener.port, tls=listener.tls), timeout, context)
    if reason is not None:
        print(f"unhealthy: {reason}")
        return 1
    print("ready")
    return 0


def _cafile(environment: Mapping[str, str]) -> Path | None:
    value = environment.get(CAFILE_VARIABLE)
    return Path(value) if value else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m node.healthcheck", description="Exit 0 when the node is ready."
    )
    parser.add_argument("--config", type=Path, help="the node's properties file, if it has one")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for an answer")
    parser.add_argument(
        "--cafile",
        type=Path,
        help="PEM CAs an https admin listener's certificate chains to (default: "
        f"{CAFILE_VARIABLE}, else the node's {TRUSTSTORE_LOCATION}, else the system's)",
    )
    arguments = parser.parse_args(argv)
    return check(arguments.config, os.environ, arguments.timeout, arguments.cafile)


if __name__ == "__main__":
    sys.exit(main())
