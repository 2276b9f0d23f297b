"""One real `kraft serve` node and one local[2] SparkSession for every Spark test: the JVM and
the first query cost ~15 s, so they are paid once per test run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

import spark_connector
from bench.cluster import Cluster


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # Retention checked often: a test reads past records it deleted.
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("spark-node"), 1, **{"log.retention.check.interval.ms": "200"}
    )
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture(scope="session")
def spark(node: Cluster) -> Iterator[SparkSession]:
    # Python workers must run this interpreter (the one with pyarrow and this project).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kraft-connector-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    spark_connector.register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def admin(node: Cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": node.bootstrap})
