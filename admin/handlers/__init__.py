"""The admin API's handlers, one module per resource: the node and the cluster (`cluster`),
brokers (`brokers`), topics with their configs and partitions (`topics`), elections and unclean
recoveries (`elections`), the event log (`events`), reassignments (`reassignments`); what they
share (`common`). `admin.routes` declares them in the route table."""
