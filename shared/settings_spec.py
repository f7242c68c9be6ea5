"""One typed declaration per setting, one reader for all of them, one error that names every bad setting.

The extractor (``extract_fn.settings``), the LOOM client (``shared.loom.settings``) and the orchestration
(``shared.orchestration.settings``) each declare their settings as ``Setting`` objects (name, default, parser, secret
or not, what it means) and read them with ``read_all``/``read``: every bad setting is reported at once in one
``SettingsError``, and a secret setting's value never appears in a message, whatever its parser says.

A settings dataclass declares a field with ``setting_field(decl)``: the default is written once (in the declaration)
and ``declared(cls)`` lists the (field, declaration) pairs a ``from_env`` reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, NamedTuple, TypeVar

T = TypeVar("T")

_METADATA_KEY: Final = "setting"


class Problem(NamedTuple):
    """What is wrong with one setting. ``what`` never holds a secret's value."""

    setting: str
    what: str

    def __str__(self) -> str:
        # A sentence that already starts with its setting's name ("X is an unresolved Key Vault reference") is shown as
        # it is; otherwise the name leads: "X: must be an integer >= 1, got 0".
        return self.what if self.what.startswith(self.setting + " ") else f"{self.setting}: {self.what}"


class SettingsError(ValueError):
    """One or more settings are missing or invalid; the message names every one and says what it must be.

    The one settings error of the project (the extractor, the LOOM client and the orchestration raise it).
    ``problems`` holds the ``Problem`` pairs, ``settings`` the names in the order they were found.
    """

    def __init__(self, problems: Sequence[tuple[str, str]], *, heading: str = "") -> None:
        self.problems: tuple[Problem, ...] = tuple(Problem(*p) for p in problems)
        self.heading = heading
        super().__init__(heading + "; ".join(str(p) for p in self.problems))

    @property
    def settings(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.setting for p in self.problems))


@dataclass(frozen=True, slots=True)
class Setting(Generic[T]):
    """One setting: its name, default, how a value is parsed, whether it is a secret, and what it means (docs).

    ``parse`` gets the stripped, non-blank value and returns the typed value or raises ``ValueError`` saying what is
    wrong (the text after "NAME: "; several arguments are several problems, e.g. two bad items of a list). An unset
    or blank setting takes the default (``factory()`` when given, for a default computed at read time). ``binding``:
    the Functions host also resolves it as ``%NAME%`` in a trigger definition, so it must exist as an app setting
    wherever the host runs (a binding expression has no default).
    """

    name: str
    default: T
    parse: Callable[[str], T]
    doc: str
    secret: bool = False
    default_doc: str | None = None  # the default as the docs tables show it, when not the plain value
    factory: Callable[[], T] | None = None
    binding: bool = False

    def default_value(self) -> T:
        return self.factory() if self.factory is not None else self.default

    def documented_default(self) -> str:
        """The default as the docs tables write it: ``—`` for none, ``false``, ``60`` for 60.0, ``a,b`` for a list."""
        value: Any = self.default
        if self.default_doc is not None:
            return self.default_doc
        if value is None:
            return "—"
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        if isinstance(value, tuple):
            return ",".join(str(v) for v in value) if value else "(none)"
        return str(value)


def text(raw: str) -> str:
    """The parser of a plain text setting (already stripped and non-blank)."""
    return raw


def optional_text(raw: str) -> str | None:
    """The parser of a text setting whose default is ``None`` (unset)."""
    return raw


def setting_field(decl: Setting[T]) -> T:
    """A dataclass field whose default is the declaration's; secrets are kept out of the repr."""
    meta = {_METADATA_KEY: decl}
    if decl.factory is not None:
        return dataclasses.field(default_factory=decl.factory, repr=not decl.secret, metadata=meta)
    return dataclasses.field(default=decl.default, repr=not decl.secret, metadata=meta)


def declared(cls: Any) -> tuple[tuple[str, Setting[Any]], ...]:
    """The (field name, declaration) pairs of a settings dataclass, in field order."""
    return tuple((f.name, f.metadata[_METADATA_KEY]) for f in dataclasses.fields(cls) if _METADATA_KEY in f.metadata)


def raw_value(environ: Mapping[str, str], name: str) -> str | None:
    """A setting's stripped value, or ``None`` when unset or blank (an app setting left empty means unset)."""
    value = environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def read_all(declarations: Iterable[Setting[Any]], environ: Mapping[str, str]) -> tuple[dict[str, Any], list[Problem]]:
    """Every declared setting's value (by name; the default where unset or bad) and every problem found."""
    values: dict[str, Any] = {}
    problems: list[Problem] = []
    for decl in declarations:
        raw = raw_value(environ, decl.name)
        if raw is None:
            values[decl.name] = decl.default_value()
            continue
        try:
            values[decl.name] = decl.parse(raw)
        except ValueError as exc:
            for arg in exc.args or ("is not a valid value",):
                what = str(arg)
                if decl.secret and raw in what:
                    what = "is not a valid value (the value is a secret and is not shown)"
                problems.append(Problem(decl.name, what))
            values[decl.name] = decl.default_value()
    return values, problems


def read(declarations: Iterable[Setting[Any]], environ: Mapping[str, str], *, heading: str = "") -> dict[str, Any]:
    """Every declared setting's value by name; ``SettingsError`` naming every bad one."""
    values, problems = read_all(declarations, environ)
    if problems:
        raise SettingsError(problems, heading=heading)
    return values
