"""What the validator reports: each broken rule at its path, and the exception that carries them all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Violation:
    path: str  # "$" for the document itself, else e.g. "blocks[3].locator.line_end"
    rule: str

    def __str__(self) -> str:
        return f"{self.path}: {self.rule}"


class InvalidArtifact(Exception):
    """An artifact that breaks the contract; ``violations`` lists every rule it breaks."""

    SHOWN: Final = 5

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__(self._summary())

    def __reduce__(self) -> tuple[type[InvalidArtifact], tuple[list[Violation]]]:
        return (InvalidArtifact, (self.violations,))  # pickles whole (the default would pass the summary)

    def _summary(self) -> str:
        n = len(self.violations)
        shown = "; ".join(str(v) for v in self.violations[: self.SHOWN])
        more = f" (and {n - self.SHOWN} more)" if n > self.SHOWN else ""
        return f"invalid artifact, {n} violation{'s' if n != 1 else ''}: {shown}{more}"

    def __str__(self) -> str:
        return self._summary()
