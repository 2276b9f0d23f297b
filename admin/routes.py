"""The route table of the admin API: every operation declared once (`ROUTES`), from which the
application builds its router and `document()` the OpenAPI document (`/v1/openapi.json`)."""

from __future__ import annotations

import functools
from typing import Any

from aiohttp import web

from admin import auth
from admin.auth import on_cluster, on_topic
from admin.handlers import (
    acls,
    brokers,
    cluster,
    elections,
    events,
    reassignments,
    rebalance,
    topics,
    users,
)
from admin.models import (
    TOPIC_NAME_PATTERN,
    Acl,
    AclFilter,
    AddPartitions,
    AlterConfigs,
    Broker,
    Cluster,
    CreateTopic,
    CreateUser,
    Election,
    ElectionResults,
    Event,
    Health,
    Metadata,
    Partition,
    PartitionDetail,
    PartitionRecovery,
    Quorum,
    ReassignmentProgress,
    ReassignmentsStarted,
    Rebalance,
    RebalancePlan,
    RecoveryElection,
    ReplicaLog,
    StartReassignments,
    Topic,
    User,
)
from admin.openapi import PathParam, Route, openapi_document
from controller.acls import AclOperation


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(document())


# What the Kafka counterparts of the routes need (Kafka's ControllerApis and KafkaApis): the
# ACL and user APIs, ElectLeaders, reassignments and UnregisterBroker ALTER on the cluster; a
# throttle set with a move is IncrementalAlterConfigs on the cluster (ALTER_CONFIGS).
_ALTER_CLUSTER = on_cluster(AclOperation.ALTER)
_DESCRIBE_TOPIC = on_topic(AclOperation.DESCRIBE)

_NAME = PathParam("name", {"type": "string", "pattern": TOPIC_NAME_PATTERN}, "the topic's name")
_USER = PathParam("name", {"type": "string", "minLength": 1}, "the user's name")
_BROKER = PathParam("id", {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}, "the broker id")
_PARTITION = PathParam(
    "p", {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}, "the partition index"
)

