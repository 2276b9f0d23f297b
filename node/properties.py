"""The syntax of the node's configuration sources: Java-properties text and `KRAFT_*` variable
names. Their meaning and validation are node.config's; this module imports nothing heavy, so a
process that only reads a key or two (the container healthcheck, run every few seconds) starts
in a tenth of the time.
"""

from __future__ import annotations

import re

ENV_PREFIX = "KRAFT_"
# Environment variables of the process that are not configuration keys.
PROCESS_ENVIRONMENT = frozenset(
    {
        "KRAFT_DURABILITY_JOURNAL",
        # The operator commands' and the healthcheck's own settings, which a container or a
        # shell may export beside the node's.
        "KRAFT_ADMIN_URL",
        "KRAFT_ADMIN_USER",
        "KRAFT_ADMIN_PASSWORD",
        "KRAFT_ADMIN_CAFILE",
        "KRAFT_HEALTHCHECK_CAFILE",
    }
)


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the offending key(s)."""


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Parse Java-properties text into key -> value (the last occurrence of a key wins)."""
    values: dict[str, str] = {}
    logical = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        match = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", logical)
        if match is None:
            raise ConfigError(f"{source}:{number}: expected key=value, got {logical!r}")
        values[match[1]] = match[2].strip()
        logical = ""
    if logical:
        raise ConfigError(f"{source}: the last line continues past the end of the file")
    return values


def environment_key(name: str) -> str | None:
    """The configuration key an environment variable sets (`KRAFT_NODE_ID` -> `node.id`), or
    None for a variable that sets none."""
    if not name.startswith(ENV_PREFIX) or name in PROCESS_ENVIRONMENT:
        return None
    return name[len(ENV_PREFIX) :].lower().replace("_", ".")
