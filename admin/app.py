"""The aiohttp application of the admin listener.

The node hands it a read model (`NodeStatus`); reads render the node's metadata image and
replica state as the pydantic models of `admin.models`, and mutations go to the active
controller as Kafka requests (CreateTopics, DeleteTopics, CreatePartitions,
IncrementalAlterConfigs, ElectLeaders), the same ones Kafka admin clients send, so the two can
never disagree; a manual unclean recovery sends our own ElectRecoveredLeader. Every route is
declared once in a table that builds both the router and the OpenAPI document
(`/v1/openapi.json`). Errors are JSON `{"error", "message"}` with the HTTP status.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import aiohttp
import structlog
from aiohttp import web
from aiohttp.typedefs import Handler
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32
from kio.static.protocol import Payload
from pydantic import BaseModel, ValidationError

from admin.errors import ApiError, kafka_error
from admin.metrics import CONTENT_TYPE_LATEST, NodeMetrics
from admin.models import (
    TOPIC_NAME_PATTERN,
    AddPartitions,
    AlterConfigs,
    Broker,
    Cluster,
    CreateTopic,
    Election,
    ElectionResult,
    ElectionResults,
    ElectionType,
    ErrorResponse,
    Event,
    Health,
    Metadata,
    Partition,
    PartitionDetail,
    PartitionRecovery,
    Quorum,
    Reassignment,
    RecoveryElection,
    ReplicaLog,
    ReplicaRecoveryView,
    Topic,
)
from admin.openapi import PathParam, Route, openapi_document
from controller.broker_lifecycle import TopicPartition, broker_facts, partition_config
from controller.client import (
    NoControllerError,
    create_partitions_request,
    create_topics_request,
    delete_topics_request,
    elect_leaders_request,
    incremental_alter_configs_request,
)
from controller.image import MetadataImage
from controller.partition_change import PartitionConfig, needs_unclean_recovery
from controller.records import ReplicaLogState
from controller.unclean_recovery import best_replica, replicas_to_ask, usable_answers
from net.manual_recovery import ElectRecoveredLeaderRequest

API_PREFIX = "/v1"
# The listener name under which a broker registers its admin endpoint, so any node can ask a
# partition leader's admin API for its log view. Kafka clients never see it: Metadata answers
# give only the client listener.
ADMIN_LISTENER = "ADMIN"
# How long a mutation waits for the answering node to replay what the controller committed, so
# that a read after the answer sees it.
_CATCH_UP_S = 5.0
_LEADER_LOG_TIMEOUT_S = 2.0
# The HTTP client that asks other nodes for their replicas' log views.
_SESSION = web.AppKey("leader_log_session", aiohttp.ClientSession)

log = structlog.get_logger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)


class NodeStatus(Protocol):
    """What the admin API reads from the node, and its way to the active controller."""

    @property
    def cluster_id(self) -> str:
        """The cluster this node belongs to."""

    def readiness(self) -> str | None:
        """None when ready to serve; otherwise why not, in a sentence."""

    def controller_id(self) -> int | None:
        """The quorum leader (the active controller) this node knows of."""

    async def quorum(self) -> Quorum | None:
        """The quorum with the leader's view of replica progress, or None if this node does
        not take part in one."""

    def metadata_image(self) -> MetadataImage:
        """The node's metadata image: every committed entry it has replayed."""

    def replica_log(self, topic: str, partition: int) -> ReplicaLog | None:
        """This node's replica of the partition, if it hosts one."""

    def events(self) -> list[Event]:
        """The event log derived from the metadata log (the newest kept), newest last."""

    async def send_to_controller(self, request: Payload) -> Any:
        """The active controller's response; NoControllerError if none answers in time."""

    @property
    def partition_defaults(self) -> PartitionConfig:
        """The cluster's partition configuration, before topic overrides."""

    async def inspect_replica_logs(
        self, image: MetadataImage, asked: Mapping[int, Sequence[TopicPartition]]
    ) -> dict[TopicPartition, list[ReplicaLogState]]:
        """The brokers' GetReplicaLogInfo answers about the partitions `asked` (by broker)."""


