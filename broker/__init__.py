"""The data plane.

Will own the metadata cache, the replica manager, leader and follower roles, produce and fetch
with their purgatories, replica fetchers, ISR change proposals, idempotent-producer state and
the group coordinator. Not built yet.
"""
