"""The HTTP admin API.

Owns the aiohttp application, its pydantic models and, later, the OpenAPI document and the
Prometheus metrics endpoint. Today it serves health (live, ready) and the quorum view.
"""
