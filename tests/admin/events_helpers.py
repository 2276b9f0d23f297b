"""The events of committed entries as the admin API renders them: the derivation of
`controller.events` followed by the admin's `Event` model, so the tests check the JSON fields."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from uuid import UUID

from admin.handlers.events import event_model
from admin.models import Event
from controller.events import MetadataEvent, derive_events
from controller.image import MetadataImage, metadata_records
from kraft.messages import Entry


def rendered(events: Sequence[MetadataEvent]) -> list[Event]:
    return [event_model(event) for event in events]


def rendered_events(
    before: MetadataImage,
    entries: Iterable[Entry],
    time: str,
    recovered: set[tuple[UUID, int]] | None = None,
) -> list[Event]:
    """The events the committed `entries` cause on top of `before`, rendered."""
    return rendered(derive_events(before, metadata_records(entries), time, recovered))
