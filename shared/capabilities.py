"""The capabilities document of extractor contract v1 (GET /v1/capabilities), as pydantic models.

Kept apart from ``shared.contract`` so that worker processes, which never read capabilities, do not import pydantic.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ExtractorInfo(_Strict):
    name: StrictStr = Field(min_length=1)
    version: StrictStr = Field(min_length=1)


class FormatCapability(_Strict):
    format: StrictStr
    options: list[StrictStr] = Field(default_factory=list)


class Capabilities(_Strict):
    contract_version: StrictInt
    extractor: ExtractorInfo
    max_bytes: StrictInt = Field(ge=0)
    formats: list[FormatCapability]

    def supports(self, fmt: str) -> bool:
        return any(f.format == fmt for f in self.formats)

    def options_for(self, fmt: str) -> tuple[str, ...]:
        for f in self.formats:
            if f.format == fmt:
                return tuple(f.options)
        return ()
