"""The `kraft` console script's entry point (and `python -m node.entry`): the command line of
`node.cli`, in a process that never imports hypothesis or rich.

Both come with the test extras only, and cost a node at each start wherever those are installed
(CI, the benchmarks) while serving it nothing: kio registers a hypothesis strategy for every one
of its constrained types as it defines them whenever hypothesis can be imported (a third of a
second of CPU), and structlog imports rich for its console tracebacks whenever it can (about
60 ms; without it, structlog formats them as the standard library does, as in a node installed
without the test extras). Only this entry point hides them: code that imports `node.*` inside a
test process keeps them.

`paused_collection` keeps the garbage collector out of the node's imports.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator, Sequence


@contextlib.contextmanager
def paused_collection() -> Iterator[None]:
    """No garbage collection inside (the collector's state is restored after).

    For the node's imports: they make hundreds of thousands of objects that live as long as
    the process (kio's message classes, ...), and the collections they would trigger free
    nothing while taking about a tenth of the import time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# What the node process never imports (see the module doc).
HIDDEN_MODULES = ("hypothesis", "rich")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `kraft` command line with HIDDEN_MODULES hidden from this process's imports."""
    # A None entry makes `import hypothesis...` raise ImportError, which kio (and structlog,
    # for rich) take as "not installed"; setdefault leaves an already imported one alone.
    for name in HIDDEN_MODULES:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    with paused_collection():
        from node.cli import main as cli_main  # noqa: PLC0415 (after hypothesis is hidden)

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
