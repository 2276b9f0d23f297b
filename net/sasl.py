"""SASL authentication: the server side (Kafka's SaslServerAuthenticator) as a state machine,
and the client side our own connections use (`SaslClientCredentials`).

One `SaslAuthenticator` per connection of a SASL listener. It is pure: the connection hands it
each request received before authentication completes, and it answers with a `SaslStep`: the
response to send (if any), whether the connection must then be closed (after
`connection.failed.authentication.delay.ms` when authentication failed), and, once a mechanism
succeeded, the authenticated user. What it does, following Kafka:

* ApiVersions is answered by the connection as usual; SaslHandshake v1 names the mechanism
  (an unknown or disabled one is answered UNSUPPORTED_SASL_MECHANISM with the enabled
  mechanisms, then the connection is closed); then SaslAuthenticate v0-2 carries the
  mechanism's tokens;
* any other request before authentication completes, SaslAuthenticate before the handshake, or
  a second handshake, closes the connection without an answer, as Kafka's
  IllegalSaslStateException does;
* SaslHandshake v0 (raw tokens without SaslAuthenticate framing, for clients older than Kafka
  1.0) is not served: the connection answers it UNSUPPORTED_VERSION;
* a failed mechanism exchange is answered SASL_AUTHENTICATION_FAILED, then the connection is
  closed; the answer and the close are delayed by the caller;
* re-authentication (KIP-368) is not supported: session_lifetime_ms is always 0.

Mechanisms: SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802/7677, via `scramp`) verify against the
user's stored SCRAM credential; PLAIN (RFC 4616) verifies the password against the same
credentials: it derives the salted password with the credential's salt and iterations (the
SHA-512 one when the user has both) and compares the stored key, so one set of credentials in
the metadata log serves every mechanism. A user without SCRAM credentials cannot log in.
PLAIN's derivation (a PBKDF2 of the credential's iterations, milliseconds of CPU) is not run by
the state machine: the step of a PLAIN token carries it as `password_check`, which the caller
runs off the event loop (in a thread) and hands back to `password_checked`. SCRAM's server side
costs two HMACs and a hash per login (the client does the PBKDF2), cheap enough for the loop.
"""

from __future__ import annotations

import datetime
import hmac
import re
import secrets
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum, auto
from functools import partial

import scramp
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v0.response import (
    SaslAuthenticateResponse as SaslAuthenticateResponseV0,
)
from kio.schema.sasl_authenticate.v1.response import (
    SaslAuthenticateResponse as SaslAuthenticateResponseV1,
)
from kio.schema.sasl_authenticate.v2.response import (
    SaslAuthenticateResponse as SaslAuthenticateResponseV2,
)
from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse
from kio.static.primitive import i64Timedelta

from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
SCRAM_MECHANISMS = (SCRAM_SHA_256, SCRAM_SHA_512)
SUPPORTED_MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)
# Kafka's bounds of a SCRAM credential's iterations (ScramMechanism.minIterations, and
# ScramControlManager's maximum), and the default of its tools.
MIN_SCRAM_ITERATIONS = 4096
MAX_SCRAM_ITERATIONS = 16384
DEFAULT_SCRAM_ITERATIONS = 4096
# Kafka's `connection.failed.authentication.delay.ms` default.
DEFAULT_FAILED_AUTHENTICATION_DELAY_MS = 100

SaslAuthenticateResponse = (
    SaslAuthenticateResponseV0 | SaslAuthenticateResponseV1 | SaslAuthenticateResponseV2
)
_AUTHENTICATE_RESPONSES: dict[int, type[SaslAuthenticateResponse]] = {
    0: SaslAuthenticateResponseV0,
    1: SaslAuthenticateResponseV1,
    2: SaslAuthenticateResponseV2,
}
_NO_SESSION_LIFETIME = i64Timedelta.parse(datetime.timedelta(0))


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A user's server-side SCRAM credential for one mechanism (never the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


