"""The project's version: pyproject.toml's ``[project] version``, the one place it is written.

The Function App is deployed as a folder, not pip-installed, so there is usually no installed distribution to ask:
``importlib.metadata`` answers when the ``docextract`` distribution is installed (a wheel, ``pip install -e``) and
its pyproject.toml is not beside this package; otherwise pyproject.toml (deployed with the app, read once, cheap) is
the source. Neither found raises ``RuntimeError``: a version that might be wrong is never reported.
"""

from __future__ import annotations

import functools
import os
from typing import Final

DISTRIBUTION: Final = "docextract"
# A path as text (os.path, not pathlib: a text file's cold start loads pathlib for nothing else); a Path works too.
PYPROJECT: Final = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "pyproject.toml")


@functools.cache
def package_version() -> str:
    """The version of this code: its own pyproject.toml's, else the installed distribution's metadata."""
    import tomllib  # only here: a cold start that never reports the version (the CLI's extract) skips it

    if os.path.isfile(PYPROJECT):
        with open(PYPROJECT, "rb") as f:
            project = tomllib.load(f).get("project", {})
        if project.get("name") == DISTRIBUTION and isinstance(project.get("version"), str):
            return str(project["version"])
    import importlib.metadata  # only here: it costs a cold start ~25 ms (email, zipfile) when pyproject.toml answers

    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError(
            f"the {DISTRIBUTION} version is unknown: deploy pyproject.toml with the app or install the package"
        ) from None
