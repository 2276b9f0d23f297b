"""The docker daemon for the image tests: reach it, make the base image the Dockerfile names when
it cannot be pulled, build, and remove afterwards every image a test created.

No container registry is reachable from this kind of machine, so the official python slim image
is replaced by a local stand-in (tests/containers/stand_in_base) tagged with the exact name the
Dockerfile's FROM uses: Debian bookworm from debootstrap, imported as an image, plus Debian's
Python and the host's CA bundle (pip reaches PyPI through a proxy only the host trusts). The
debootstrap root filesystem is kept as a tarball under ~/.cache, so only the first run on a
machine pays for it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from docker.errors import APIError, BuildError, DockerException, ImageNotFound

from tests.containers.image_spec import ROOT, parser

STAND_IN = Path(__file__).parent / "stand_in_base"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
DEBIAN_MIRROR = "http://deb.debian.org/debian"
# Seconds one daemon API call may stay silent (a build step installing dependencies is the
# longest).
API_TIMEOUT_S = 600
DEBOOTSTRAP_TIMEOUT_S = 600


def rootfs_cache() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "kraft-broker" / "bookworm-minbase.tar"


def connect() -> docker.DockerClient:
    """The daemon; without one the test skips, unless CI is set: CI must never skip it."""
    try:
        client = docker.from_env(timeout=API_TIMEOUT_S)
        client.ping()
    except (DockerException, OSError) as error:
        if os.environ.get("CI"):
            pytest.fail(
                f"CI is set but no docker daemon answers, so the image is untested: {error}"
            )
        pytest.skip(f"no docker daemon answers ({error}); .ci/run starts one")
    return client


def bookworm_rootfs() -> Path:
    """A tarball of a minimal Debian bookworm root filesystem, made once per machine."""
    tarball = rootfs_cache()
    if tarball.exists():
        return tarball
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None or os.geteuid() != 0:
        pytest.fail(
            f"the stand-in base image needs {tarball}, made by debootstrap as root "
            "(apt-get install debootstrap; .ci/run does)"
        )
    tarball.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bookworm-") as work:
        rootfs = Path(work) / "rootfs"
        result = subprocess.run(
            [debootstrap, "--variant=minbase", "bookworm", str(rootfs), DEBIAN_MIRROR],
            check=False,
            capture_output=True,
            text=True,
            timeout=DEBOOTSTRAP_TIMEOUT_S,
        )
        if result.returncode != 0:
            output = result.stdout + result.stderr
            pytest.fail(f"debootstrap failed ({result.returncode}):\n{output[-4000:]}")
        # Package caches are not part of an image.
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (rootfs / leftover).glob("*"):
                if path.is_file():
                    path.unlink()
        partial = tarball.with_suffix(".partial")
        subprocess.run(
            ["tar", "-C", str(rootfs), "-cf", str(partial), "."], check=True, timeout=300
        )
        partial.rename(tarball)
    return tarball


def base_image() -> str:
    """The image every FROM of the Dockerfile names (one, as the static tests check)."""
    (image,) = set(parser().parent_images)
    return str(image)


def build(
    client: docker.DockerClient, path: Path, tag: str, buildargs: dict[str, str] | None = None
) -> None:
    """`docker build --network host` (the daemon runs without a bridge) that never pulls."""
    try:
        client.images.build(
            path=str(path),
            tag=tag,
            network_mode="host",
            pull=False,
            rm=True,
            forcerm=True,
            buildargs=buildargs,
        )
    except BuildError as error:
        lines = [str(chunk.get("stream") or chunk.get("error") or "") for chunk in error.build_log]
        pytest.fail(f"docker build of {path} failed: {error}\n{''.join(lines)[-4000:]}")


def make_stand_in_base(client: docker.DockerClient, tag: str, token: str) -> None:
    minbase = f"kraft-test-bookworm:{token}"
    repository, _, version = minbase.partition(":")
    client.api.import_image_from_file(str(bookworm_rootfs()), repository=repository, tag=version)
    with tempfile.TemporaryDirectory(prefix="stand-in-") as context:
        shutil.copy(STAND_IN / "Dockerfile", context)
        shutil.copy(HOST_CA_BUNDLE, Path(context) / "host-ca-bundle.crt")
        build(client, Path(context), tag, buildargs={"BASE": minbase})


@contextlib.contextmanager
def built_image(client: docker.DockerClient) -> Iterator[str]:
    """The project's image built from the repository; on exit every image this created (the
    stand-in base when there was none, the build stage, the image) is removed again."""
    token = uuid.uuid4().hex[:12]
    before = {image.id for image in client.images.list(all=True)}
    tag = f"kraft-broker-test:{token}"
    try:
        base = base_image()
        try:
            client.images.get(base)
        except ImageNotFound:
            make_stand_in_base(client, base, token)
        build(client, ROOT, tag)
        yield tag
    finally:
        remove_images_created_since(client, before)


def remove_images_created_since(client: docker.DockerClient, before: set[str | None]) -> None:
    """Removes the images that are not in `before`; children go before their parents."""
    for _ in range(10):
        created = [image for image in client.images.list(all=True) if image.id not in before]
        if not created:
            return
        for image in created:
            image_id = image.id
            assert image_id is not None  # a listed image has its id
            with contextlib.suppress(APIError):
                client.images.remove(image_id, force=True)
    leftover = [image.id for image in client.images.list(all=True) if image.id not in before]
    assert not leftover, f"images the test could not remove: {leftover}"
