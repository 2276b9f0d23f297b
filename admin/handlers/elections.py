"""Leader elections and unclean recoveries: `POST /v1/elections` (preferred, unclean), what a
recovery of a partition sees (`GET /v1/topics/{name}/partitions/{p}/recovery`) and the manual
recovery (`POST /v1/recoveries`)."""

from __future__ import annotations

from aiohttp import web
from kio.schema.errors import ErrorCode

from admin.errors import ApiError, kafka_error
from admin.handlers.common import context, json_response, read_body
from admin.handlers.topics import existing_topic, partition_state
from admin.models import (
    Election,
    ElectionResult,
    ElectionResults,
    ElectionType,
    PartitionRecovery,
    RecoveryElection,
    ReplicaRecoveryView,
)
from controller.broker_lifecycle import broker_facts
from controller.client import elect_leaders_request, elect_recovered_leader_request
from controller.image import MetadataImage
from controller.partition_change import TopicPartition, needs_unclean_recovery, partition_config
from controller.unclean_recovery import best_replica, replicas_to_ask, usable_answers


async def recovery(request: web.Request) -> web.Response:
    name, index, _ = partition_state(request)
    status = context(request).status
    current = status.metadata_image()
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
                    log_end_offset=answers[replica].log_end_offset if replica in answers else None,
                )
                for replica in state.replicas
            ],
            best=None if best is None else best.broker_id,
            waiting_for=[r for r in asked if r not in answers],
        )
    )


async def elect_recovered_leader(request: web.Request) -> web.Response:
    admin = context(request)
    body = await read_body(request, RecoveryElection)
    topic = admin.image().topic(body.topic)
    if topic is None or body.partition not in topic.partitions:
        raise ApiError(404, "not_found", f"no partition {body.partition} of a topic {body.topic!r}")
    response = await admin.to_controller(
        elect_recovered_leader_request(topic.topic_id, body.partition, body.leader)
    )
    if response.error_code != ErrorCode.none:
        raise kafka_error(
            response.error_code, response.error_message, f"{body.topic}-{body.partition}"
        )

    def replayed(current: MetadataImage) -> bool:
        state = current.partition(topic.topic_id, body.partition)
        return state is None or state.has_leader

    await admin.caught_up(replayed)
    return json_response(existing_topic(admin, body.topic))


async def elect(request: web.Request) -> web.Response:
    admin = context(request)
    body = await read_body(request, Election)
    response = await admin.to_controller(
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

    await admin.caught_up(replayed)
    return json_response(ElectionResults(results=results))
