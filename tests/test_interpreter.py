"""The oldest Python the project runs on (``shared.interpreter``): every entry point refuses an older one by name."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from shared.interpreter import MIN_PYTHON, unsupported

ROOT = Path(__file__).resolve().parent.parent
OLD = (3, 11, 2, "final", 0)  # Debian 12's python3


@pytest.mark.parametrize("version", [(3, 11, 2), (3, 11, 4), (3, 10, 12), (3, 11, 0, "beta", 1)])
def test_an_older_interpreter_is_refused_by_name(version: tuple[int, ...]) -> None:
    why = unsupported(version)
    assert why is not None
    assert ".".join(map(str, version[:3])) in why
    assert "3.11.5 or later" in why


@pytest.mark.parametrize("version", [(3, 11, 5), (3, 11, 7), (3, 12, 0), (3, 13, 1, "final", 0)])
def test_a_fixed_interpreter_runs(version: tuple[int, ...]) -> None:
    assert unsupported(version) is None


def test_this_interpreter_runs_and_its_engine_has_the_fix() -> None:
    """The suite's own interpreter: past the bound, and its ``re`` answers CPython gh-106052's case right (a
    possessive repeat matches no more than its greedy form)."""
    assert unsupported() is None
    assert re.fullmatch("(?:ab?c)*", "a") is None
    assert re.fullmatch("(?:ab?c)*+", "a") is None
    done = subprocess.run([sys.executable, "-m", "shared.interpreter"], cwd=ROOT, capture_output=True, check=False)
    assert (done.returncode, done.stderr) == (0, b"")


def test_pyproject_names_the_same_bound() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=" + ".".join(map(str, MIN_PYTHON))


def test_the_cli_refuses_an_older_interpreter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from extract_fn.__main__ import EXIT_USAGE, main

    path = tmp_path / "a.txt"
    path.write_text("hi\n")
    monkeypatch.setattr(sys, "version_info", OLD)
    code = main(["extract", str(path), "--format", "text"])
    monkeypatch.undo()
    out, err = capsys.readouterr()
    assert (code, out) == (EXIT_USAGE, "")
    assert "refusing to start" in err
    assert "this is 3.11.2" in err


def test_the_devhost_refuses_an_older_interpreter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from devhost.__main__ import main

    monkeypatch.setattr(sys, "version_info", OLD)
    code = main(["run"])
    monkeypatch.undo()
    assert code == 1
    assert "this is 3.11.2" in capsys.readouterr().err


def test_the_function_app_refuses_an_older_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXTRACTOR_TOKENS", "test-token")  # the app module builds its app at import, as the host asks
    import function_app

    env = {"EXTRACTOR_TOKENS": "t"}
    assert function_app.build_app(env).get_functions()  # the same call, on this interpreter
    monkeypatch.setattr(sys, "version_info", OLD)
    with pytest.raises(RuntimeError, match=r"refusing to start: .*this is 3\.11\.2"):
        function_app.build_app(env)
