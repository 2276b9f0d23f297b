"""The `kraft` data source: Spark's entry point, handing out readers and writers."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from spark_connector.options import parse_read_options, parse_write_options
from spark_connector.reader import KraftBatchReader, KraftStreamReader
from spark_connector.rows import row_schema
from spark_connector.writer import KraftBatchWriter, KraftStreamWriter, check_columns

FORMAT = "kraft"


class KraftDataSource(DataSource):
    """Reads and writes topics of a kraft (Kafka-compatible) cluster, with the options and
    rows of Spark's built-in Kafka source (`kraft.` where Kafka has `kafka.`)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        include = str(self.options.get("includeheaders", "false")).strip().lower() == "true"
        return row_schema(include)

    def reader(self, schema: StructType) -> DataSourceReader:
        return KraftBatchReader(parse_read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        return KraftStreamReader(parse_read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = parse_write_options(self.options)
        check_columns(schema, options)
        return KraftBatchWriter(options)

    def streamWriter(  # noqa: N802
        self, schema: StructType, overwrite: bool
    ) -> DataSourceStreamWriter:
        options = parse_write_options(self.options)
        check_columns(schema, options)
        return KraftStreamWriter(options)