# (user name, SCRAM mechanism name) -> the user's credential, None if it has none.
CredentialLookup = Callable[[str, str], ScramCredential | None]


def scram_credential(
    mechanism: str, password: str, iterations: int, salt: bytes | None = None
) -> ScramCredential:
    """A new credential of `mechanism` for `password`, with `salt` or a fresh random one."""
    salt, stored_key, server_key, iterations = scramp.ScramMechanism(mechanism).make_auth_info(
        password, iteration_count=iterations, salt=salt
    )
    return ScramCredential(salt, stored_key, server_key, iterations)


def known_users_first(
    known: Mapping[tuple[str, str], ScramCredential], then: CredentialLookup
) -> CredentialLookup:
    """Looks a credential up in `known` ((user, mechanism) -> credential), then in `then`."""

    def lookup(user: str, mechanism: str) -> ScramCredential | None:
        credential = known.get((user, mechanism))
        return credential if credential is not None else then(user, mechanism)

    return lookup


def password_matches(mechanism: str, credential: ScramCredential, password: str) -> bool:
    """Whether `password` is the one `credential` (of SCRAM `mechanism`) was made from."""
    _salt, stored_key, _server_key, _iterations = scramp.ScramMechanism(mechanism).make_auth_info(
        password, iteration_count=credential.iterations, salt=credential.salt
    )
    return hmac.compare_digest(stored_key, credential.stored_key)


def password_check(credentials: CredentialLookup, user: str, password: str) -> Callable[[], bool]:
    """Whether `password` is `user`'s, as a check to run off the event loop (it derives the
    salted password): against the user's SCRAM-SHA-512 credential, else its SCRAM-SHA-256 one;
    a user without credentials never matches. PLAIN logins and the admin API's HTTP Basic
    authentication both check passwords this way."""
    for mechanism in (SCRAM_SHA_512, SCRAM_SHA_256):
        credential = credentials(user, mechanism)
        if credential is not None:
            return partial(password_matches, mechanism, credential, password)
    return lambda: False


@dataclass(frozen=True, slots=True)
class SaslListenerConfig:
    """What a SASL listener needs: its mechanisms (Kafka's `sasl.enabled.mechanisms`), the
    users' credentials, and Kafka's `connection.failed.authentication.delay.ms`."""

    enabled_mechanisms: Sequence[str]
    credentials: CredentialLookup
    failed_authentication_delay_ms: int = DEFAULT_FAILED_AUTHENTICATION_DELAY_MS

    def __post_init__(self) -> None:
        unknown = set(self.enabled_mechanisms) - set(SUPPORTED_MECHANISMS)
        if unknown or not self.enabled_mechanisms:
            raise ValueError(
                f"SASL mechanisms must be some of {', '.join(SUPPORTED_MECHANISMS)}, "
                f"not {', '.join(self.enabled_mechanisms) or 'none'}"
            )

    def authenticator(self) -> SaslAuthenticator:
        """The authenticator of a new connection."""
        return SaslAuthenticator(self.enabled_mechanisms, self.credentials)


class _State(Enum):
    HANDSHAKE = auto()
    AUTHENTICATE = auto()
    # A PLAIN password is being checked off the event loop.
    CHECKING_PASSWORD = auto()
    COMPLETE = auto()
    FAILED = auto()


@dataclass(frozen=True, slots=True)
class SaslStep:
    """What the connection does with one request: send `response` (None: nothing); if
    `close`, authentication failed: the response waits out the failed-authentication delay and
    the connection is closed after it, as Kafka's Selector does. `user` is set on the step that
    completes authentication."""

    response: SaslHandshakeResponse | SaslAuthenticateResponse | None = None
    close: bool = False
    user: str | None = None
    # Why it failed, for the server's log: never a secret.
    reason: str | None = None
    # Set instead of everything else when a PLAIN password must be checked: the caller runs it
    # in a thread (it derives a PBKDF2) and hands its result to `password_checked`.
    password_check: Callable[[], bool] | None = None


