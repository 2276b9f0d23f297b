import pytest

from net.principal import ANONYMOUS, KafkaPrincipal


def test_a_principal_reads_and_writes_as_kafka_writes_it() -> None:
    alice = KafkaPrincipal.parse("User:alice")
    assert alice == KafkaPrincipal.user("alice")
    assert str(alice) == "User:alice"
    assert str(ANONYMOUS) == "User:ANONYMOUS"
    # Only the first colon separates the type (a name may hold colons, as an mTLS subject).
    assert KafkaPrincipal.parse("User:CN=a:b").name == "CN=a:b"


@pytest.mark.parametrize("text", ["alice", ":alice", "User:", ""])
def test_a_principal_without_type_or_name_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="type:name"):
        KafkaPrincipal.parse(text)
