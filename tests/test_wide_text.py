"""One wide-text policy: every format that reads text refuses UTF-16/32 without a byte-order mark read as UTF-8 by
default with the same ``encoding`` error (``text_decoding.refuse_wide_text``), naming the codec the bytes look like."""

from __future__ import annotations

import pytest

from extract_fn.formats import extractor_for
from extract_fn.formats.base import ExtractRequest
from shared.contract import ErrorCode, ExtractionError

SOURCES = {
    "text": "plain words\non two lines\n",
    "markdown": "# Title\n\nSome text.\n",
    "html": "<p>Some text</p>\n",
    "csv": "a,b\n1,2\n3,4\n",
    "sql": "SELECT 1;\nSELECT 2;\n",
    "toml": 'a = 1\nb = "two"\n',
}


def error_of(fmt: str, data: bytes) -> ExtractionError:
    with pytest.raises(ExtractionError) as exc:
        extractor_for(fmt)(data, ExtractRequest(fmt, name=f"t.{fmt}"))
    return exc.value


@pytest.mark.parametrize("fmt", sorted(SOURCES))
@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_wide_text_without_a_bom_is_one_answer_everywhere(fmt: str, codec: str) -> None:
    err = error_of(fmt, SOURCES[fmt].encode(codec))
    assert err.code is ErrorCode.ENCODING
    assert f"look like {codec.upper()} without a byte-order mark" in err.message
    if fmt == "toml":  # TOML is UTF-8 by definition: no codec option to suggest
        assert f"convert the file from {codec} to UTF-8" in err.message
    else:
        assert f"(encoding={codec})" in err.message


@pytest.mark.parametrize("fmt", ["text", "csv", "sql"])
def test_the_encoding_option_reads_wide_text(fmt: str) -> None:
    data = SOURCES[fmt].encode("utf-16-le")
    artifact = extractor_for(fmt)(data, ExtractRequest(fmt, name=f"t.{fmt}", encoding="utf-16-le"))
    assert artifact["attrs"]["encoding"] == "utf-16-le"
