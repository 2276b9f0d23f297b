"""Topics, their configs and partitions: `/v1/topics` (list, create), `/v1/topics/{name}`
(describe, delete), its `partitions` (add) and `configs` (alter), and one partition with its
leader's log view, or this node's replica's (`/v1/topics/{name}/partitions/{p}[/log]`)."""

from __future__ import annotations

import aiohttp
from aiohttp import web
from kio.schema.errors import ErrorCode
from pydantic import ValidationError

from admin.errors import ApiError, kafka_error
from admin.handlers.common import (
    ADMIN_LISTENER,
    API_PREFIX,
    PEER_SCHEME,
    SESSION,
    AdminContext,
    context,
    describable,
    json_response,
    json_response_list,
    read_body,
)
from admin.models import (
    AddPartitions,
    AlterConfigs,
    CreateTopic,
    Partition,
    PartitionDetail,
    ReplicaLog,
    Topic,
)
from controller.acls import ResourceType
from controller.client import (
    create_partitions_request,
    create_topics_request,
    delete_topics_request,
    incremental_alter_configs_request,
)
from controller.image import MetadataImage
from controller.partition_state import PartitionState

_LEADER_LOG_TIMEOUT_S = 2.0


def topic_model(image: MetadataImage, name: str) -> Topic | None:
    """The admin view of topic `name` in `image`, if it exists."""
    topic = image.topic(name)
    if topic is None:
        return None
    return Topic(
        name=name,
        topic_id=str(topic.topic_id),
        configs=dict(image.topic_configs(name)),
        partitions=[
            partition_model(partition_id, state)
            for partition_id, state in sorted(topic.partitions.items())
        ],
    )


def partition_model(index: int, state: PartitionState) -> Partition:
    """The admin view of partition `index` in `state`."""
    return Partition(
        partition=index,
        leader=state.leader,
        leader_epoch=state.leader_epoch,
        partition_epoch=state.partition_epoch,
        replicas=list(state.replicas),
        isr=list(state.isr),
        elr=list(state.elr),
        last_known_elr=list(state.last_known_elr),
    )


def existing_topic(admin: AdminContext, name: str) -> Topic:
    """Topic `name` as this node's image has it; ApiError 404 if there is none."""
    model = topic_model(admin.image(), name)
    if model is None:
        raise ApiError(404, "not_found", f"no topic named {name!r}")
    return model


def partition_state(request: web.Request) -> tuple[str, int, Partition]:
    """The topic name, partition index and partition the request's path names; ApiError 404
    if either is unknown."""
    name = request.match_info["name"]
    index = int(request.match_info["p"])
    for partition in existing_topic(context(request), name).partitions:
        if partition.partition == index:
            return name, index, partition
    raise ApiError(404, "not_found", f"topic {name!r} has no partition {index}")


def admin_address(image: MetadataImage, broker_id: int) -> tuple[str, int] | None:
    """Where broker `broker_id`'s admin API listens, as it registered."""
    broker = image.brokers.get(broker_id)
    if broker is None:
        return None
    for endpoint in broker.listeners:
        if endpoint.name == ADMIN_LISTENER:
            return endpoint.host, endpoint.port
    return None


# -- reads ------------------------------------------------------------------------------------


async def topics(request: web.Request) -> web.Response:
    """Every topic the caller may DESCRIBE."""
    current = context(request).image()
    return json_response_list(
        [
            model
            for name in sorted(current.topic_ids)
            if describable(request, ResourceType.TOPIC, name)
            and (model := topic_model(current, name)) is not None
        ]
    )


async def topic(request: web.Request) -> web.Response:
    return json_response(existing_topic(context(request), request.match_info["name"]))