def json_response(model: BaseModel, status: int = 200) -> web.Response:
    return web.Response(
        body=model.model_dump_json(), status=status, content_type="application/json"
    )


def error_response(status: int, error: str, message: str) -> web.Response:
    return json_response(ErrorResponse(error=error, message=message), status)


def json_response_list(models: Sequence[BaseModel]) -> web.Response:
    body = "[" + ",".join(model.model_dump_json() for model in models) + "]"
    return web.Response(body=body, content_type="application/json")


def broker_model(image: MetadataImage, broker_id: int) -> Broker:
    broker = image.brokers[broker_id]
    return Broker(
        id=broker.broker_id,
        epoch=broker.broker_epoch,
        incarnation_id=str(broker.incarnation_id),
        fenced=broker.fenced,
        in_controlled_shutdown=broker.in_controlled_shutdown,
        rack=broker.rack,
        listeners=[f"{e.name}://{e.host}:{e.port}" for e in broker.listeners],
    )


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
            Partition(
                partition=partition_id,
                leader=state.leader,
                leader_epoch=state.leader_epoch,
                partition_epoch=state.partition_epoch,
                replicas=list(state.replicas),
                isr=list(state.isr),
                elr=list(state.elr),
                last_known_elr=list(state.last_known_elr),
            )
            for partition_id, state in sorted(topic.partitions.items())
        ],
    )


def metadata_model(image: MetadataImage) -> Metadata:
    """The admin view of a metadata image: brokers by id, topics by name."""
    return Metadata(
        metadata_offset=image.end_offset,
        brokers=[broker_model(image, broker_id) for broker_id in sorted(image.brokers)],
        topics=[
            model
            for name in sorted(image.topic_ids)
            if (model := topic_model(image, name)) is not None
        ],
    )


def admin_address(image: MetadataImage, broker_id: int) -> tuple[str, int] | None:
    """Where broker `broker_id`'s admin API listens, as it registered."""
    broker = image.brokers.get(broker_id)
    if broker is None:
        return None
    for endpoint in broker.listeners:
        if endpoint.name == ADMIN_LISTENER:
            return endpoint.host, endpoint.port
    return None


def validation_message(error: ValidationError) -> str:
    """Each problem of `error` as `field.path: what is wrong`."""
    return "; ".join(
        f"{'.'.join(str(part) for part in problem['loc']) or 'body'}: {problem['msg']}"
        for problem in error.errors()
    )


async def read_body(request: web.Request, model: type[ModelT]) -> ModelT:
    """The request's JSON body as `model`; ApiError 400 naming the field otherwise."""
    try:
        return model.model_validate_json(await request.read())
    except ValidationError as error:
        if any(problem["type"] == "json_invalid" for problem in error.errors()):
            raise ApiError(400, "invalid_json", validation_message(error)) from error
        raise ApiError(400, "invalid_request", validation_message(error)) from error


