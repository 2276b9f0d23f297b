"""The HTTP admin API and the Prometheus metrics.

Owns the aiohttp application (`app`), its pydantic models (`models`), the OpenAPI document
generated from the route table (`openapi`), the mapping of Kafka errors to HTTP (`errors`), the
event log derived from the metadata log (`events`) and the `/metrics` exposition of the node's
requests, replicas and quorum role (`metrics`).
"""
