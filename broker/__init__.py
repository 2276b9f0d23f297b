"""The data plane.

Owns, so far: the broker's lifecycle with the controller (`lifecycle`: registration with the
clean-shutdown epoch, heartbeats); the hosted replicas kept in line with
the metadata log (`replica_manager`, `partition`: roles, leader epochs, the leader's high
watermark from its followers' fetch offsets); the client listener's APIs (`kafka_apis`:
Metadata, DescribeCluster and admin requests forwarded to the active controller;
`data_apis`: Produce, Fetch, ListOffsets, with `offsets` answering ListOffsets on a log);
followers pulling from their leaders (`replica_fetcher`); leaders' ISR change requests
(`isr_changes`); idempotent producers (`producer_state`, and `producer_ids` for
InitProducerId).
Still to come: DescribeConfigs and the group coordinator.
"""
