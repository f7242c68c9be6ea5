"""The service's OCR settings (read once per process) and one file's OCR allowance (page cap and time budget)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from extract_fn import settings
from shared.settings_spec import Setting, read_all


@dataclass(frozen=True, slots=True)
class OcrSettings:
    enabled: bool
    max_pages: int
    budget_s: float


# The share of the extraction timeout OCR may take at most, whatever EXTRACTOR_OCR_BUDGET_S says: the file's other
# work and its last page (the budget is checked between pages) need the rest.
TIMEOUT_SHARE = 0.5


@cache
def ocr_settings() -> OcrSettings:
    """EXTRACTOR_OCR, EXTRACTOR_OCR_MAX_PAGES, EXTRACTOR_OCR_BUDGET_S from the environment (bad values: defaults;
    the service's start-up check has already refused them); the budget is at most half of EXTRACTOR_TIMEOUT_S."""
    decls: list[Setting[Any]] = [settings.OCR, settings.OCR_MAX_PAGES, settings.OCR_BUDGET_S, settings.TIMEOUT_S]
    values, _ = read_all(decls, os.environ)
    budget = min(float(values[settings.ENV_OCR_BUDGET_S]), TIMEOUT_SHARE * float(values[settings.ENV_TIMEOUT_S]))
    return OcrSettings(
        bool(values[settings.ENV_OCR]), max(0, int(values[settings.ENV_OCR_MAX_PAGES])), max(0.0, budget)
    )


def enabled() -> bool:
    from extract_fn.ocr import engine

    return ocr_settings().enabled and engine.available()


@dataclass(slots=True)
class Allowance:
    """What one file may still spend on OCR."""

    max_pages: int
    budget_s: float
    pages: int = 0
    spent_s: float = 0.0
    _started: float = field(default_factory=time.monotonic)

    @classmethod
    def for_file(cls) -> Allowance:
        s = ocr_settings()
        return cls(s.max_pages, s.budget_s)

    def refusal(self) -> str | None:
        """Why the next page cannot be read, or None when it can."""
        if self.pages >= self.max_pages:
            return f"not read by OCR: the file reached the OCR cap of {self.max_pages:,} pages and pictures"
        if self.spent_s >= self.budget_s:
            return self.budget_reason()
        return None

    def budget_reason(self) -> str:
        return f"not read by OCR: the file used its OCR time budget of {self.budget_s:g} s"

    def remaining_s(self) -> float:
        return max(0.0, self.budget_s - self.spent_s)

    def charge(self, seconds: float) -> None:
        self.pages += 1
        self.spent_s += seconds
