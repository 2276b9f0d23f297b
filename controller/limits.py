"""How much one user request may make the controller write, as Kafka's QuorumController bounds it.

Every record of a request is placed, encoded, appended, committed and replayed by every node in
one go (the records are one atomic batch), so an unbounded request would hold the event loop of
the active controller, and of every broker replaying it, for as long as it takes. Kafka bounds
each user operation to `MAX_RECORDS_PER_USER_OP` records (QuorumController: the records are
collected in a `BoundedList`; the `BoundedListTooLongException` it throws is answered as a
`PolicyViolationException`), and refuses a CreateTopics asking for more than
`MAX_PARTITIONS_PER_REQUEST` partitions before it places any (ReplicationControlManager's
`validateTotalNumberOfPartitions`). A refused request writes nothing and gets POLICY_VIOLATION
for each of its topics (or resources), with Kafka's messages.
"""

from __future__ import annotations

# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP (= MAX_RECORDS_PER_BATCH).
MAX_RECORDS_PER_USER_OP = 10_000
# Kafka's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH.
MAX_PARTITIONS_PER_REQUEST = 10_000

TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."


class OperationTooLargeError(Exception):
    """The request would write more than its bound: refused whole, with POLICY_VIOLATION."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
