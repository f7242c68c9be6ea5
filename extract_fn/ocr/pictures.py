"""OCR of the pictures inside a DOCX or PPTX package: the blocks the format module adds after the picture's place.

A picture is read when OCR is on, it is a raster Pillow can decode (PNG, JPEG, GIF, BMP, TIFF, WebP) and it has at
least ``ocr_min_picture_pixels``; its size is read from its header first, so a picture over
``ocr_max_image_pixels`` (a 20,000 x 20,000 PNG) is refused before it is decoded. Each picture is read once per
file, however often it is placed. A picture OCR finds no text in (a photo) adds nothing; one that is refused (too
large, damaged, past the file's OCR cap or budget) adds a warning saying so and ``ocr`` to ``coverage.lost``. The
picture's alt text is the format module's business and is not touched.
"""

from __future__ import annotations

import io
import warnings
import zipfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from extract_fn.formats.zipsafe import member_info, read_member
from extract_fn.limits import Limits
from extract_fn.ocr.config import Allowance, enabled

if TYPE_CHECKING:  # loaded with the first picture read: Pillow and the OCR engine cost a file without one ~15 ms
    from extract_fn.ocr import blocks

_BLIP = "blip"
_EMBED_ATTRS = (
    "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed",
    "{http://purl.oclc.org/ooxml/officeDocument/relationships}embed",
)
_FORMATS = frozenset({"PNG", "JPEG", "GIF", "BMP", "TIFF", "WEBP", "MPO"})


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


class PictureReader:
    """One file's picture OCR (created by the format module; the engine loads on the first picture read)."""

    def __init__(self, zf: zipfile.ZipFile, limits: Limits) -> None:
        self.zf = zf
        self.limits = limits
        self.on: bool | None = None
        self.allowance: Allowance | None = None
        self.done: dict[str, list[blocks.OcrBlock]] = {}
        self.read_ok: dict[str, bool] = {}  # member -> its pixels were read (text found or not)
        self.refused: list[str] = []

    def picture(self, member: str | None) -> tuple[list[blocks.OcrBlock], bool]:
        """The OCR blocks of one placed picture (none when it was read before) and whether its pixels were read:
        False when OCR is off, the picture is refused, or it is no raster Pillow decodes (EMF, WMF, SVG)."""
        if not member:
            return [], False
        out = self._read(member)
        return out, self.read_ok.get(member, False)

    def blocks_for(self, el: Any, targets: Mapping[str, str]) -> list[blocks.OcrBlock]:
        """OCR blocks of the pictures placed inside ``el`` (``targets``: relationship id -> part name)."""
        out: list[blocks.OcrBlock] = []
        for node in el.iter():
            if _local(node.tag) != _BLIP:
                continue
            rid = next((node.get(a) for a in _EMBED_ATTRS if node.get(a)), None)
            member = targets.get(rid or "")
            if member:
                out.extend(self._read(member))
        return out

    def _read(self, member: str) -> list[blocks.OcrBlock]:
        if member in self.done:
            return []  # read once: a logo on every slide is not repeated
        self.done[member] = []
        if self.on is None:
            self.on = enabled()
        if not self.on:
            return []
        from PIL import Image

        info = member_info(self.zf, member)
        if info is None:
            return []
        if info.file_size > 64 * 1024**2:
            return self._refuse(member, f"the picture file is {info.file_size:,} bytes")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                image = Image.open(io.BytesIO(read_member(self.zf, member, "package")))
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            return self._refuse(
                member, f"the picture is over the OCR limit of {self.limits.ocr_max_image_pixels:,} pixels"
            )
        except Exception:
            return []
        if image.format not in _FORMATS:
            return []
        pixels = image.width * image.height
        if pixels < self.limits.ocr_min_picture_pixels:
            self.read_ok[member] = True  # too small to hold legible text: nothing to read
            return []
        if pixels > self.limits.ocr_max_image_pixels:
            return self._refuse(
                member,
                f"the picture is {image.width:,} x {image.height:,} pixels, over the OCR limit of "
                f"{self.limits.ocr_max_image_pixels:,} pixels",
            )
        try:
            image.load()
        except Exception:
            return self._refuse(member, "the picture cannot be decoded")
        if self.allowance is None:
            self.allowance = Allowance.for_file()
        dpi = image.info.get("dpi", (300, 300))[0]
        from extract_fn.ocr import blocks

        outcome = blocks.read(
            image, self.allowance, dpi=int(dpi) if isinstance(dpi, (int, float)) and dpi >= 70 else 300
        )
        if outcome.reason and outcome.reason != blocks.NOTHING_FOUND:
            return self._refuse(member, outcome.reason)
        self.done[member] = outcome.blocks
        self.read_ok[member] = True
        return outcome.blocks

    def _refuse(self, member: str, why: str) -> list[blocks.OcrBlock]:
        self.refused.append(f"picture {member} was not read by OCR: {why.removeprefix('not read by OCR: ')}")
        return []

    def finish(self, builder: Any) -> None:
        """Warnings for the pictures not read, and ``ocr`` lost when there is one."""
        if self.refused:
            from shared.contract import LOST_OCR

            for message in self.refused[:20]:
                builder.warn(message)
            if len(self.refused) > 20:
                builder.warn(f"{len(self.refused) - 20:,} more pictures were not read by OCR")
            builder.lose(LOST_OCR)
