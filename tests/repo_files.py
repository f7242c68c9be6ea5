"""The project's files as git sees them (tracked, plus untracked ones .gitignore does not exclude): what a package or
a build context is made from, for tests/test_azd.py (.funcignore) and tests/test_container.py (.dockerignore)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def repo_files() -> list[str]:
    """Paths relative to the repository root, files only."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    return [p for p in out.split("\0") if p and (ROOT / p).is_file()]
