"""The oldest Python this project runs on, and the check every entry point makes before it starts.

Python 3.11 added possessive quantifiers (``x*+``, ``x++``) to ``re``, and the format modules and the artifact
validator use them (toml's line and nesting scanners, the table cell patterns, markdown, html, text). Before
3.11.5 the engine mis-matched them (CPython gh-106052: a pattern matched where its greedy form did not) and could
loop for ever (gh-100061): on Debian 12's Python 3.11.2 the standard benchmark's big.toml never finishes (its
nesting scan spins in C), where 3.11.7 takes 7 ms. So an interpreter older than ``MIN_PYTHON`` is refused with a
message that names it, rather than holding a worker until its time limit or passing a wrong artifact.

    python -m shared.interpreter    # exit 0, or 1 with the message (the Makefile asks before making a venv)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Final

MIN_PYTHON: Final = (3, 11, 5)


def unsupported(version_info: Sequence[int] | None = None) -> str | None:
    """Why this interpreter (or ``version_info``) cannot run the project, or None when it can."""
    version = tuple(sys.version_info[:3] if version_info is None else version_info[:3])
    if version >= MIN_PYTHON:
        return None
    shown = ".".join(map(str, version))
    need = ".".join(map(str, MIN_PYTHON))
    return (
        f"Python {need} or later is needed, this is {shown}: its re module mis-matches the possessive quantifiers "
        f"the extractors use (fixed in {need}, CPython gh-106052 and gh-100061); run it with a newer python3.11"
    )


def main() -> int:
    message = unsupported()
    if message is not None:
        print(message, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
