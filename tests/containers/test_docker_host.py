"""The image test may skip only where no daemon answers and CI is unset: in CI a missing daemon
fails it, so CI can never pass without having run the image."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.containers.docker_host import connect


def test_without_a_daemon_it_skips_outside_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no docker daemon answers"):
        connect()


def test_without_a_daemon_it_fails_in_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set but no docker daemon answers"):
        connect()
