"""The HTTP admin API.

Owns the aiohttp application (`app`), its pydantic models (`models`), the OpenAPI document
generated from the route table (`openapi`), the mapping of Kafka errors to HTTP (`errors`) and
the event log derived from the metadata log (`events`). Prometheus metrics are still to come.
"""
