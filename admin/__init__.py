"""The HTTP admin API.

Will own the aiohttp application, its pydantic models, the OpenAPI document and the Prometheus
metrics endpoint. Not built yet.
"""
