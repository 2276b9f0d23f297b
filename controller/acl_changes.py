"""CreateAcls and DeleteAcls on the active controller: the records they write, pure.

As Kafka's AclControlManager: each new ACL is validated (INVALID_REQUEST otherwise) and gets a
fresh id; creating an ACL that exists already succeeds and writes nothing; each delete filter
removes every ACL it matches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from uuid import UUID

from controller.acls import AclBinding, AclFilter, AclIndex, InvalidAclError
from controller.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord


@dataclass(frozen=True, slots=True)
class AclCreationResult:
    """One ACL of a CreateAcls: created (or already there) unless `error` says why not."""

    error: InvalidAclError | None = None


@dataclass(frozen=True, slots=True)
class AclDeletionResult:
    """One filter of a DeleteAcls: the ACLs it deleted, or `error` (then none)."""

    deleted: tuple[AclBinding, ...] = ()
    error: InvalidAclError | None = None


def create_acls(
    index: AclIndex, acls: Iterable[AclBinding], new_id: Callable[[], UUID]
) -> tuple[list[AccessControlEntryRecord], list[AclCreationResult]]:
    """The records creating the valid `acls` that do not exist yet (an existing one succeeds
    without a record, as in Kafka), and one result per ACL asked for."""
    records: list[AccessControlEntryRecord] = []
    results: list[AclCreationResult] = []
    created: set[AclBinding] = set()
    for acl in acls:
        try:
            acl.validate()
        except InvalidAclError as error:
            results.append(AclCreationResult(error))
            continue
        if acl not in created and index.find(acl) is None:
            created.add(acl)
            records.append(AccessControlEntryRecord.of(new_id(), acl))
        results.append(AclCreationResult())
    return records, results


def delete_acls(
    index: AclIndex, filters: Iterable[AclFilter]
) -> tuple[list[RemoveAccessControlEntryRecord], list[AclDeletionResult]]:
    """The records removing every ACL some valid filter matches, and one result per filter
    (an ACL two filters match is removed once and reported by both, as Kafka reports it)."""
    records: list[RemoveAccessControlEntryRecord] = []
    results: list[AclDeletionResult] = []
    removed: set[UUID] = set()
    for acl_filter in filters:
        try:
            acl_filter.validate()
        except InvalidAclError as error:
            results.append(AclDeletionResult(error=error))
            continue
        matched = index.matching(acl_filter)
        for acl_id, _ in matched:
            if acl_id not in removed:
                removed.add(acl_id)
                records.append(RemoveAccessControlEntryRecord(acl_id))
        results.append(AclDeletionResult(tuple(acl for _, acl in matched)))
    return records, results
