"""The `kraft` console script's entry point (and `python -m node.entry`): the command line of
`node.cli`, in a process that never imports hypothesis.

kio registers a hypothesis strategy for every one of its constrained types as it defines them
whenever hypothesis can be imported, which costs a node process a third of a second of CPU at
each start wherever the test extras are installed (CI, the benchmarks) and serves it nothing.
Only this entry point hides hypothesis: code that imports `node.*` inside a test process keeps
it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `kraft` command line with hypothesis hidden from this process's imports."""
    # A None entry makes `import hypothesis...` raise ImportError, which kio takes as "not
    # installed"; setdefault leaves an already imported hypothesis alone.
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    from node.cli import main as cli_main  # noqa: PLC0415 (after hypothesis is hidden)

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
