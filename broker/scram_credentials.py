"""The SCRAM credentials a SASL listener verifies: the users' records in the metadata image."""

from __future__ import annotations

from collections.abc import Callable

from controller.image import MetadataImage
from controller.records import ScramMechanism, UserScramCredentialRecord
from net.sasl import CredentialLookup, ScramCredential, password_check


def credential_of(record: UserScramCredentialRecord) -> ScramCredential:
    """What a SCRAM exchange verifies, from a user's credential record."""
    return ScramCredential(record.salt, record.stored_key, record.server_key, record.iterations)


def credential_lookup(image: Callable[[], MetadataImage]) -> CredentialLookup:
    """Looks a user's credential up in the current image, so that a credential altered or
    deleted in the metadata log counts from the next authentication on."""

    def lookup(user: str, mechanism_name: str) -> ScramCredential | None:
        mechanism = ScramMechanism.from_mechanism_name(mechanism_name)
        record = None if mechanism is None else image().scram_credential(user, mechanism)
        return None if record is None else credential_of(record)

    return lookup


def user_password_check(
    image: Callable[[], MetadataImage], user: str, password: str
) -> Callable[[], bool]:
    """Whether `password` is `user`'s by the credentials of the current image, as a check to
    run in a thread (it derives the salted password): HTTP Basic on the admin API checks it as
    PLAIN does."""
    return password_check(credential_lookup(image), user, password)