def create_app(
    status: NodeStatus, *, token: str | None = None, metrics: NodeMetrics | None = None
) -> web.Application:
    """The admin application over `status`; mutations need `Bearer token` when one is set.
    With `metrics`, `GET /metrics` serves them in Prometheus text format (outside `/v1` and the
    OpenAPI document, as scrapers expect)."""

    def image() -> MetadataImage:
        return status.metadata_image()

    def existing_topic(name: str) -> Topic:
        model = topic_model(image(), name)
        if model is None:
            raise ApiError(404, "not_found", f"no topic named {name!r}")
        return model

    async def to_controller(request: Payload) -> Any:
        try:
            return await status.send_to_controller(request)
        except NoControllerError as error:
            raise ApiError(503, "no_controller", str(error)) from error

    async def caught_up(done: Callable[[MetadataImage], bool]) -> None:
        # The controller answers once its records committed; this node replays them a moment
        # later. Waiting here gives read-your-writes on the node that answered.
        deadline = time.monotonic() + _CATCH_UP_S
        while not done(image()):
            if time.monotonic() >= deadline:
                raise ApiError(
                    503,
                    "not_caught_up",
                    "the controller committed the change, but this node has not replayed it "
                    f"within {_CATCH_UP_S:g} s; read it again shortly",
                )
            await asyncio.sleep(0.02)

    # -- reads --------------------------------------------------------------------------------

    async def live(_: web.Request) -> web.Response:
        return json_response(Health(status="ok"))

    async def ready(_: web.Request) -> web.Response:
        reason = status.readiness()
        if reason is None:
            return json_response(Health(status="ok"))
        return json_response(Health(status="unavailable", reason=reason), 503)

    async def cluster(_: web.Request) -> web.Response:
        current = image()
        controller = status.controller_id()
        return json_response(
            Cluster(
                cluster_id=status.cluster_id,
                controller_id=-1 if controller is None else controller,
                metadata_offset=current.end_offset,
                brokers=len(current.brokers),
                topics=len(current.topic_ids),
            )
        )

    async def quorum(_: web.Request) -> web.Response:
        known = await status.quorum()
        if known is None:
            raise ApiError(404, "not_found", "this node is not part of a quorum")
        return json_response(known)

    async def metadata(_: web.Request) -> web.Response:
        return json_response(metadata_model(image()))

    async def brokers(_: web.Request) -> web.Response:
        current = image()
        return json_response_list([broker_model(current, b) for b in sorted(current.brokers)])

    async def broker(request: web.Request) -> web.Response:
        broker_id = int(request.match_info["id"])
        current = image()
        if broker_id not in current.brokers:
            raise ApiError(404, "not_found", f"no broker {broker_id} is registered")
        return json_response(broker_model(current, broker_id))

    async def topics(_: web.Request) -> web.Response:
        return json_response_list(metadata_model(image()).topics)

    async def topic(request: web.Request) -> web.Response:
        return json_response(existing_topic(request.match_info["name"]))

    def partition_state(request: web.Request) -> tuple[str, int, Partition]:
        name = request.match_info["name"]
        index = int(request.match_info["p"])
        for partition in existing_topic(name).partitions:
            if partition.partition == index:
                return name, index, partition
        raise ApiError(404, "not_found", f"topic {name!r} has no partition {index}")

    async def leader_log(name: str, state: Partition) -> tuple[ReplicaLog | None, str | None]:
        """The leader's log view, asked of the leader's admin API unless this node leads."""
        if state.leader < 0:
            return None, "the partition has no leader"
        local = status.replica_log(name, state.partition)
        if local is not None and local.is_leader:
            return local, None
        address = admin_address(image(), state.leader)
        if address is None:
            return None, f"leader {state.leader} registered no admin listener"
        host, port = address
        url = f"http://{host}:{port}{API_PREFIX}/topics/{name}/partitions/{state.partition}/log"
        session: aiohttp.ClientSession = app[_SESSION]
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
        view, problem = await leader_log(name, state)
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
        local = status.replica_log(name, index)
        if local is None:
            raise ApiError(404, "not_found", f"this node hosts no replica of {name}-{index}")
        return json_response(local)

    async def events(_: web.Request) -> web.Response:
        return json_response_list(status.events())

    async def not_implemented(_: web.Request) -> web.Response:
        raise ApiError(
            501,
            "not_implemented",
            "partition reassignment is not implemented yet: the controller cannot execute one",
        )

    async def openapi(_: web.Request) -> web.Response:
        return web.json_response(document)

    # -- mutations ----------------------------------------------------------------------------

    async def create_topic(request: web.Request) -> web.Response:
        body = await read_body(request, CreateTopic)
        response = await to_controller(
            create_topics_request(
                [(body.name, body.partitions, body.replication_factor)], configs=body.configs
            )
        )
        result = response.topics[0]
        if result.error_code != ErrorCode.none:
            raise kafka_error(result.error_code, result.error_message, f"topic {body.name!r}")
        await caught_up(lambda current: current.topic(body.name) is not None)
        return json_response(existing_topic(body.name), 201)

    async def delete_topic(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        response = await to_controller(delete_topics_request([name]))
        result = response.responses[0]
        if result.error_code != ErrorCode.none:
            raise kafka_error(result.error_code, result.error_message, f"topic {name!r}")
        await caught_up(lambda current: current.topic(name) is None)
        return web.Response(status=204)

    async def add_partitions(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = await read_body(request, AddPartitions)
        response = await to_controller(create_partitions_request([(name, body.count)]))
        result = response.results[0]
        if result.error_code != ErrorCode.none:
            raise kafka_error(result.error_code, result.error_message, f"topic {name!r}")

        def grown(current: MetadataImage) -> bool:
            topic = current.topic(name)
            return topic is not None and len(topic.partitions) >= body.count

        await caught_up(grown)
        return json_response(existing_topic(name))

    async def alter_configs(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = await read_body(request, AlterConfigs)
        both = set(body.set) & set(body.delete)
        if both:
            raise ApiError(
                400, "invalid_request", f"delete: {sorted(both)} also in set: keep one of them"
            )
        response = await to_controller(
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

        await caught_up(applied)
        return json_response(existing_topic(name))

    async def recovery(request: web.Request) -> web.Response:
        name, index, _ = partition_state(request)
        current = image()
        topic = current.topic(name)
        assert topic is not None
        state = topic.partitions[index]
        tp = TopicPartition(topic.topic_id, index)
        config = partition_config(current, name, status.partition_defaults)
        strategy = config.unclean_recovery_strategy
        facts = broker_facts(current)
        logs = await status.inspect_replica_logs(current, {b: [tp] for b in state.replicas})
        epochs = {b: r.broker_epoch for b, r in current.brokers.items()}
        answers = {a.broker_id: a for a in usable_answers(state, facts, epochs, logs.get(tp, []))}
        asked = replicas_to_ask(state, strategy)
        best = best_replica(state, answers.values())
        return json_response(
            PartitionRecovery(
                topic=name,
                partition=index,
                strategy=strategy.value,
                needs_recovery=needs_unclean_recovery(state, facts, config),
                leader=state.leader,
                isr=list(state.isr),
                elr=list(state.elr),
                last_known_elr=list(state.last_known_elr),
                replicas=[
                    ReplicaRecoveryView(
                        broker=replica,
                        fenced=replica not in facts.unfenced,
                        broker_epoch=epochs.get(replica),
                        asked=replica in asked,
                        answered=replica in answers,
                        last_written_leader_epoch=answers[replica].last_written_leader_epoch
                        if replica in answers
                        else None,
                        log_end_offset=answers[replica].log_end_offset
                        if replica in answers
                        else None,
                    )
                    for replica in state.replicas
                ],
                best=None if best is None else best.broker_id,
                waiting_for=[r for r in asked if r not in answers],
            )
        )

    async def elect_recovered_leader(request: web.Request) -> web.Response:
        body = await read_body(request, RecoveryElection)
        topic = image().topic(body.topic)
        if topic is None or body.partition not in topic.partitions:
            raise ApiError(
                404, "not_found", f"no partition {body.partition} of a topic {body.topic!r}"
            )
        response = await to_controller(
            ElectRecoveredLeaderRequest(
                topic_id=topic.topic_id, partition=i32(body.partition), leader=i32(body.leader)
            )
        )
        if response.error_code != ErrorCode.none:
            raise kafka_error(
                response.error_code, response.error_message, f"{body.topic}-{body.partition}"
            )

        def replayed(current: MetadataImage) -> bool:
            state = current.partition(topic.topic_id, body.partition)
            return state is None or state.has_leader

        await caught_up(replayed)
        return json_response(existing_topic(body.topic))

    async def elect(request: web.Request) -> web.Response:
        body = await read_body(request, Election)
        response = await to_controller(
            elect_leaders_request(
                body.type is ElectionType.UNCLEAN,
                [(ref.topic, ref.partition) for ref in body.partitions],
            )
        )
        if response.error_code != ErrorCode.none:
            raise kafka_error(response.error_code, None, "the election")
        results = [
            ElectionResult(
                topic=topic.topic,
                partition=result.partition_id,
                error=None if result.error_code == ErrorCode.none else result.error_code.name,
                message=result.error_message,
            )
            for topic in response.replica_election_results
            for result in topic.partition_result
        ]
        elected = [(r.topic, r.partition) for r in results if r.error is None]

        def replayed(current: MetadataImage) -> bool:
            # A preferred election leaves the first replica leading; an unclean one, someone.
            for topic_name, index in elected:
                topic = current.topic(topic_name)
                state = None if topic is None else topic.partitions.get(index)
                if state is None:
                    continue
                if body.type is ElectionType.PREFERRED and state.leader != state.replicas[0]:
                    return False
                if not state.has_leader:
                    return False
            return True

        await caught_up(replayed)
        return json_response(ElectionResults(results=results))

    name_param = PathParam(
        "name", {"type": "string", "pattern": TOPIC_NAME_PATTERN}, "the topic's name"
    )
    partition_param = PathParam(
        "p", {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}, "the partition index"
    )
    routes = [
        Route("GET", "/v1/health/live", live, "the process is up", Health),
        Route(
            "GET",
            "/v1/health/ready",
            ready,
            "ready: a quorum leader is known",
            Health,
            errors=(503,),
        ),
        Route("GET", "/v1/cluster", cluster, "the cluster", Cluster),
        Route("GET", "/v1/quorum", quorum, "the controller quorum", Quorum, errors=(404,)),
        Route("GET", "/v1/metadata", metadata, "the whole metadata image", Metadata),
        Route("GET", "/v1/brokers", brokers, "registered brokers", Broker, response_is_list=True),
        Route(
            "GET",
            "/v1/brokers/{id}",
            broker,
            "one broker",
            Broker,
            params=(PathParam("id", {"type": "integer", "minimum": 0}, "the broker id"),),
            errors=(404,),
        ),
        Route("GET", "/v1/topics", topics, "every topic", Topic, response_is_list=True),
        Route(
            "POST",
            "/v1/topics",
            create_topic,
            "create a topic",
            Topic,
            status=201,
            body=CreateTopic,
            errors=(404, 409, 503),
            mutation=True,
        ),
        Route(
            "GET",
            "/v1/topics/{name}",
            topic,
            "one topic",
            Topic,
            params=(name_param,),
            errors=(404,),
        ),
        Route(
            "DELETE",
            "/v1/topics/{name}",
            delete_topic,
            "delete a topic",
            None,
            status=204,
            params=(name_param,),
            errors=(400, 404, 503),
            mutation=True,
        ),
        Route(
            "POST",
            "/v1/topics/{name}/partitions",
            add_partitions,
            "raise a topic's partition count",
            Topic,
            body=AddPartitions,
            params=(name_param,),
            errors=(404, 409, 503),
            mutation=True,
        ),
        Route(
            "PATCH",
            "/v1/topics/{name}/configs",
            alter_configs,
            "set and delete a topic's config overrides",
            Topic,
            body=AlterConfigs,
            params=(name_param,),
            errors=(503,),
            mutation=True,
        ),
        Route(
            "GET",
            "/v1/topics/{name}/partitions/{p}",
            partition,
            "a partition with its leader's log view",
            PartitionDetail,
            params=(name_param, partition_param),
            errors=(404,),
        ),
        Route(
            "GET",
            "/v1/topics/{name}/partitions/{p}/log",
            replica_log,
            "this node's replica's log view",
            ReplicaLog,
            params=(name_param, partition_param),
            errors=(404,),
        ),
        Route(
            "GET",
            "/v1/topics/{name}/partitions/{p}/recovery",
            recovery,
            "what an unclean recovery of the partition sees and would choose now (every "
            "replica asked for its log)",
            PartitionRecovery,
            params=(name_param, partition_param),
            errors=(404,),
        ),
        Route(
            "POST",
            "/v1/recoveries",
            elect_recovered_leader,
            "manual unclean recovery: elect the chosen replica of a leaderless partition "
            "(a potential data-loss event); the topic with its partitions after the change",
            Topic,
            body=RecoveryElection,
            errors=(400, 404, 409, 503),
            mutation=True,
        ),
        Route(
            "POST",
            "/v1/elections",
            elect,
            "elect leaders (preferred or unclean)",
            ElectionResults,
            body=Election,
            errors=(409, 503),
            mutation=True,
        ),
        Route(
            "GET",
            "/v1/events",
            events,
            "state-change and data-loss events, newest last",
            Event,
            response_is_list=True,
        ),
        Route(
            "GET",
            "/v1/reassignments",
            not_implemented,
            "ongoing reassignments (not implemented)",
            None,
            errors=(501,),
        ),
        Route(
            "POST",
            "/v1/reassignments",
            not_implemented,
            "start a reassignment (not implemented)",
            None,
            body=Reassignment,
            errors=(501,),
            mutation=True,
        ),
        Route(
            "DELETE",
            "/v1/reassignments/{name}/{p}",
            not_implemented,
            "cancel a reassignment (not implemented)",
            None,
            params=(name_param, partition_param),
            errors=(501,),
            mutation=True,
        ),
    ]
    routes.append(Route("GET", "/v1/openapi.json", openapi, "this document", None))
    document = openapi_document(
        routes,
        title="kraft-broker admin API",
        version="1",
        description="Reads answer from the answering node's metadata image; mutations are "
        "forwarded to the active controller as Kafka requests.",
    )

    def guarded(route: Route) -> Handler:
        if not route.mutation or token is None:
            return route.handler
        expected = f"Bearer {token}".encode()

        async def handler(request: web.Request) -> web.StreamResponse:
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                raise ApiError(401, "unauthorized", "this request needs 'Authorization: Bearer'")
            return await route.handler(request)

        return handler

    @web.middleware
    async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.monotonic()
        error: str | None = None
        try:
            response: web.StreamResponse = await handler(request)
        except ApiError as refused:
            error = refused.error
            response = error_response(refused.status, refused.error, refused.message)
            if refused.status == 401:
                response.headers["WWW-Authenticate"] = "Bearer"
        except web.HTTPException as refused:
            if refused.status < 400:
                raise
            error = refused.reason.lower().replace(" ", "_")
            response = error_response(refused.status, error, refused.text or refused.reason)
        except Exception as failure:
            # A bug, not bad input: still a JSON answer, and the traceback in the node's log.
            log.exception("admin_request_failed", method=request.method, path=request.path)
            error = "internal_error"
            response = error_response(500, error, repr(failure))
        if request.method != "GET":
            # One event per mutation with its outcome.
            log.info(
                "admin_request",
                method=request.method,
                path=request.path,
                status=response.status,
                error=error,
                duration_ms=round((time.monotonic() - started) * 1000, 1),
            )
        return response

    async def open_session(app: web.Application) -> Any:
        app[_SESSION] = aiohttp.ClientSession()
        yield
        await app[_SESSION].close()

    app = web.Application(middlewares=[json_errors])
    app.cleanup_ctx.append(open_session)
    for route in routes:
        app.router.add_route(route.method, route.router_path, guarded(route))
    if metrics is not None:
        exposition = metrics

        async def scrape(_: web.Request) -> web.Response:
            response = web.Response(body=exposition.render())
            response.headers["Content-Type"] = CONTENT_TYPE_LATEST
            return response

        app.router.add_get("/metrics", scrape)
    return app
