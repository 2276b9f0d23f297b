"""Producer-id blocks: the AllocateProducerIds request on the active controller.

Pure: no I/O and no clock. The controller hands each broker's transaction coordinator a block
of `PRODUCER_ID_BLOCK_SIZE` consecutive producer ids and records where the next block starts
in a ProducerIdsRecord; replaying that record moves `MetadataImage.next_producer_id`, so the
next allocation on the replayed image continues after it and no id is handed out twice.

The rules are Kafka's ProducerIdControlManager.generateNextProducerId: the broker must be
registered with the broker epoch it sends (ClusterControlManager.checkBrokerEpoch, which
answers STALE_BROKER_EPOCH for an unknown broker and a wrong epoch alike); the first block
starts at 0; a block that would end past the int64 maximum is refused (UNKNOWN_SERVER_ERROR,
"Exhausted all producerIds").
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from controller.image import MetadataImage
from controller.records import MetadataRecord, ProducerIdsRecord

PRODUCER_ID_BLOCK_SIZE = 1000

_INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class ProducerIdsOutcome:
    """The AllocateProducerIdsResponse and the records to append.

    On success the block is `producer_id_start` .. `producer_id_start + producer_id_len - 1`
    and `records` holds the one ProducerIdsRecord; on error the block is empty (-1, 0), as in
    Kafka's response, and there are no records.
    """

    error: ErrorCode
    producer_id_start: int = -1
    producer_id_len: int = 0
    records: tuple[MetadataRecord, ...] = ()


def allocate_producer_ids(
    image: MetadataImage, broker_id: int, broker_epoch: int
) -> ProducerIdsOutcome:
    """An AllocateProducerIdsRequest from `broker_id` at `broker_epoch`: the next block.

    The block is only handed out once the record is committed; a call on the image with the
    record replayed gives the following block.
    """
    registration = image.brokers.get(broker_id)
    if registration is None or registration.broker_epoch != broker_epoch:
        return ProducerIdsOutcome(ErrorCode.stale_broker_epoch)
    start = max(image.next_producer_id, 0)
    if start > _INT64_MAX - PRODUCER_ID_BLOCK_SIZE:
        return ProducerIdsOutcome(ErrorCode.unknown_server_error)
    record = ProducerIdsRecord(
        broker_id, broker_epoch, next_producer_id=start + PRODUCER_ID_BLOCK_SIZE
    )
    return ProducerIdsOutcome(ErrorCode.none, start, PRODUCER_ID_BLOCK_SIZE, (record,))
