"""The HTTP admin API and the Prometheus metrics.

Owns the aiohttp application (`app`: the token guard, JSON errors, `/metrics`), its handlers,
one module per resource (`handlers`), the route table that builds both the router and the
OpenAPI document (`routes`, `openapi`), what it reads from the node (`status`), its pydantic
models (`models`), the mapping of Kafka errors to HTTP (`errors`) and the `/metrics`
exposition of the node's requests, replicas and quorum role (`metrics`). The events it shows are
derived on the controller side (`controller.events`); admin only renders them.
"""
