"""DrawingML pieces shared by docx and pptx: SmartArt data parts, picture alt text, the graphic frame's parts.

- SmartArt (``a:graphicData`` of the diagram URI, ``dgm:relIds r:dm``): the text of the diagram's data part
  (``dgm:dataModel``), one entry per content point (``dgm:pt`` of type ``node`` or ``asst``, in the data model's
  order), which is the text the diagram draws; the transition, document and presentation points hold none.
- Alt text: a drawing's ``cNvPr``/``docPr`` ``descr`` (else its ``title``), whitespace-collapsed.
"""

from __future__ import annotations

from typing import Any

from extract_fn.formats.ooxml_text import local
from shared.artifact_builder import ArtifactBuilder

R_NAMESPACES = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "http://purl.oclc.org/ooxml/officeDocument/relationships",
)
CONTENT_POINTS = frozenset({"node", "asst"})
LOST_IMAGE_TEXT = "image_text"  # coverage.lost: pictures whose pixels were not read (no OCR)


def r_attr(el: Any, name: str) -> str | None:
    """An ``r:`` attribute (relationship id) in either namespace."""
    for ns in R_NAMESPACES:
        v = el.get(f"{{{ns}}}{name}")
        if v:
            return str(v)
    return None


def graphic_kind(data: Any) -> str:
    """The last path segment of an ``a:graphicData`` URI: ``chart``, ``diagram``, ``table``, ``picture``, ..."""
    uri = data.get("uri") or ""
    return uri.rstrip("/").rsplit("/", 1)[-1]


def find_local(el: Any, name: str) -> Any:
    """The first descendant (or ``el`` itself) with local name ``name``, or None."""
    for d in el.iter():
        if local(d.tag) == name:
            return d
    return None


def diagram_texts(root: Any) -> list[str]:
    """The texts of a SmartArt data part's content points, in order."""
    out: list[str] = []
    pt_list = next((c for c in root if local(c.tag) == "ptLst"), None)
    if pt_list is None:
        return out
    for pt in pt_list:
        if local(pt.tag) != "pt" or (pt.get("type") or "node") not in CONTENT_POINTS:
            continue
        body = next((c for c in pt if local(c.tag) == "t"), None)
        if body is None:
            continue
        paras = ["".join(t.text or "" for t in p.iter() if local(t.tag) == "t") for p in body if local(p.tag) == "p"]
        text = "\n".join(p.strip() for p in paras if p.strip())
        if text:
            out.append(text)
    return out


def alt_text(nv_props: Any | None) -> str:
    """A drawing's alt text (``descr``, else ``title``) from its ``cNvPr``/``docPr``; '' when it has none."""
    if nv_props is None:
        return ""
    text = nv_props.get("descr") or nv_props.get("title") or ""
    return " ".join(text.split())


def report_pictures(builder: ArtifactBuilder, pictures: int) -> None:
    """Pictures are seen but their pixels are not read: ``coverage.lost`` ``image_text`` and a warning saying so."""
    if pictures:
        builder.lose(LOST_IMAGE_TEXT)
        builder.warn(f"{pictures} picture(s) not read: any text drawn in them is missing (their alt text is in attrs)")
