"""`kraft format --add-scram`: Kafka's `kafka-storage format` syntax, the bootstrap records it
leaves for the first active controller, and what it refuses."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from controller.records import ScramMechanism, UserScramCredentialRecord
from controller.scram import parse_add_scram
from net.sasl import SCRAM_SHA_256, SCRAM_SHA_512, ScramCredential, password_matches
from node.bootstrap_records import BOOTSTRAP_RECORDS, read_bootstrap_records
from node.cli import main
from node.config import ConfigError
from node.meta_properties import read_meta_properties

SALT = b"1lv4pdnw4fwq7notcxm0yy1k7q"


def matches(record: UserScramCredentialRecord, mechanism: str, password: str) -> bool:
    credential = ScramCredential(
        record.salt, record.stored_key, record.server_key, record.iterations
    )
    return password_matches(mechanism, credential, password)


def test_the_password_salt_and_salted_password_forms_give_the_same_keys() -> None:
    salt = base64.b64encode(SALT).decode()
    salted = hashlib.pbkdf2_hmac("sha256", b"alice-secret", SALT, 8192)
    with_password, with_salt, with_salted_password = parse_add_scram(
        "SCRAM-SHA-256=[name=alice,password=alice-secret];"
        f'SCRAM-SHA-256=[name=alice,password="alice-secret",salt="{salt}",iterations=8192];'
        f'SCRAM-SHA-256=[name=alice,iterations=8192,salt="{salt}",'
        f'saltedpassword="{base64.b64encode(salted).decode()}"]'
    )
    assert with_password.iterations == 4096 and with_password.mechanism is ScramMechanism(1)
    assert with_salt.record() == with_salted_password.record()
    assert with_salt.record().salt == SALT
    for credential in (with_password, with_salt, with_salted_password):
        assert matches(credential.record(), SCRAM_SHA_256, "alice-secret")
        assert not matches(credential.record(), SCRAM_SHA_256, "wrong")
    # The secrets stay out of reprs (logs, tracebacks).
    assert "alice-secret" not in repr(with_password) and salt not in repr(with_salt)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("SCRAM-SHA-1=[name=a,password=b]", "expected SCRAM-SHA-256"),
        ("SCRAM-SHA-512=[password=b]", "needs a name"),
        ("SCRAM-SHA-512=[name=a]", "needs a password or a saltedpassword"),
        ("SCRAM-SHA-512=[name=a,password=b,iterations=10]", "4096..16384"),
        ("SCRAM-SHA-512=[name=a,password=b,salt=!!]", "salt must be base64"),
        ("SCRAM-SHA-512=[name=a,saltedpassword=YWJj]", "needs its salt"),
        ("SCRAM-SHA-512=[name=a,password=b,colour=red]", "unknown field 'colour'"),
    ],
)
def test_bad_entries_are_refused_saying_why(entry: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_add_scram(entry)


def node_config(tmp_path: Path) -> Path:
    path = tmp_path / "node.properties"
    path.write_text(
        "node.id=1\ncluster.id=format-test\nprocess.roles=broker,controller\n"
        "listeners=PLAINTEXT://127.0.0.1:19092\ncontroller.listener=127.0.0.1:19093\n"
        f"controller.quorum.voters=1@127.0.0.1:19093\nlog.dirs={tmp_path / 'data'}\n"
    )
    return path


def test_format_writes_meta_properties_and_the_bootstrap_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = node_config(tmp_path)
    status = main(
        [
            "format",
            "--config",
            str(config),
            "--add-scram",
            "SCRAM-SHA-256=[name=alice,password=alice-secret]",
            "--add-scram",
            "SCRAM-SHA-512=[name=admin,password=admin-secret,iterations=8192]",
        ]
    )
    assert status == 0
    out = capsys.readouterr().out
    assert "formatted (cluster format-test, node 1)" in out
    assert "alice (SCRAM-SHA-256), admin (SCRAM-SHA-512)" in out
    meta = read_meta_properties(tmp_path / "data")
    assert meta is not None and (meta.cluster_id, meta.node_id) == ("format-test", 1)
    alice, admin = read_bootstrap_records(tmp_path / "data")
    assert (alice.name, alice.mechanism, alice.iterations) == ("alice", 1, 4096)
    assert (admin.name, admin.mechanism, admin.iterations) == ("admin", 2, 8192)
    assert matches(admin, SCRAM_SHA_512, "admin-secret")
    assert b"secret" not in (tmp_path / "data" / BOOTSTRAP_RECORDS).read_bytes()
    # Formatting again is refused unless asked to leave the directory as it is; the credentials
    # written the first time stay.
    assert main(["format", "--config", str(config)]) == 1
    assert "already formatted" in capsys.readouterr().err
    assert main(["format", "--config", str(config), "--ignore-formatted"]) == 0
    assert len(read_bootstrap_records(tmp_path / "data")) == 2


def test_format_refuses_a_bad_entry_or_configuration_before_touching_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = node_config(tmp_path)
    status = main(["format", "--config", str(config), "--add-scram", "SCRAM-SHA-512=[name=a]"])
    assert status == 2
    assert "--add-scram: SCRAM-SHA-512 user a needs a password" in capsys.readouterr().err
    assert main(["format", "--config", str(config), "--override", "node.id=x"]) == 2
    assert "node.id" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()


def test_a_damaged_bootstrap_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / BOOTSTRAP_RECORDS).write_bytes(b"something else")
    with pytest.raises(ConfigError, match="not a bootstrap records file"):
        read_bootstrap_records(tmp_path)
