"""Kafka's group -> `__consumer_offsets` partition rule (broker/groups/partitioning.py)."""

from __future__ import annotations

from broker.groups.partitioning import java_string_hash, offsets_partition_for


def test_java_string_hash_matches_java() -> None:
    # Values Java's String.hashCode() gives, including its well-known collisions and the one
    # string that hashes to Integer.MIN_VALUE.
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99_162_322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)
    # Overflow wraps to negative, as Java's int does.
    assert java_string_hash("consumer-group-with-a-long-name") < 0
    # Outside the BMP a character is two UTF-16 code units (0xD83D, 0xDE00 for U+1F600).
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00


def test_partition_is_kafkas_abs_of_the_hash_modulo_the_count() -> None:
    assert offsets_partition_for("hello", 50) == 99_162_322 % 50
    # Utils.abs maps Integer.MIN_VALUE to 0 (Math.abs would stay negative).
    assert offsets_partition_for("polygenelubricants", 50) == 0
    negative = java_string_hash("consumer-group-with-a-long-name")
    assert offsets_partition_for("consumer-group-with-a-long-name", 7) == -negative % 7
    assert {offsets_partition_for(f"group-{i}", 50) for i in range(1000)} == set(range(50))