async def leader_log(
    request: web.Request, name: str, state: Partition
) -> tuple[ReplicaLog | None, str | None]:
    """The leader's log view, asked of the leader's admin API unless this node leads."""
    if state.leader < 0:
        return None, "the partition has no leader"
    admin = context(request)
    local = admin.status.replica_log(name, state.partition)
    if local is not None and local.is_leader:
        return local, None
    address = admin_address(admin.image(), state.leader)
    if address is None:
        return None, f"leader {state.leader} registered no admin listener"
    host, port = address
    scheme = request.app[PEER_SCHEME]
    url = f"{scheme}://{host}:{port}{API_PREFIX}/topics/{name}/partitions/{state.partition}/log"
    session = request.app[SESSION]
    try:
        async with session.get(
            url, timeout=aiohttp.ClientTimeout(total=_LEADER_LOG_TIMEOUT_S)
        ) as response:
            if response.status != 200:
                return None, f"leader {state.leader} answered HTTP {response.status}"
            remote = ReplicaLog.model_validate_json(await response.read())
    except (aiohttp.ClientError, TimeoutError, ValidationError) as error:
        return None, f"leader {state.leader} could not be asked: {error!r}"
    if not remote.is_leader:
        return None, f"broker {state.leader} has not taken over the leadership yet"
    return remote, None


async def partition(request: web.Request) -> web.Response:
    name, _, state = partition_state(request)
    view, problem = await leader_log(request, name, state)
    return json_response(
        PartitionDetail(
            topic=name,
            **state.model_dump(),
            high_watermark=None if view is None else view.high_watermark,
            log_start_offset=None if view is None else view.log_start_offset,
            log_end_offsets={} if view is None else view.log_end_offsets,
            log_view_error=problem,
        )
    )


async def replica_log(request: web.Request) -> web.Response:
    name, index, _ = partition_state(request)
    local = context(request).status.replica_log(name, index)
    if local is None:
        raise ApiError(404, "not_found", f"this node hosts no replica of {name}-{index}")
    return json_response(local)


# -- mutations --------------------------------------------------------------------------------


async def create_topic(request: web.Request) -> web.Response:
    admin = context(request)
    body = await read_body(request, CreateTopic)
    response = await admin.to_controller(
        create_topics_request(
            [(body.name, body.partitions, body.replication_factor)], configs=body.configs
        )
    )
    result = response.topics[0]
    if result.error_code != ErrorCode.none:
        raise kafka_error(result.error_code, result.error_message, f"topic {body.name!r}")
    await admin.caught_up(lambda current: current.topic(body.name) is not None)
    return json_response(existing_topic(admin, body.name), 201)


async def delete_topic(request: web.Request) -> web.Response:
    admin = context(request)
    name = request.match_info["name"]
    response = await admin.to_controller(delete_topics_request([name]))
    result = response.responses[0]
    if result.error_code != ErrorCode.none:
        raise kafka_error(result.error_code, result.error_message, f"topic {name!r}")
    await admin.caught_up(lambda current: current.topic(name) is None)
    return web.Response(status=204)


async def add_partitions(request: web.Request) -> web.Response:
    admin = context(request)
    name = request.match_info["name"]
    body = await read_body(request, AddPartitions)
    response = await admin.to_controller(create_partitions_request([(name, body.count)]))
    result = response.results[0]
    if result.error_code != ErrorCode.none:
        raise kafka_error(result.error_code, result.error_message, f"topic {name!r}")

    def grown(current: MetadataImage) -> bool:
        topic = current.topic(name)
        return topic is not None and len(topic.partitions) >= body.count

    await admin.caught_up(grown)
    return json_response(existing_topic(admin, name))


async def alter_configs(request: web.Request) -> web.Response:
    admin = context(request)
    name = request.match_info["name"]
    body = await read_body(request, AlterConfigs)
    both = set(body.set) & set(body.delete)
    if both:
        raise ApiError(
            400, "invalid_request", f"delete: {sorted(both)} also in set: keep one of them"
        )
    response = await admin.to_controller(
        incremental_alter_configs_request(name, body.set, body.delete)
    )
    result = response.responses[0]
    if result.error_code != ErrorCode.none:
        raise kafka_error(result.error_code, result.error_message, f"topic {name!r}")

    def applied(current: MetadataImage) -> bool:
        configs = current.topic_configs(name)
        return all(configs.get(key) == value for key, value in body.set.items()) and not any(
            key in configs for key in body.delete
        )

    await admin.caught_up(applied)
    return json_response(existing_topic(admin, name))
