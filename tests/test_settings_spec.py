"""The one settings reader (shared/settings_spec.py): every bad setting at once, secrets never shown, one error class,
the declarations matching the docs tables, the version read from pyproject.toml."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

import extract_fn.settings as extractor_settings
import shared.loom.settings as loom_settings
import shared.orchestration.settings as orchestration_settings
import shared.tracing as tracing
import shared.version as version
from shared.settings_spec import Problem, Setting, SettingsError, declared, read, read_all
from tests.conftest import ROOT


def _number(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"must be a whole number, got {raw!r}") from None


def test_read_reports_every_bad_setting_at_once_and_defaults_the_rest() -> None:
    decls = [Setting("A", 1, _number, "a"), Setting("B", 2, _number, "b"), Setting("C", 3, _number, "c")]
    assert read(decls, {"A": " 7 ", "B": "  "}) == {"A": 7, "B": 2, "C": 3}  # blank is unset
    with pytest.raises(SettingsError) as info:
        read(decls, {"A": "x", "B": "8", "C": "y"}, heading="invalid: ")
    assert info.value.settings == ("A", "C")
    assert str(info.value) == "invalid: A: must be a whole number, got 'x'; C: must be a whole number, got 'y'"


def test_a_secret_value_never_reaches_a_message_whatever_the_parser_says() -> None:
    decls = [Setting("TOKEN", 0, _number, "a token", secret=True), Setting("PLAIN", 0, _number, "not secret")]
    values, problems = read_all(decls, {"TOKEN": "S3cr3t-value", "PLAIN": "shown"})
    assert values == {"TOKEN": 0, "PLAIN": 0}
    assert [p.setting for p in problems] == ["TOKEN", "PLAIN"]
    assert "S3cr3t" not in str(SettingsError(problems))
    assert "'shown'" in str(SettingsError(problems))


def test_a_parser_may_report_several_problems_of_one_setting() -> None:
    def hosts(raw: str) -> tuple[str, ...]:
        bad = [f"{h!r} is not a host" for h in raw.split(",") if "/" in h]
        if bad:
            raise ValueError(*bad)
        return tuple(raw.split(","))

    _, problems = read_all([Setting("HOSTS", (), hosts, "hosts")], {"HOSTS": "a/,b,c/"})
    assert [str(p) for p in problems] == ["HOSTS: 'a/' is not a host", "HOSTS: 'c/' is not a host"]


def test_a_problem_that_starts_with_its_setting_is_shown_as_written() -> None:
    assert str(Problem("X", "X is not set: set it")) == "X is not set: set it"
    assert str(Problem("X", "must be set")) == "X: must be set"


def test_one_settings_error_for_the_extractor_the_loom_client_and_the_orchestration() -> None:
    assert extractor_settings.SettingsError is SettingsError
    assert loom_settings.LoomSettingsError is SettingsError
    assert orchestration_settings.SettingsError is SettingsError


def test_the_extractor_reports_every_bad_setting_at_once() -> None:
    with pytest.raises(SettingsError) as info:
        extractor_settings.Settings.from_env(
            {"EXTRACTOR_MAX_BYTES": "lots", "EXTRACTOR_WORKERS": "0", "EXTRACTOR_BODY_TIMEOUT_S": "nan"}
        )
    assert set(info.value.settings) == {
        "EXTRACTOR_MAX_BYTES",
        "EXTRACTOR_WORKERS",
        "EXTRACTOR_BODY_TIMEOUT_S",
        "EXTRACTOR_TOKENS",  # not set, and required
    }


def test_defaults_are_the_declarations() -> None:
    assert extractor_settings.Settings().max_output_bytes == extractor_settings.MAX_OUTPUT_BYTES.default
    orch = orchestration_settings.OrchestrationSettings()
    for field, decl in declared(orchestration_settings.OrchestrationSettings):
        assert getattr(orch, field) == decl.default, field
    s = orchestration_settings.OrchestrationSettings.from_env({"DataStorage": "UseDevelopmentStorage=true"})
    assert (s.poll_queue, s.cancel_queue) == ("poll-jobs", "cancel-jobs")


def test_secret_fields_stay_out_of_the_repr() -> None:
    s = orchestration_settings.OrchestrationSettings.from_env(
        {"DataStorage": "AccountKey=K3y-secret", "PALANTIR_TOKEN": "P4l-secret"}
    )
    assert "K3y-secret" not in repr(s)
    assert "P4l-secret" not in repr(s)


# ---------------------------------------------------------------------------------------------------------------
# The docs tables name every declared setting with its default.


def _table_defaults(text: str) -> dict[str, list[str]]:
    """Setting name -> the default cells of the table rows that name it in their setting column."""
    found: dict[str, list[str]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not (line.startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1])):
            continue
        header = [c.strip().lower() for c in line.strip("|").split("|")]
        name_col = next((n for n, c in enumerate(header) if "setting" in c or c == "variable"), None)
        if "default" not in header or name_col is None:
            continue
        default_col = header.index("default")
        for row in lines[i + 2 :]:
            if not row.startswith("|"):
                break
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            names = re.findall(r"`([A-Za-z][\w.]*)`", cells[name_col])
            defaults = [d.strip() for d in cells[default_col].split(", ")]
            for n, name in enumerate(names):
                found.setdefault(name, []).append(defaults[n] if len(defaults) == len(names) else cells[default_col])
    return found


def _normal(value: str) -> str:
    return re.sub(r"(?<=\d) (?=\d{3})", "", value.replace("`", "")).strip()


DOCS: list[tuple[str, tuple[Setting[Any], ...], list[Path]]] = [
    ("extractor", extractor_settings.DECLARATIONS, [ROOT / "docs/extractor.md"]),
    ("loom", loom_settings.DECLARATIONS, [ROOT / "docs/loom-client.md"]),
    ("orchestration", orchestration_settings.DECLARATIONS, [ROOT / "docs/orchestration.md"]),
    ("tracing", tracing.DECLARATIONS, [ROOT / "docs/orchestration.md", ROOT / "README.md"]),
]


@pytest.mark.parametrize(("what", "declarations", "docs"), DOCS, ids=[d[0] for d in DOCS])
def test_the_docs_tables_give_every_declared_setting_its_default(
    what: str, declarations: tuple[Setting[Any], ...], docs: list[Path]
) -> None:
    tables = _table_defaults("\n".join(p.read_text() for p in docs))
    if what == "extractor":  # the module's docstring table too
        for name, cells in _table_defaults(extractor_settings.__doc__ or "").items():
            tables.setdefault(name, []).extend(cells)
    wrong = []
    for decl in declarations:
        found = tables.get(decl.name)
        if not found:
            wrong.append(f"{decl.name}: in no settings table")
            continue
        expected = _normal(decl.documented_default())
        wrong += [
            f"{decl.name}: {cell!r}, not {expected!r}" for cell in found if not _normal(cell).startswith(expected)
        ]
    assert wrong == []


def test_the_docs_check_sees_a_wrong_default() -> None:
    text = "| setting | default | meaning |\n|---|---|---|\n| `A`, `B` | 1, `two` | x |\n| `C` | 3 | y |\n"
    assert _table_defaults(text) == {"A": ["1"], "B": ["`two`"], "C": ["3"]}
    assert _normal("67 108 864 (64 MiB)").startswith("67108864")


# ---------------------------------------------------------------------------------------------------------------
# The version


def test_the_version_is_pyprojects() -> None:
    with (ROOT / "pyproject.toml").open("rb") as f:
        expected = tomllib.load(f)["project"]["version"]
    assert version.package_version() == expected == extractor_settings.EXTRACTOR_VERSION


def test_the_version_follows_pyproject_and_falls_back_to_the_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "docextract"\nversion = "9.8.7"\n')
    monkeypatch.setattr(version, "PYPROJECT", pyproject)
    version.package_version.cache_clear()
    try:
        assert version.package_version() == "9.8.7"
        monkeypatch.setattr(version, "PYPROJECT", tmp_path / "absent.toml")
        monkeypatch.setattr(importlib.metadata, "version", lambda name: "4.5.6")
        version.package_version.cache_clear()
        assert version.package_version() == "4.5.6"

        def missing(name: str) -> str:
            raise importlib.metadata.PackageNotFoundError(name)

        monkeypatch.setattr(importlib.metadata, "version", missing)
        version.package_version.cache_clear()
        with pytest.raises(RuntimeError, match="version is unknown"):
            version.package_version()
    finally:
        version.package_version.cache_clear()