class _Exchange:
    """One mechanism's server side: client tokens in, server tokens out."""

    user: str | None = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        """The server's token for the client's `token`, and whether authentication is
        complete; `_AuthenticationError` if it failed."""
        raise NotImplementedError


class _AuthenticationError(Exception):
    pass


class _PlainExchange:
    """PLAIN's server side: one token, checked by a password derivation."""

    def __init__(self, credentials: CredentialLookup) -> None:
        self._credentials = credentials
        self.user: str | None = None

    def password_check(self, token: bytes) -> Callable[[], bool]:
        """The check of the client's one PLAIN token, to run off the event loop (it derives
        the salted password); `_AuthenticationError` if the token is malformed. The user is set
        before the check, which tells whether the password is theirs."""
        try:
            authorization_id, user, password = token.decode("utf-8").split("\0")
        except ValueError:
            raise _AuthenticationError("Invalid SASL/PLAIN response") from None
        if not user or not password:
            raise _AuthenticationError("Authentication failed: username or password not given")
        # As Kafka: a client may not ask to act as another user.
        if authorization_id and authorization_id != user:
            raise _AuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.user = user
        return password_check(self._credentials, user, password)


class _ScramExchange(_Exchange):
    def __init__(self, mechanism: str, credentials: CredentialLookup) -> None:
        self._mechanism = mechanism
        self._credentials = credentials
        self._server_nonce = _server_nonce()
        self._server = scramp.ScramMechanism(mechanism).make_server(
            self._auth_info, s_nonce=self._server_nonce
        )
        self._first = True

    def _auth_info(self, user: str) -> tuple[bytes, bytes, bytes, int]:
        credential = self._credentials(user, self._mechanism)
        if credential is None:
            raise _AuthenticationError("Authentication failed: Invalid user credentials")
        self.user = user
        return credential.salt, credential.stored_key, credential.server_key, credential.iterations

    def _accept_repeated_client_nonce(self, client_final: str) -> None:
        """librdkafka 2.0 (kcat 1.7) sends back its own nonce followed by the server's whole
        nonce (client's part included); Kafka's ScramSaslServer accepts any final nonce that
        ends with the server's part, so a Kafka client may too. scramp wants the exact nonce:
        it is told to expect the one received. The proof still covers the message as sent."""
        for attribute in client_final.split(","):
            if attribute.startswith("r="):
                nonce = attribute[2:]
                expected = self._server.nonce
                if nonce != str(expected) and nonce.endswith(self._server_nonce):
                    self._server.nonce = type(expected)(nonce)
                return

    def step(self, token: bytes) -> tuple[bytes, bool]:
        try:
            if self._first:
                self._first = False
                self._server.set_client_first(token.decode("utf-8"))
                return self._server.get_server_first().encode(), False
            client_final = token.decode("utf-8")
            self._accept_repeated_client_nonce(client_final)
            self._server.set_client_final(client_final)
            return self._server.get_server_final().encode(), True
        except (scramp.ScramException, UnicodeDecodeError, _AuthenticationError) as error:
            # Kafka names no reason either: wrong password and unknown user look the same.
            raise _AuthenticationError(
                "Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self._mechanism}",
                str(error),
            ) from None


def _server_nonce() -> str:
    """A nonce as Kafka's ScramFormatter makes it: 130 random bits in base 36."""
    value = secrets.randbits(130)
    digits = []
    while value:
        value, digit = divmod(value, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[digit])
    return "".join(reversed(digits)) or "0"


