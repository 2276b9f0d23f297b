"""The rebalance and drain plans of the admin API (`admin.handlers.rebalance`) over a metadata
image: the planner's moves as the API answers them, and the refusals (a fenced broker, a move
in progress, an impossible plan) with their HTTP statuses; and the route table documents the
reassignment and scaling operations."""

from __future__ import annotations

import json
from uuid import UUID

import pytest

from admin.errors import ApiError
from admin.handlers.rebalance import plan, plan_model
from admin.routes import document
from controller.partition_state import PartitionState
from tests.controller.images import broker, replay, topic

TOPIC_ID = UUID(int=7)


def state(
    *replicas: int, adding: tuple[int, ...] = (), removing: tuple[int, ...] = ()
) -> PartitionState:
    return PartitionState(
        replicas=replicas,
        isr=tuple(r for r in replicas if r not in adding),
        leader=replicas[0],
        adding_replicas=adding,
        removing_replicas=removing,
    )


def test_a_new_broker_receives_its_share_and_leaderships() -> None:
    image = replay(
        [broker(1), broker(2), broker(3), *topic("t", TOPIC_ID, *(state(1, 2) for _ in range(3)))]
    )
    chosen = plan(image)
    # As answered: JSON with `from` and `to` per move.
    answer = json.loads(plan_model(chosen, started=False, detail="dry run").model_dump_json())
    assert answer["replicas_moved"] == 2
    counts = {b["broker"]: (b["replicas_after"], b["leaders_after"]) for b in answer["brokers"]}
    assert counts == {1: (2, 1), 2: (2, 1), 3: (2, 1)}
    for move in answer["moves"]:
        assert set(move) == {"topic", "partition", "from", "to", "adding", "removing"}
        assert move["adding"] == [b for b in move["to"] if b not in move["from"]]


def test_draining_moves_everything_off_the_broker() -> None:
    image = replay(
        [broker(1), broker(2), broker(3), *topic("t", TOPIC_ID, state(3, 1), state(2, 3))]
    )
    chosen = plan(image, removing={3})
    assert chosen.replicas_moved == 2
    assert all(3 not in move.target for move in chosen.moves)


def test_refusals() -> None:
    fenced = replay([broker(1), broker(2, fenced=True), *topic("t", TOPIC_ID, state(1))])
    with pytest.raises(ApiError) as refused:
        plan(fenced)
    assert (refused.value.status, refused.value.error) == (409, "broker_fenced")
    # Draining the fenced broker itself is what removes a dead one.
    assert plan(fenced, removing={2}).moves == ()

    moving = replay(
        [broker(1), broker(2), *topic("t", TOPIC_ID, state(2, 1, adding=(2,), removing=(1,)))]
    )
    with pytest.raises(ApiError) as refused:
        plan(moving)
    assert (refused.value.status, refused.value.error) == (409, "reassignment_in_progress")

    too_few = replay([broker(1), broker(2), *topic("t", TOPIC_ID, state(1, 2))])
    with pytest.raises(ApiError) as refused:
        plan(too_few, removing={2})
    assert (refused.value.status, refused.value.error) == (409, "cannot_rebalance")


def test_the_document_has_the_reassignment_and_scaling_operations() -> None:
    paths = document()["paths"]
    statuses = {
        (method, path): sorted(paths[path][method]["responses"])
        for path, method in [
            ("/v1/reassignments", "get"),
            ("/v1/reassignments", "post"),
            ("/v1/reassignments/{name}/{p}", "delete"),
            ("/v1/rebalance", "post"),
            ("/v1/brokers/{id}/drain", "post"),
            ("/v1/brokers/{id}", "delete"),
        ]
    }
    assert statuses == {
        ("get", "/v1/reassignments"): ["200", "401", "403"],
        ("post", "/v1/reassignments"): ["202", "400", "401", "403", "404", "409", "503"],
        ("delete", "/v1/reassignments/{name}/{p}"): ["200", "401", "403", "404", "503"],
        ("post", "/v1/rebalance"): ["200", "400", "401", "403", "409", "503"],
        ("post", "/v1/brokers/{id}/drain"): ["202", "401", "403", "404", "409", "503"],
        ("delete", "/v1/brokers/{id}"): ["204", "401", "403", "404", "409", "503"],
    }
