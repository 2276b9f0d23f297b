"""The controller's SCRAM credential rules: Kafka's validation and error codes, records that
keep no password, descriptions without keys."""

from __future__ import annotations

import hashlib

import scramp
from kio.schema.errors import ErrorCode

from controller.image import MetadataImage
from controller.records import (
    RemoveUserScramCredentialRecord,
    ScramMechanism,
    UserScramCredentialRecord,
)
from controller.scram import (
    ScramAlteration,
    alter_scram_credentials,
    describe_scram_credentials,
    record_from_password,
)

SHA256 = ScramMechanism.SCRAM_SHA_256


def upsert(name: str, mechanism: int = 1, iterations: int = 4096) -> ScramAlteration:
    salt = b"0123456789abcdef"
    salted = hashlib.pbkdf2_hmac("sha256", b"secret", salt, iterations)
    return ScramAlteration(name, mechanism, iterations, salt, salted)


def test_an_upsertion_keeps_the_keys_scramp_derives_and_never_the_salted_password() -> None:
    records, results = alter_scram_credentials(MetadataImage.EMPTY, [upsert("alice")])
    assert [result.error for result in results] == [ErrorCode.none]
    (record,) = records
    assert isinstance(record, UserScramCredentialRecord)
    salt, stored_key, server_key, _ = scramp.ScramMechanism("SCRAM-SHA-256").make_auth_info(
        "secret", iteration_count=4096, salt=b"0123456789abcdef"
    )
    assert (record.salt, record.stored_key, record.server_key) == (salt, stored_key, server_key)
    assert upsert("alice").salted_password not in (record.stored_key, record.server_key)


def test_each_invalid_alteration_gets_kafkas_error_and_no_record() -> None:
    image = MetadataImage.from_records([record_from_password("bob", SHA256, "pw", 4096)])
    records, results = alter_scram_credentials(
        image,
        [
            upsert(""),
            upsert("few", iterations=4095),
            upsert("many", iterations=16385),
            upsert("odd", mechanism=3),
            ScramAlteration("odd-delete", 0),
            ScramAlteration("nobody", 1),
            upsert("twice"),
            ScramAlteration("twice", 2),
            ScramAlteration("bob", 1),
        ],
    )
    assert [(result.user, result.error) for result in results] == [
        ("", ErrorCode.unacceptable_credential),
        ("few", ErrorCode.unacceptable_credential),
        ("many", ErrorCode.unacceptable_credential),
        ("odd", ErrorCode.unsupported_sasl_mechanism),
        ("odd-delete", ErrorCode.unsupported_sasl_mechanism),
        ("nobody", ErrorCode.resource_not_found),
        ("twice", ErrorCode.duplicate_resource),
        ("bob", ErrorCode.none),
    ]
    assert records == [RemoveUserScramCredentialRecord("bob", SHA256)]


def test_descriptions_name_mechanisms_and_iterations_only() -> None:
    image = MetadataImage.from_records(
        [
            record_from_password("bob", SHA256, "pw", 4096),
            record_from_password("bob", ScramMechanism.SCRAM_SHA_512, "pw", 8192),
        ]
    )
    (every,) = describe_scram_credentials(image, None)
    assert every.user == "bob"
    assert every.credentials == ((SHA256, 4096), (ScramMechanism.SCRAM_SHA_512, 8192))
    named = describe_scram_credentials(image, ["bob", "nobody", "twice", "twice"])
    assert [(d.user, d.error) for d in named] == [
        ("bob", ErrorCode.none),
        ("nobody", ErrorCode.resource_not_found),
        ("twice", ErrorCode.duplicate_resource),
    ]
