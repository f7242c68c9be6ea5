"""The docs name what exists: every backticked repo path and module in README.md, SECURITY.md and docs/*.md, every
link to a doc and its section, and every README section another file points at ("see README "X"")."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", ROOT / "SECURITY.md", *(ROOT / "docs").glob("*.md")])
# Files that point at a README section by name (``README "Dependencies"``).
POINTERS = sorted([*ROOT.glob("requirements*.txt"), ROOT / "Makefile", *DOCS])
PACKAGES = ("shared", "extract_fn", "submit_fn", "poll_fn", "devhost", "tools", "benchmarks", "tests")
FILE_SUFFIXES = (".py", ".md", ".json", ".bicep", ".txt", ".toml", ".tsv", ".sh")
# Bare names the docs use that are not repository files, each for its reason.
NOT_FILES = {
    "local.settings.json": "made from local.settings.example.json by whoever runs `func start` (gitignored)",
    "result.json": "the blob name of a job's result in Storage",
}

_CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)( at [0-9a-f]{7,40}\b)?")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_MODULE = re.compile(rf"^(?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_]\w*)+$")
_README_SECTION = re.compile(r"README \"([^\"]+)\"")


@cache
def tracked() -> frozenset[str]:
    """The repository's files (tracked or new, not ignored), relative to its root."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return frozenset(p for p in out.splitlines() if (ROOT / p).exists())


@cache
def tracked_dirs() -> frozenset[str]:
    return frozenset(str(parent) for p in tracked() for parent in Path(p).parents if str(parent) != ".")


def top_level() -> frozenset[str]:
    return frozenset(p.split("/", 1)[0] for p in tracked())


def spans(doc: Path) -> list[str]:
    """The code spans outside code blocks, but for a path at a named commit (`shared/artifact.py` at 2dca9e4)."""
    text = _FENCE.sub("", doc.read_text(encoding="utf-8"))
    return [m.group(1) for m in _CODE_SPAN.finditer(text) if m.group(2) is None]


def repo_path(span: str) -> str | None:
    """The repository path a code span names, or None when it names none (a command, a value, a pattern)."""
    if any(c in span for c in " <>{}*$?=,:()[]|\"'") or span.startswith(("..", "/", "-", "http")):
        return None
    first = span.split("/", 1)[0]
    if "/" in span and first in top_level():
        return span.rstrip("/")
    return None


def bare_file(span: str) -> str | None:
    """A bare file name (``app.py``): it must exist somewhere in the repository."""
    if re.fullmatch(r"[\w.-]+", span) and span.endswith(FILE_SUFFIXES) and not span.startswith("."):
        return span
    return None


def module_exists(dotted: str) -> bool:
    """``a.b.c`` is a module, or names something a module defines (``shared.contract.ErrorCode``)."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        base = "/".join(parts[:n])
        source = next((ROOT / c for c in (f"{base}.py", f"{base}/__init__.py") if c in tracked()), None)
        if source is None:
            continue
        rest = parts[n:]
        if not rest:
            return True
        name = re.escape(rest[0])
        pattern = rf"^\s*(?:def|class|async def)\s+{name}\b|^\s*{name}\s*[:=]|import .*\b{name}\b|[\"']{name}[\"']"
        return re.search(pattern, source.read_text(encoding="utf-8"), re.MULTILINE) is not None
    return False


def headings(doc: Path) -> set[str]:
    """GitHub's anchors of a markdown file's headings."""
    text = _FENCE.sub("", doc.read_text(encoding="utf-8"))
    names = re.findall(r"^#+\s+(.+?)\s*$", text, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", n).strip().lower().replace(" ", "-") for n in names}


def readme_sections() -> set[str]:
    return set(re.findall(r"^#+\s+(.+?)\s*$", _FENCE.sub("", (ROOT / "README.md").read_text()), re.MULTILINE))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_backticked_path_and_module_exists(doc: Path) -> None:
    missing = []
    names = {Path(p).name for p in tracked()} | {Path(d).name for d in tracked_dirs()}
    for span in spans(doc):
        path = repo_path(span)
        if path is not None:
            if path not in tracked() and path not in tracked_dirs():
                missing.append(span)
        elif _MODULE.match(span):
            if not module_exists(span):
                missing.append(span)
        elif bare_file(span) and span not in names and span not in NOT_FILES:
            missing.append(span)
    assert missing == [], f"{doc.relative_to(ROOT)} names what does not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_to_a_doc_and_its_section_exists(doc: Path) -> None:
    broken = []
    for target in _LINK.findall(_FENCE.sub("", doc.read_text(encoding="utf-8"))):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        linked = (doc.parent / file).resolve() if file else doc
        if not linked.is_relative_to(ROOT):  # the specs and corpus beside the repository (../shared): not ours
            continue
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in headings(linked)):
            broken.append(target)
    assert broken == [], f"{doc.relative_to(ROOT)} links to what does not exist: {broken}"


@pytest.mark.parametrize("pointer", POINTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_readme_section_pointed_at_exists(pointer: Path) -> None:
    named = _README_SECTION.findall(pointer.read_text(encoding="utf-8"))
    assert set(named) <= readme_sections(), f"{pointer.relative_to(ROOT)}: no README section {named}"


def test_the_checks_see_what_is_stale() -> None:
    """The checks above fail on the stale names this test file was written against."""
    assert repo_path("shared/loom_job.py") not in tracked()
    assert not module_exists("shared.loom_job")
    assert not module_exists("shared.contract.NoSuchName")
    assert module_exists("shared.contract.ErrorCode")
    assert repo_path("extract_fn/function.py") not in tracked()
    assert "Dependencies" in readme_sections()
    assert bare_file("loom_job.py") == "loom_job.py"
    assert repo_path("make lint") is None
    assert _CODE_SPAN.search("old (`shared/artifact.py` at 2dca9e4)").group(2) is not None  # type: ignore[union-attr]
