"""The SASL authenticator state machine against a real SCRAM client (`scramp`'s)."""

from __future__ import annotations

import pytest
import scramp
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.response import SaslAuthenticateResponse
from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse

from net.sasl import (
    PLAIN,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    SaslAuthenticator,
    SaslClientCredentials,
    ScramCredential,
    parse_jaas_config,
    scram_credential,
)

USERS = {
    ("alice", SCRAM_SHA_256): scram_credential(SCRAM_SHA_256, "alice-secret", 4096),
    ("alice", SCRAM_SHA_512): scram_credential(SCRAM_SHA_512, "alice-secret", 8192),
}


def lookup(user: str, mechanism: str) -> ScramCredential | None:
    return USERS.get((user, mechanism))


def authenticator() -> SaslAuthenticator:
    return SaslAuthenticator((PLAIN, SCRAM_SHA_256, SCRAM_SHA_512), lookup)


def scram_login(mechanism: str, user: str, password: str) -> tuple[SaslAuthenticator, bool]:
    sasl = authenticator()
    assert sasl.handshake(mechanism).response is not None
    client = scramp.ScramClient([mechanism], user, password)
    first = sasl.authenticate(2, client.get_client_first().encode())
    assert isinstance(first.response, SaslAuthenticateResponse)
    if first.close:
        assert first.response.error_code == ErrorCode.sasl_authentication_failed
        return sasl, False
    client.set_server_first(first.response.auth_bytes.decode())
    final = sasl.authenticate(2, client.get_client_final().encode())
    assert isinstance(final.response, SaslAuthenticateResponse)
    if final.close:
        assert final.response.error_code == ErrorCode.sasl_authentication_failed
        assert final.response.session_lifetime.total_seconds() == 0
        return sasl, False
    client.set_server_final(final.response.auth_bytes.decode())
    assert final.user == user
    return sasl, True


def test_scram_sha_256_and_512_authenticate_a_user_and_prove_the_server() -> None:
    for mechanism in (SCRAM_SHA_256, SCRAM_SHA_512):
        sasl, ok = scram_login(mechanism, "alice", "alice-secret")
        assert ok and sasl.complete and sasl.user == "alice"


def test_scram_refuses_a_wrong_password_and_an_unknown_user_alike() -> None:
    for user, password in (("alice", "wrong"), ("mallory", "alice-secret")):
        sasl, ok = scram_login(SCRAM_SHA_256, user, password)
        assert not ok and not sasl.complete


def test_plain_verifies_the_password_against_the_scram_credential() -> None:
    for token, user in (
        (b"\0alice\0alice-secret", "alice"),
        (b"alice\0alice\0alice-secret", "alice"),
        (b"\0alice\0wrong", None),
        (b"\0mallory\0alice-secret", None),
        (b"bob\0alice\0alice-secret", None),
        (b"no separators", None),
    ):
        sasl = authenticator()
        sasl.handshake(PLAIN)
        step = sasl.authenticate(1, token)
        if step.password_check is not None:
            # The derivation is handed to the caller (to run in a thread), not run here.
            assert step.response is None and not sasl.complete
            assert sasl.authenticate(1, token).close, "no second token while checking"
            sasl = authenticator()
            sasl.handshake(PLAIN)
            check = sasl.authenticate(1, token).password_check
            assert check is not None
            step = sasl.password_checked(check())
        assert step.response is not None
        assert step.user == user
        assert step.close is (user is None)
        assert step.response.error_code == (
            ErrorCode.none if user else ErrorCode.sasl_authentication_failed
        )


def test_unknown_mechanisms_and_out_of_order_requests_are_refused() -> None:
    sasl = authenticator()
    step = sasl.handshake("GSSAPI")
    assert isinstance(step.response, SaslHandshakeResponse) and step.close
    assert step.response.error_code == ErrorCode.unsupported_sasl_mechanism
    assert tuple(step.response.mechanisms) == (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)
    # SaslAuthenticate before the handshake, a second handshake: closed without an answer.
    step = authenticator().authenticate(2, b"\0alice\0alice-secret")
    assert step.response is None and step.close
    sasl = authenticator()
    sasl.handshake(PLAIN)
    step = sasl.handshake(PLAIN)
    assert step.response is None and step.close


def test_the_client_exchange_authenticates_against_the_server_state_machine() -> None:
    for mechanism in (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512):
        sasl = authenticator()
        sasl.handshake(mechanism)
        client = SaslClientCredentials(mechanism, "alice", "alice-secret").exchange()
        token: bytes | None = client.first()
        step = None
        while token is not None:
            step = sasl.authenticate(2, token)
            if step.password_check is not None:
                step = sasl.password_checked(step.password_check())
            assert isinstance(step.response, SaslAuthenticateResponse)
            assert step.response.error_code == ErrorCode.none
            token = client.next(step.response.auth_bytes)
        assert step is not None and step.user == "alice"


def test_jaas_configs_give_username_and_password() -> None:
    assert parse_jaas_config(
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="se\\"cret";'
    ) == ("alice", 'se"cret')
    with pytest.raises(ValueError, match="username"):
        parse_jaas_config('ScramLoginModule required password="x";')
