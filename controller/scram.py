"""SCRAM credentials as the controller writes them: from a password (bootstrap) or from the
salted password an AlterUserScramCredentials request carries, to the record that keeps only
the salt, the iterations and the RFC 5802 stored and server keys.

The credentials of a new cluster are written in Kafka's `kafka-storage format --add-scram`
syntax (`parse_add_scram`), whether they come from `kraft format --add-scram` or from the
`bootstrap.scram.credentials` key: `SCRAM-SHA-256=[name=alice,password=alice-secret]`, with
`iterations=N`, `salt=BASE64` (with the password) or `salt=BASE64,saltedpassword=BASE64`
(instead of it); values may be double-quoted."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from controller.image import MetadataImage
from controller.records import (
    MetadataRecord,
    RemoveUserScramCredentialRecord,
    ScramMechanism,
    UserScramCredentialRecord,
)
from net.sasl import (
    DEFAULT_SCRAM_ITERATIONS,
    MAX_SCRAM_ITERATIONS,
    MIN_SCRAM_ITERATIONS,
    scram_credential,
)

_HASHES = {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}


def record_from_password(
    name: str,
    mechanism: ScramMechanism,
    password: str,
    iterations: int,
    salt: bytes | None = None,
) -> UserScramCredentialRecord:
    """The credential record of `name` for `password`, with `salt` or a fresh random one."""
    credential = scram_credential(mechanism.mechanism_name, password, iterations, salt)
    return UserScramCredentialRecord(
        name,
        mechanism,
        credential.salt,
        credential.stored_key,
        credential.server_key,
        credential.iterations,
    )


@dataclass(frozen=True, slots=True)
class ScramBootstrapCredential:
    """A SCRAM user of a new cluster, as `--add-scram` gives it: a password (with a salt or
    not), or a salt and a salted password. Never shown: its repr holds the name only."""

    mechanism: ScramMechanism
    name: str
    iterations: int = DEFAULT_SCRAM_ITERATIONS
    password: str | None = field(default=None, repr=False)
    salt: bytes | None = field(default=None, repr=False)
    salted_password: bytes | None = field(default=None, repr=False)

    def record(self) -> UserScramCredentialRecord:
        """The credential record (stored and server keys; the secrets stay here)."""
        if self.salted_password is not None:
            assert self.salt is not None
            return record_from_salted_password(
                self.name, self.mechanism, self.salt, self.salted_password, self.iterations
            )
        assert self.password is not None
        return record_from_password(
            self.name, self.mechanism, self.password, self.iterations, self.salt
        )


_ADD_SCRAM_ENTRY = re.compile(r"\s*(?P<mechanism>[A-Z0-9-]+)=\[(?P<fields>[^\]]*)\]\s*")
_ADD_SCRAM_KEYS = frozenset({"name", "password", "iterations", "salt", "saltedpassword"})


def parse_add_scram(text: str) -> tuple[ScramBootstrapCredential, ...]:
    """The credentials of `--add-scram` entries (several separated by ';'); ValueError saying
    what is wrong with one (never quoting a secret)."""
    credentials = []
    for entry in filter(str.strip, text.split(";")):
        match = _ADD_SCRAM_ENTRY.fullmatch(entry)
        mechanism = (
            None if match is None else ScramMechanism.from_mechanism_name(match["mechanism"])
        )
        if match is None or mechanism is None:
            raise ValueError(
                "expected SCRAM-SHA-256=[name=...,password=...] or SCRAM-SHA-512=[...]"
            )
        fields: dict[str, str] = {}
        for item in match["fields"].split(","):
            if not item.strip():
                continue
            key, separator, value = item.partition("=")
            key = key.strip().lower()
            if not separator or key not in _ADD_SCRAM_KEYS:
                raise ValueError(
                    f"{match['mechanism']}: unknown field {key!r}; expected name, password, "
                    "iterations, salt, saltedpassword"
                )
            fields[key] = value.strip().removeprefix('"').removesuffix('"')
        credentials.append(_bootstrap_credential(mechanism, fields))
    return tuple(credentials)


def _bootstrap_credential(
    mechanism: ScramMechanism, fields: dict[str, str]
) -> ScramBootstrapCredential:
    label = mechanism.mechanism_name
    name = fields.get("name")
    if not name:
        raise ValueError(f"a {label} user needs a name")
    try:
        iterations = int(fields.get("iterations", DEFAULT_SCRAM_ITERATIONS))
    except ValueError:
        raise ValueError(f"{label} user {name}: iterations must be a number") from None
    if not MIN_SCRAM_ITERATIONS <= iterations <= MAX_SCRAM_ITERATIONS:
        raise ValueError(
            f"{label} user {name}: SCRAM iterations must be "
            f"{MIN_SCRAM_ITERATIONS}..{MAX_SCRAM_ITERATIONS}"
        )
    salt = _base64_field(fields, "salt", label, name)
    salted_password = _base64_field(fields, "saltedpassword", label, name)
    password = fields.get("password")
    if (password is None) == (salted_password is None):
        raise ValueError(f"{label} user {name} needs a password or a saltedpassword (not both)")
    if salted_password is not None and salt is None:
        raise ValueError(f"{label} user {name}: a saltedpassword needs its salt")
    if password == "":
        raise ValueError(f"{label} user {name}: the password is empty")
    return ScramBootstrapCredential(mechanism, name, iterations, password, salt, salted_password)


def _base64_field(fields: dict[str, str], key: str, label: str, name: str) -> bytes | None:
    value = fields.get(key)
    if value is None:
        return None
    try:
        decoded = base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ValueError(f"{label} user {name}: {key} must be base64") from None
    if not decoded:
        raise ValueError(f"{label} user {name}: {key} is empty")
    return decoded


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


@dataclass(frozen=True, slots=True)
class ScramAlteration:
    """One deletion (`salted_password` None) or upsertion of AlterUserScramCredentials."""

    name: str
    mechanism: int
    iterations: int = 0
    salt: bytes = b""
    salted_password: bytes | None = None


@dataclass(frozen=True, slots=True)
class ScramResult:
    """The outcome for one user of AlterUserScramCredentials."""

    user: str
    error: ErrorCode = ErrorCode.none
    message: str | None = None


def alter_scram_credentials(
    image: MetadataImage, alterations: Sequence[ScramAlteration]
) -> tuple[list[MetadataRecord], list[ScramResult]]:
    """The records that apply `alterations` to `image`, and one result per user, in the order
    users first appear, validated as Kafka's ControllerApis and ScramControlManager do: a user
    altered twice in one request is refused whole (DUPLICATE_RESOURCE), an empty name or
    iterations outside 4096..16384 is UNACCEPTABLE_CREDENTIAL, an unknown mechanism
    UNSUPPORTED_SASL_MECHANISM, deleting a credential that does not exist RESOURCE_NOT_FOUND.
    A user's alteration is applied only if it is valid; the others' go ahead regardless."""
    by_user: dict[str, list[ScramAlteration]] = {}
    for alteration in alterations:
        by_user.setdefault(alteration.name, []).append(alteration)
    records: list[MetadataRecord] = []
    results = []
    for user, altered in by_user.items():
        if len(altered) > 1:
            results.append(
                ScramResult(
                    user,
                    ErrorCode.duplicate_resource,
                    "A user credential cannot be altered twice in the same request",
                )
            )
            continue
        record, result = _alter(image, altered[0])
        results.append(result)
        if record is not None:
            records.append(record)
    return records, results


def _alter(
    image: MetadataImage, alteration: ScramAlteration
) -> tuple[MetadataRecord | None, ScramResult]:
    user = alteration.name
    if not user:
        return None, ScramResult(
            user, ErrorCode.unacceptable_credential, "Username must not be empty"
        )
    try:
        mechanism = ScramMechanism(alteration.mechanism)
    except ValueError:
        return None, ScramResult(
            user, ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
        )
    if alteration.salted_password is None:
        if image.scram_credential(user, mechanism) is None:
            return None, ScramResult(
                user,
                ErrorCode.resource_not_found,
                "Attempt to delete a user credential that does not exist",
            )
        return RemoveUserScramCredentialRecord(user, mechanism), ScramResult(user)
    if alteration.iterations < MIN_SCRAM_ITERATIONS:
        return None, ScramResult(user, ErrorCode.unacceptable_credential, "Too few iterations")
    if alteration.iterations > MAX_SCRAM_ITERATIONS:
        return None, ScramResult(user, ErrorCode.unacceptable_credential, "Too many iterations")
    if not alteration.salt or not alteration.salted_password:
        return None, ScramResult(
            user, ErrorCode.unacceptable_credential, "Salt and salted password must not be empty"
        )
    record = record_from_salted_password(
        user, mechanism, alteration.salt, alteration.salted_password, alteration.iterations
    )
    return record, ScramResult(user)


@dataclass(frozen=True, slots=True)
class ScramDescription:
    """One user of DescribeUserScramCredentials: its (mechanism, iterations), or an error.
    Never a salt nor a key."""

    user: str
    credentials: tuple[tuple[ScramMechanism, int], ...] = ()
    error: ErrorCode = ErrorCode.none
    message: str | None = None


def describe_scram_credentials(
    image: MetadataImage, users: Sequence[str] | None
) -> list[ScramDescription]:
    """Every user with credentials (`users` None or empty), else the users named, as Kafka
    answers: a user named twice is DUPLICATE_RESOURCE, one without credentials
    RESOURCE_NOT_FOUND."""
    by_user: dict[str, list[tuple[ScramMechanism, int]]] = {}
    for (name, mechanism), record in sorted(image.scram_credentials.items()):
        by_user.setdefault(name, []).append((mechanism, record.iterations))
    if not users:
        return [ScramDescription(user, tuple(found)) for user, found in by_user.items()]
    counts = Counter(users)
    descriptions = []
    for user in dict.fromkeys(users):
        if counts[user] > 1:
            descriptions.append(
                ScramDescription(
                    user,
                    error=ErrorCode.duplicate_resource,
                    message="Cannot describe SCRAM credentials for the same user twice in a "
                    "single request",
                )
            )
        elif user not in by_user:
            descriptions.append(
                ScramDescription(
                    user,
                    error=ErrorCode.resource_not_found,
                    message=f"Attempt to describe a user credential that does not exist: {user}",
                )
            )
        else:
            descriptions.append(ScramDescription(user, tuple(by_user[user])))
    return descriptions
