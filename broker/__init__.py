"""The data plane.

Owns, so far: the broker's lifecycle with the controller (`lifecycle`: registration with the
clean-shutdown epoch, heartbeats, controlled shutdown) and the client listener's metadata APIs
(`metadata_api`, `kafka_apis`: Metadata, DescribeCluster, and admin requests forwarded to the
active controller). Still to come: the replica manager, leader and follower roles, produce and
fetch with their purgatories, replica fetchers, ISR change proposals, idempotent-producer state
and the group coordinator.
"""
