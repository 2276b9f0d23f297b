"""Kafka's murmur2 partitioner: the hashes of Kafka's own UtilsTest."""

from __future__ import annotations

import pytest

from net.partitioner import murmur2, partition_for_key


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_kafka(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_partition_is_the_positive_hash_modulo_the_count() -> None:
    assert partition_for_key(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7
    assert {partition_for_key(str(n).encode(), 3) for n in range(100)} == {0, 1, 2}
