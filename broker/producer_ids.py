"""InitProducerId for idempotent producers: producer ids from the controller's blocks.

The broker takes blocks of producer ids from the active controller (AllocateProducerIds, with
its broker epoch) and hands them out one by one, as Kafka's RPCProducerIdManager does, so no
two producers in the cluster ever share an id. Every InitProducerId without a transactional
id gets a fresh producer id at epoch 0 (Kafka's answer for idempotent producers). Transactions
are not supported: a transactional id is refused with INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog
from kio.schema.allocate_producer_ids import v0 as allocate_producer_ids_v0
from kio.schema.errors import ErrorCode

from controller.acls import AclOperation, Authorizer, ResourceType
from controller.client import ControllerClient, NoControllerError
from net import messages
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.protocol import NO_THROTTLE, make_entity

log = structlog.get_logger(__name__)

INIT_PRODUCER_ID_VERSIONS = (0, 4)


class ProducerIdBlocks:
    """Producer ids for this broker, a block from the controller at a time."""

    def __init__(
        self, client: ControllerClient, broker_id: int, broker_epoch: Callable[[], int]
    ) -> None:
        self._client = client
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._next = 0
        self._end = 0
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        """A producer id no one else has; raises NoControllerError or RuntimeError (refused)."""
        async with self._lock:
            if self._next >= self._end:
                await self._allocate()
            producer_id = self._next
            self._next += 1
            return producer_id

    async def _allocate(self) -> None:
        response: allocate_producer_ids_v0.AllocateProducerIdsResponse = await self._client.send(
            make_entity(
                allocate_producer_ids_v0.AllocateProducerIdsRequest,
                broker_id=self._broker_id,
                broker_epoch=self._broker_epoch(),
            )
        )
        if response.error_code != ErrorCode.none:
            raise RuntimeError(f"producer id block refused: {ErrorCode(response.error_code).name}")
        self._next = response.producer_id_start
        self._end = response.producer_id_start + response.producer_id_len
        log.info(
            "producer_id_block_allocated",
            producer_id_start=self._next,
            producer_id_len=response.producer_id_len,
        )


class InitProducerIdApi:
    """InitProducerId on the client listener."""

    def __init__(self, blocks: ProducerIdBlocks, authorizer: Authorizer | None = None) -> None:
        self._blocks = blocks
        self._authorizer = authorizer

    def register(self, registry: ApiRegistry) -> None:
        registry.register(
            ApiKey.INIT_PRODUCER_ID,
            self._on_init_producer_id,
            min_version=INIT_PRODUCER_ID_VERSIONS[0],
            max_version=INIT_PRODUCER_ID_VERSIONS[1],
        )

    async def _on_init_producer_id(
        self, context: RequestContext, request: messages.InitProducerIdRequest
    ) -> messages.InitProducerIdResponse:
        schema = messages.INIT_PRODUCER_ID_RESPONSES[context.header.api_version]

        def answer(
            error: ErrorCode, producer_id: int = -1, epoch: int = -1
        ) -> messages.InitProducerIdResponse:
            return make_entity(
                schema,
                throttle_time=NO_THROTTLE,
                error_code=error,
                producer_id=producer_id,
                producer_epoch=epoch,
            )

        if request.transactional_id is not None:
            return answer(ErrorCode.invalid_request)
        # As Kafka: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on
        # some topic.
        authorizer = self._authorizer
        if not (
            authorizer is None
            or authorizer.allows_cluster(context, AclOperation.IDEMPOTENT_WRITE)
            or authorizer.allows_any(context, AclOperation.WRITE, ResourceType.TOPIC)
        ):
            return answer(ErrorCode.cluster_authorization_failed)
        try:
            producer_id = await self._blocks.next_id()
        except (NoControllerError, RuntimeError) as error:
            log.warning("init_producer_id_failed", error=str(error))
            return answer(ErrorCode.coordinator_not_available)
        return answer(ErrorCode.none, producer_id, 0)