class SaslAuthenticator:
    """The SASL state of one connection, from the handshake to an authenticated user."""

    def __init__(self, enabled_mechanisms: Sequence[str], credentials: CredentialLookup) -> None:
        self._enabled = tuple(enabled_mechanisms)
        self._credentials = credentials
        self._state = _State.HANDSHAKE
        self._exchange: _Exchange | _PlainExchange | None = None
        self.mechanism: str | None = None
        self.user: str | None = None
        # The SaslAuthenticate version being answered.
        self._version = 0

    @property
    def complete(self) -> bool:
        """Whether a user authenticated."""
        return self._state is _State.COMPLETE

    def handshake(self, mechanism: str) -> SaslStep:
        """A SaslHandshake v1 naming `mechanism`."""
        if self._state is not _State.HANDSHAKE:
            return self._illegal()
        if mechanism not in self._enabled:
            self._state = _State.FAILED
            return SaslStep(
                SaslHandshakeResponse(
                    error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=self._enabled
                ),
                close=True,
            )
        self.mechanism = mechanism
        self._exchange = (
            _PlainExchange(self._credentials)
            if mechanism == PLAIN
            else _ScramExchange(mechanism, self._credentials)
        )
        self._state = _State.AUTHENTICATE
        return SaslStep(SaslHandshakeResponse(error_code=ErrorCode.none, mechanisms=self._enabled))

    def authenticate(self, version: int, auth_bytes: bytes) -> SaslStep:
        """A SaslAuthenticate of `version` (0-2) carrying the client's token. For PLAIN, the
        step is a `password_check` whose result goes to `password_checked`."""
        if self._state is not _State.AUTHENTICATE or self._exchange is None:
            return self._illegal()
        self._version = version
        try:
            if isinstance(self._exchange, _PlainExchange):
                check = self._exchange.password_check(auth_bytes)
                self._state = _State.CHECKING_PASSWORD
                return SaslStep(password_check=check)
            server_token, done = self._exchange.step(auth_bytes)
        except _AuthenticationError as failure:
            return self._failed(failure.args[0], failure.args[-1])
        response = _authenticate_response(
            _AUTHENTICATE_RESPONSES[version], ErrorCode.none, None, server_token
        )
        if not done:
            return SaslStep(response)
        return self._completed(response)

    def password_checked(self, matches: bool) -> SaslStep:
        """The answer to the PLAIN token once its `password_check` ran: whether it matched."""
        if self._state is not _State.CHECKING_PASSWORD:
            return self._illegal()
        if not matches:
            message = "Authentication failed: Invalid username or password"
            return self._failed(message, message)
        return self._completed(
            _authenticate_response(
                _AUTHENTICATE_RESPONSES[self._version], ErrorCode.none, None, b""
            )
        )

    def _completed(self, response: SaslAuthenticateResponse) -> SaslStep:
        assert self._exchange is not None
        self._state = _State.COMPLETE
        self.user = self._exchange.user
        return SaslStep(response, user=self.user)

    def _failed(self, message: str, reason: str) -> SaslStep:
        self._state = _State.FAILED
        return SaslStep(
            _authenticate_response(
                _AUTHENTICATE_RESPONSES[self._version],
                ErrorCode.sasl_authentication_failed,
                message,
                b"",
            ),
            close=True,
            reason=reason,
        )

    def unexpected_request(self) -> SaslStep:
        """Any request but ApiVersions and the SASL APIs before authentication completed."""
        return self._illegal()

    def _illegal(self) -> SaslStep:
        self._state = _State.FAILED
        return SaslStep(close=True)


def _authenticate_response(
    response_type: type[SaslAuthenticateResponse],
    error_code: ErrorCode,
    message: str | None,
    auth_bytes: bytes,
) -> SaslAuthenticateResponse:
    if response_type is SaslAuthenticateResponseV0:
        return SaslAuthenticateResponseV0(
            error_code=error_code, error_message=message, auth_bytes=auth_bytes
        )
    newer = typing.cast(
        type[SaslAuthenticateResponseV1 | SaslAuthenticateResponseV2], response_type
    )
    return newer(
        error_code=error_code,
        error_message=message,
        auth_bytes=auth_bytes,
        session_lifetime=_NO_SESSION_LIFETIME,
    )


