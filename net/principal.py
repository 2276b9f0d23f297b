"""Who sent a request: Kafka's principal (`KafkaPrincipal`), as authentication establishes it.

A connection starts as User:ANONYMOUS (Kafka's principal of a PLAINTEXT listener). A TLS
listener that verifies the client's certificate names the principal from its subject, and a SASL
listener from the authenticated user name; the authorizer decides on that principal and the
client's host.
"""

from __future__ import annotations

from dataclasses import dataclass

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """A principal, written `type:name` as Kafka writes it (`User:alice`)."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """The principal written `type:name`; ValueError when there is no type or no name."""
        principal_type, separator, name = text.partition(":")
        if not separator or not principal_type or not name:
            raise ValueError(f"a principal is written type:name (User:alice), not {text!r}")
        return cls(principal_type, name)

    @classmethod
    def user(cls, name: str) -> KafkaPrincipal:
        """The principal `User:name`."""
        return cls(USER_TYPE, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
