"""schemathesis against the OpenAPI document of a live node: generated requests for every
operation get no server error and only responses that conform to the document."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance
from schemathesis.core.result import Err

from bench.cluster import Cluster

pytestmark = pytest.mark.slow

TOKEN = "s3cret"
EXAMPLES_PER_OPERATION = 25
# Schema-valid is not always acceptable: the controller validates what no schema says (config
# values, a replication factor above the live brokers, a partition count that does not grow,
# more partitions than one request may create), answering 400 with Kafka's error code, as the
# integration tests check. Generated partition counts go up to the document's million: the
# node refuses those over the bound at once and creates the others without stalling.
ALWAYS_EXCLUDED = [positive_data_acceptance]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("schemathesis")
    cluster = Cluster.combined(root, 1, **{"admin.token": TOKEN})
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced, timeout=30)
        yield cluster
    finally:
        cluster.stop_all()


def fuzz(operation: Any, excluded: list[Any]) -> None:
    """Generated requests to `operation`, valid and invalid, with and without the token, pass
    every check but `excluded` (invalid ones must get a 4xx)."""

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        case=operation.as_strategy(GenerationMode.POSITIVE)
        | operation.as_strategy(GenerationMode.NEGATIVE),
        authorized=st.booleans(),
    )
    def check(case: Any, authorized: bool) -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"} if authorized else {}
        response = case.call_and_validate(headers=headers, excluded_checks=excluded, timeout=30)
        assert response.status_code < 500

    check()


def test_generated_requests_get_conforming_answers(cluster: Cluster) -> None:
    base = f"http://127.0.0.1:{cluster.nodes[1].admin_port}"
    # Something for generated names and partitions to find: hypothesis starts from the
    # simplest values ("0", 0) of each parameter.
    created = requests.post(
        f"{base}/v1/topics",
        json={"name": "0", "partitions": 2},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    schema = schemathesis.openapi.from_url(f"{base}/v1/openapi.json")
    schema.config.update(base_url=base)
    operations = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            raise result.err()  # an operation the document does not describe validly
        operations.append(result.ok())
    assert len(operations) >= 18
    failures: list[str] = []
    for operation in operations:
        try:
            fuzz(operation, list(ALWAYS_EXCLUDED))
        except Exception as failure:
            failures.append(f"{operation.method.upper()} {operation.path}: {failure}")
    assert not failures, "\n\n".join(failures)
