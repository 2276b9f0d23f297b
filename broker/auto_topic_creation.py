"""Topics created because a Metadata request named them (`auto.create.topics.enable`), as
Kafka's AutoTopicCreationManager does: the broker asks the active controller for each with its
own `num.partitions` and `default.replication.factor`.

At most one creation is in flight per topic name: clients repeat their Metadata request every
few hundred milliseconds until the topic has leaders, and each repeat while the creation is
pending asks nothing more of the controller. A creation that fails (no controller, too few
brokers for the replication factor) is logged; the next Metadata request naming the topic
tries again. A topic that already exists (created meanwhile by another broker or client) is
not a failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import structlog
from kio.schema.errors import ErrorCode

from controller.client import ControllerClient, NoControllerError, create_topics_request

log = structlog.get_logger(__name__)

_CREATED = frozenset({ErrorCode.none, ErrorCode.topic_already_exists})


class AutoTopicCreation:
    """Asks `controller` for topics of `num_partitions` partitions with `replication_factor`
    replicas."""

    def __init__(
        self,
        controller: ControllerClient,
        num_partitions: int,
        replication_factor: int,
        *,
        deadline_s: float = 30.0,
    ) -> None:
        self._controller = controller
        self._num_partitions = num_partitions
        self._replication_factor = replication_factor
        self._deadline_s = deadline_s
        self._in_flight: dict[str, asyncio.Task[None]] = {}

    @property
    def in_flight(self) -> frozenset[str]:
        """The topics whose creation has been asked and not yet answered."""
        return frozenset(self._in_flight)

    def create(self, names: Iterable[str]) -> None:
        """Ask for the topics `names` that are not already being created."""
        new = [name for name in dict.fromkeys(names) if name not in self._in_flight]
        if not new:
            return
        task = asyncio.create_task(self._create(new))
        for name in new:
            self._in_flight[name] = task

    async def _create(self, names: list[str]) -> None:
        request = create_topics_request(
            [(name, self._num_partitions, self._replication_factor) for name in names]
        )
        try:
            response = await self._controller.send(
                request, deadline_s=self._deadline_s, patient=True
            )
        except NoControllerError:
            log.warning("topic_auto_creation_failed", topics=names, reason="no active controller")
            return
        finally:
            for name in names:
                self._in_flight.pop(name, None)
        for topic in response.topics:
            if topic.error_code in _CREATED:
                log.info(
                    "topic_auto_created",
                    topic=topic.name,
                    partitions=self._num_partitions,
                    replication_factor=self._replication_factor,
                    already_existed=topic.error_code == ErrorCode.topic_already_exists,
                )
            else:
                log.warning(
                    "topic_auto_creation_failed",
                    topic=topic.name,
                    error=topic.error_code.name,
                    reason=topic.error_message,
                )

    async def close(self) -> None:
        """Cancel the creations in flight."""
        tasks = set(self._in_flight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
