"""The Raft driver over a real metadata log: a Ready it cannot apply is a fatal fault.

The state machine moves on when a `Ready` is taken, so a `Ready` applied only in part (an
append the storage log refuses, a log that no longer holds what the state machine says) would
leave the node and its disk disagreeing for good: issue 19 saw a voter wedge that way, every
later append refused while the node stayed up. The driver reports such a failure to the fatal
handler (the node's terminates the process) instead.
"""

from __future__ import annotations

import pytest

from kraft.driver import RaftDriver
from kraft.messages import Entry
from kraft.metadata_log import MetadataLogDivergedError
from kraft.wire import encode_entries
from storage.errors import UnexpectedAppendOffsetError
from storage.log import Log
from tests.fatal_faults import Faults, faults  # noqa: F401 (the fixture)
from tests.kraft.lone_voter import elected  # noqa: F401 (the fixture)


async def test_an_append_the_storage_log_refuses_is_fatal(
    elected: tuple[RaftDriver, Log],  # noqa: F811
    faults: Faults,  # noqa: F811
) -> None:
    driver, metadata_log = elected
    # The storage log gains an entry the state machine never made: its end moves past the
    # state machine's, as in the wedged voter of issue 19.
    end = metadata_log.log_end_offset
    metadata_log.append_as_follower(encode_entries([Entry(end, driver.epoch, b"stray")]))
    with pytest.raises(UnexpectedAppendOffsetError):
        driver.submit([b"second"])
    assert [what for what, _ in faults] == ["raft_driver"]
    assert isinstance(faults[0][1], UnexpectedAppendOffsetError)


async def test_a_log_that_no_longer_matches_the_state_machine_is_fatal(
    elected: tuple[RaftDriver, Log],  # noqa: F811
    faults: Faults,  # noqa: F811
) -> None:
    driver, metadata_log = elected
    # The storage log lost its entries behind the driver's back but still ends where the state
    # machine's does, so the next append lands: the driver notices the mismatch anyway, before
    # anything is built on it.
    metadata_log.truncate_fully_and_start_at(metadata_log.log_end_offset)
    with pytest.raises(MetadataLogDivergedError, match="quorum state machine holds"):
        driver.submit([b"second"])
    assert [what for what, _ in faults] == ["raft_driver"]
    assert str(metadata_log.directory) in str(faults[0][1])
