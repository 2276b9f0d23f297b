"""The data plane.

Owns: the broker's lifecycle with the controller (`lifecycle`: registration with the
clean-shutdown epoch, heartbeats); the hosted replicas kept in line with the metadata log
(`replica_manager`, `partition`: roles, leader epochs, the leader's high watermark from its
followers' fetch offsets, the acks=all wait on it); the client listener's APIs (`kafka_apis`:
Metadata, DescribeCluster, DescribeConfigs and admin requests forwarded to the active
controller; `data_apis`: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, with `offsets`
answering ListOffsets on a log; `replica_log_info`: GetReplicaLogInfo for unclean recovery);
configs as a broker sees them (`configs`: DescribeConfigs, a topic's storage settings from its
typed config); followers pulling from their leaders (`replica_fetcher`); the replication
throttle's byte-rate quotas (`replication_quota`); leaders' ISR change
requests (`isr_changes`); idempotent producers (`producer_state`, its snapshots beside the log
in `producer_snapshots`, and `producer_ids` for InitProducerId).
The group coordinator is the `groups` package.
"""
