"""Seeded fault schedules: the same seed and length always give the same schedule.

A schedule is a sequence of steps; each step puts one fault in force from its start until the
next step starts (or the schedule ends), when it is healed. Kinds:

- `isolate X`: node X's host drops all traffic, from peers and clients alike.
- `cut-leader X`: node X is cut from the leader of a partition it follows (the peer is found when
  the step starts, from the metadata, and reported); other links stay.
- `split`: the active controller is cut from every other node (clients still reach it): the old
  quorum leader is alone in a minority while the majority elects a new one.
- `kill X`: SIGKILL, restarted when the step ends.
- `pause X`: SIGSTOP, SIGCONT when the step ends.
- `power-cut X`: SIGKILL, every file of its log dir cut back to what was fsynced (the storage
  layer's durability journal), restarted when the step ends.
- `disk-full X`: X's own small filesystem filled to the last byte; when the step ends the space
  is freed and X restarted (a log taken offline by a failed write comes back by a restart).
- `calm`: nothing.

Kinds are dealt from a shuffled deck (reshuffled when empty), so even a short schedule has
several different kinds and a long one has them all in roughly equal numbers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

KINDS = ("isolate", "cut-leader", "split", "kill", "pause", "power-cut", "disk-full", "calm")
# Kinds that name no victim: the runtime picks the active controller.
WITHOUT_VICTIM = frozenset({"split", "calm"})


@dataclass(frozen=True)
class Step:
    start: float
    kind: str
    victim: int | None

    def describe(self) -> str:
        who = "" if self.victim is None else f" {self.victim}"
        return f"{self.start:.1f} {self.kind}{who}"


def generate(
    seed: int,
    seconds: float,
    node_ids: list[int],
    *,
    min_step: float = 2.0,
    max_step: float = 6.0,
) -> list[Step]:
    """Steps covering [0, seconds): kinds from a seeded deck, victims and lengths seeded."""
    generator = random.Random(seed)
    steps: list[Step] = []
    deck: list[str] = []
    start = 0.0
    while start < seconds - min_step / 2:
        if not deck:
            deck = list(KINDS)
            generator.shuffle(deck)
        kind = deck.pop()
        victim = None if kind in WITHOUT_VICTIM else generator.choice(node_ids)
        steps.append(Step(round(start, 1), kind, victim))
        start += generator.uniform(min_step, max_step)
    return steps


def describe(steps: list[Step]) -> str:
    return ", ".join(step.describe() for step in steps)


def parse(text: str) -> list[Step]:
    """A schedule as `describe` prints it ("0.0 kill 2, 4.5 split, ..."), to replay or to
    narrow down a failure by hand."""
    steps = []
    for part in text.split(","):
        fields = part.split()
        if not fields:
            continue
        if len(fields) not in (2, 3) or fields[1] not in KINDS:
            raise ValueError(f"not a step: {part.strip()!r} (want 'SECONDS KIND [NODE]')")
        victim = int(fields[2]) if len(fields) == 3 else None
        if (victim is None) != (fields[1] in WITHOUT_VICTIM):
            raise ValueError(f"{fields[1]} takes {'no' if victim is not None else 'a'} node")
        steps.append(Step(float(fields[0]), fields[1], victim))
    if not steps or steps != sorted(steps, key=lambda step: step.start):
        raise ValueError("a schedule needs steps in time order")
    return steps