def register_sasl_apis(registry: ApiRegistry) -> None:
    """Serve SaslHandshake v1 and SaslAuthenticate v0-2 outside authentication: on a listener
    without SASL, or again on an authenticated connection, they are answered ILLEGAL_SASL_STATE,
    as Kafka's KafkaApis answers them. On a SASL listener the connection hands them to its
    authenticator until it completes."""
    registry.register(
        ApiKey.SASL_HANDSHAKE,
        _handshake_out_of_state,
        min_version=1,
        max_version=1,
        # Advertised from v0: older librdkafka (kcat) wants v0 in the range to use SASL at
        # all, then sends v1; a v0 handshake itself is answered UNSUPPORTED_VERSION.
        advertised_min_version=0,
    )
    registry.register(
        ApiKey.SASL_AUTHENTICATE, _authenticate_out_of_state, min_version=0, max_version=2
    )


def _handshake_out_of_state(context: RequestContext, request: object) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=ErrorCode.illegal_sasl_state, mechanisms=())


def _authenticate_out_of_state(
    context: RequestContext, request: object
) -> SaslAuthenticateResponse:
    return _authenticate_response(
        _AUTHENTICATE_RESPONSES[context.header.api_version],
        ErrorCode.illegal_sasl_state,
        "SaslAuthenticate request received after successful authentication",
        b"",
    )


# -- the client side ---------------------------------------------------------------------------


class SaslAuthenticationError(Exception):
    """The node refused this client's SASL authentication (or its mechanism)."""


@dataclass(frozen=True, slots=True)
class SaslClientCredentials:
    """What a client authenticates with: Kafka's `sasl.mechanism` and the user's name and
    password (`sasl.username` / `sasl.password`, or a JAAS config's)."""

    mechanism: str
    username: str
    password: str = field(repr=False)

    def __post_init__(self) -> None:
        if self.mechanism not in SUPPORTED_MECHANISMS:
            raise ValueError(
                f"sasl.mechanism must be one of {', '.join(SUPPORTED_MECHANISMS)}, "
                f"not {self.mechanism!r}"
            )

    def exchange(self) -> SaslClientExchange:
        """The client side of one authentication."""
        return SaslClientExchange(self)


class SaslClientExchange:
    """The tokens a client sends, one per SaslAuthenticate, for the server's tokens."""

    def __init__(self, credentials: SaslClientCredentials) -> None:
        self._credentials = credentials
        self._answered = 0
        self._scram: scramp.ScramClient | None = None
        if credentials.mechanism != PLAIN:
            self._scram = scramp.ScramClient(
                [credentials.mechanism], credentials.username, credentials.password
            )

    def first(self) -> bytes:
        """The first token."""
        if self._scram is None:
            credentials = self._credentials
            return f"\0{credentials.username}\0{credentials.password}".encode()
        client_first: str = self._scram.get_client_first()
        return client_first.encode()

    def next(self, server_token: bytes) -> bytes | None:
        """The token answering `server_token`; None when the exchange is complete (the server
        proved it knows the credential, for SCRAM). SaslAuthenticationError if the server's
        token is wrong."""
        scram = self._scram
        if scram is None:
            return None
        self._answered += 1
        try:
            if self._answered == 1:
                scram.set_server_first(server_token.decode())
                client_final: str = scram.get_client_final()
                return client_final.encode()
            scram.set_server_final(server_token.decode())
        except (scramp.ScramException, UnicodeDecodeError) as error:
            raise SaslAuthenticationError(f"the server's SCRAM answer is wrong: {error}") from None
        return None


_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def parse_jaas_config(text: str) -> tuple[str, str]:
    """The (username, password) of Kafka's `sasl.jaas.config`, e.g.
    `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice"
    password="secret";` (or PlainLoginModule). ValueError when either is missing."""
    options = {name: value.replace('\\"', '"') for name, value in _JAAS_OPTION.findall(text)}
    if "username" not in options or "password" not in options:
        raise ValueError('sasl.jaas.config needs username="..." and password="..."')
    return options["username"], options["password"]
