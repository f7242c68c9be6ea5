"""The extractor kinds a registration may name: the one place their wire strings are spelled."""

from __future__ import annotations

import enum


class ExtractorType(enum.StrEnum):
    """``extractorType`` of a registration, of a job entity and of a status event (the values are the wire strings).

    Each kind has one ``ExtractorClient`` (``shared.orchestration.extractor_client``), built by the composition root.
    """

    DOCSAI = "DOCSAI"
    DBRICKS = "DBRICKS"
    LOOM = "LOOM"

    @classmethod
    def parse(cls, value: str | None) -> ExtractorType | None:
        """The kind a stored or registered string names (case and surrounding blanks ignored); None if none."""
        if not value:
            return None
        try:
            return cls(value.strip().upper())
        except ValueError:
            return None
