"""The Kafka wire protocol.

Owns every byte that crosses a socket: the API keys by Kafka's names (`api_keys`), message
schemas and their codec (kio's, plus the ones kio lacks, declared in its form:
`legacy_produce`, `replica_log_info`, `manual_recovery`), request and response headers, the
RecordBatch v2 header view and CRC32C check, the record encoder/decoder with its compression
codecs, the asyncio server that frames and dispatches requests, and the asyncio client used by
brokers, controllers and the Spark connector, with topic metadata, an idempotent producer and
Kafka's key partitioner on top of it. Imports nothing else of ours.
"""
