"""SCRAM credentials as the controller writes them: from a password (bootstrap) or from the
salted password an AlterUserScramCredentials request carries, to the record that keeps only
the salt, the iterations and the RFC 5802 stored and server keys."""

from __future__ import annotations

import hashlib
import hmac

from controller.records import ScramMechanism, UserScramCredentialRecord
from net.sasl import scram_credential

_HASHES = {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}


def record_from_password(
    name: str, mechanism: ScramMechanism, password: str, iterations: int
) -> UserScramCredentialRecord:
    """The credential record of `name` for `password`, with a fresh random salt."""
    credential = scram_credential(mechanism.mechanism_name, password, iterations)
    return UserScramCredentialRecord(
        name,
        mechanism,
        credential.salt,
        credential.stored_key,
        credential.server_key,
        credential.iterations,
    )


def record_from_salted_password(
    name: str, mechanism: ScramMechanism, salt: bytes, salted_password: bytes, iterations: int
) -> UserScramCredentialRecord:
    """The credential record of a salted password (RFC 5802: StoredKey = H(HMAC(salted,
    "Client Key")), ServerKey = HMAC(salted, "Server Key")); the salted password is dropped."""
    digest = _HASHES[mechanism]
    client_key = hmac.digest(salted_password, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.digest(salted_password, b"Server Key", digest)
    return UserScramCredentialRecord(name, mechanism, salt, stored_key, server_key, iterations)
