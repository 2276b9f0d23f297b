"""The metadata state machine on top of `kraft`.

Pure rules: the metadata records and their encoding (`records`), the image every node replays
from the metadata log (`image`) and the metadata transactions it takes whole
(`metadata_transactions`), the topic config catalogue and the typed config the image
hands out per topic (`topic_config`), the dynamic broker configs (`broker_config`: the
replication throttle's rates), one partition's state (`partition_state`) and its
changes — ISR, ELR, LastKnownELR, elections, the configuration they run under and the records
they become (`partition_change`) — placement (`placement`), topic requests (`topics`), broker
sessions, fencing and unregistration (`broker_lifecycle`), AlterPartition (`alter_partition`),
partition reassignment (`reassignment`, KIP-455), ElectLeaders
and the automatic preferred election (`elections`), producer-id blocks (`producer_ids`),
unclean recovery's choice of a leader from the replicas' logs (`unclean_recovery`), the
state-change and data-loss events every node derives from the metadata log (`events`).
Around them: the active controller (`quorum_controller`, with its timers: session expiry,
leader rebalance and the idle NoOpRecord), its Kafka APIs (`wire`), the client
that reaches it (`client`), and the GetReplicaLogInfo client that inspects brokers' logs
(`replica_log_inspector`).
"""