ROUTES: tuple[Route, ...] = (
    Route("GET", "/v1/acls", acls.list_acls, "every ACL", Acl, response_is_list=True),
    Route(
        "POST",
        "/v1/acls",
        acls.create_acl,
        "create an ACL (refused when no authorizer is configured)",
        Acl,
        status=201,
        body=Acl,
        errors=(503,),
        mutation=True,
        access=_ALTER_CLUSTER,
    ),
    Route(
        "DELETE",
        "/v1/acls",
        acls.delete_acls,
        "delete every ACL the filter matches; answers the ACLs deleted",
        Acl,
        response_is_list=True,
        body=AclFilter,
        errors=(503,),
        mutation=True,
        access=_ALTER_CLUSTER,
    ),
    Route("GET", "/v1/health/live", cluster.live, "the process is up", Health, access=None),
    Route(
        "GET",
        "/v1/health/ready",
        cluster.ready,
        "ready: a quorum leader is known",
        Health,
        errors=(503,),
        access=None,
    ),
    Route("GET", "/v1/cluster", cluster.cluster, "the cluster", Cluster),
    Route("GET", "/v1/quorum", cluster.quorum, "the controller quorum", Quorum, errors=(404,)),
    Route("GET", "/v1/metadata", cluster.metadata, "the whole metadata image", Metadata),
    Route(
        "GET",
        "/v1/brokers",
        brokers.brokers,
        "registered brokers",
        Broker,
        response_is_list=True,
    ),
    Route(
        "GET",
        "/v1/brokers/{id}",
        brokers.broker,
        "one broker",
        Broker,
        params=(_BROKER,),
        errors=(404,),
    ),
    Route(
        "GET",
        "/v1/topics",
        topics.topics,
        "every topic (with an authorizer: every one the caller may DESCRIBE)",
        Topic,
        response_is_list=True,
        access=auth.listing,
    ),
    Route(
        "GET",
        "/v1/users",
        users.users,
        "every SASL user with its SCRAM credentials (mechanisms and iterations, never keys)",
        User,
        response_is_list=True,
    ),
    Route(
        "POST",
        "/v1/users",
        users.create_user,
        "add or replace a user's SCRAM credential for one mechanism",
        User,
        status=201,
        body=CreateUser,
        errors=(503,),
        mutation=True,
        access=_ALTER_CLUSTER,
    ),
    Route(
        "DELETE",
        "/v1/users/{name}",
        users.delete_user,
        "delete a user's SCRAM credentials: every mechanism, or the one `?mechanism=` names",
        None,
        status=204,
        params=(_USER,),
        errors=(400, 404, 503),
        mutation=True,
        access=_ALTER_CLUSTER,
    ),
    Route(
        "POST",
        "/v1/topics",
        topics.create_topic,
        "create a topic",
        Topic,
        status=201,
        body=CreateTopic,
        errors=(404, 409, 503),
        mutation=True,
        access=auth.create_topic,
    ),
    Route(
        "GET",
        "/v1/topics/{name}",
        topics.topic,
        "one topic",
        Topic,
        params=(_NAME,),
        errors=(404,),
        access=_DESCRIBE_TOPIC,
    ),
    Route(
        "DELETE",
        "/v1/topics/{name}",
        topics.delete_topic,
        "delete a topic",
        None,
        status=204,
        params=(_NAME,),
        errors=(400, 404, 503),
        mutation=True,
        access=on_topic(AclOperation.DELETE),
    ),
    Route(
        "POST",
        "/v1/topics/{name}/partitions",
        topics.add_partitions,
        "raise a topic's partition count",
        Topic,
        body=AddPartitions,
        params=(_NAME,),
        errors=(404, 409, 503),
        mutation=True,
        access=on_topic(AclOperation.ALTER),
    ),
    Route(
        "PATCH",
        "/v1/topics/{name}/configs",
        topics.alter_configs,
        "set and delete a topic's config overrides",
        Topic,
        body=AlterConfigs,
        params=(_NAME,),
        errors=(503,),
        mutation=True,
        access=on_topic(AclOperation.ALTER_CONFIGS),
    ),
    Route(
        "GET",
        "/v1/topics/{name}/partitions/{p}",
        topics.partition,
        "a partition with its leader's log view",
        PartitionDetail,
        params=(_NAME, _PARTITION),
        errors=(404,),
        access=_DESCRIBE_TOPIC,
    ),
    Route(
        "GET",
        "/v1/topics/{name}/partitions/{p}/log",
        topics.replica_log,
        "this node's replica's log view",
        ReplicaLog,
        params=(_NAME, _PARTITION),
        errors=(404,),
        access=_DESCRIBE_TOPIC,
    ),
    Route(
        "GET",
        "/v1/topics/{name}/partitions/{p}/recovery",
        elections.recovery,
        "what an unclean recovery of the partition sees and would choose now (every "
        "replica asked for its log)",
        PartitionRecovery,
        params=(_NAME, _PARTITION),
        errors=(404,),
        access=_DESCRIBE_TOPIC,
    ),
    Route(
        "POST",
        "/v1/recoveries",
        elections.elect_recovered_leader,
        "manual unclean recovery: elect the chosen replica of a leaderless partition "
        "(a potential data-loss event); the topic with its partitions after the change",
        Topic,
        body=RecoveryElection,
        errors=(400, 404, 409, 503),
        mutation=True,
        access=_ALTER_CLUSTER,
    ),
    Route(
        "POST",
        "/v1/elections",
        elections.elect,
        "elect leaders (preferred or unclean)",
        ElectionResults,
        body=Election,
        errors=(409, 503),
        mutation=True,
        access=_ALTER_CLUSTER,
    ),
    Route(
        "GET",
        "/v1/events",
        events.events,
        "state-change and data-loss events, newest last",
        Event,
        response_is_list=True,
    ),
    Route(
        "GET",
        "/v1/reassignments",
        reassignments.reassignments,
        "every reassignment in progress, with its progress (bytes each replica being added is "
        "behind the leader)",
        ReassignmentProgress,
        response_is_list=True,
    ),
    Route(
        "POST",
        "/v1/reassignments",
        reassignments.start_reassignments,
        "start moving one partition or many to new replicas, optionally setting (or, with 0, "
        "removing) the cluster-wide replication throttle",
        ReassignmentsStarted,
        status=202,
        body=StartReassignments,
        errors=(404, 409, 503),
        mutation=True,
        access=auth.move_replicas,
    ),
    Route(
        "DELETE",
        "/v1/reassignments/{name}/{p}",
        reassignments.cancel_reassignment,
        "cancel a partition's reassignment: back to its replicas before the move",
        Partition,
        params=(_NAME, _PARTITION),
        errors=(503,),
        mutation=True,
        access=_ALTER_CLUSTER,
    ),
    Route(
        "POST",
        "/v1/rebalance",
        rebalance.rebalance,
        "plan the fewest moves that even the brokers' replica and preferred-leader counts; "
        "unless a dry run, start them, and once they complete elect the preferred leaders",
        RebalancePlan,
        body=Rebalance,
        errors=(409, 503),
        mutation=True,
        access=auth.move_replicas,
    ),
    Route(
        "POST",
        "/v1/brokers/{id}/drain",
        rebalance.drain,
        "plan and start moving every replica off a broker (evening out the others)",
        RebalancePlan,
        status=202,
        params=(_BROKER,),
        errors=(409, 503),
        mutation=True,
        access=_ALTER_CLUSTER,
    ),
    Route(
        "DELETE",
        "/v1/brokers/{id}",
        brokers.unregister,
        "unregister a broker that hosts no replica (the node shuts down)",
        None,
        status=204,
        params=(_BROKER,),
        errors=(409, 503),
        mutation=True,
        access=_ALTER_CLUSTER,
    ),
    Route("GET", "/v1/openapi.json", openapi, "this document", None, access=None),
)


@functools.cache
def document() -> dict[str, Any]:
    """The OpenAPI document of `ROUTES`, built when first asked for (pydantic's JSON schemas
    of every model took a tenth of a second of each node's start-up, for a document few ever
    read)."""
    return openapi_document(
        ROUTES,
        title="kraft-broker admin API",
        version="1",
        description="Reads answer from the answering node's metadata image; mutations are "
        "forwarded to the active controller as Kafka requests.",
    )
