"""DOCX text as Word shows it: nested fields (only the outermost result), hidden text, w:sym characters, WordArt
watermarks, legacy form fields and MACROBUTTON, note numbering settings, list instances sharing one list."""

from __future__ import annotations

from typing import Any

from tests.test_format_docx import NS, make_docx, p, run


def _texts(a: dict[str, Any]) -> list[str]:
    return [b["text"] for b in a["blocks"]]


def _r(text: str, rpr: str = "") -> str:
    return f'<w:r>{f"<w:rPr>{rpr}</w:rPr>" if rpr else ""}<w:t xml:space="preserve">{text}</w:t></w:r>'


def _fld(kind: str, inner: str = "") -> str:
    return f'<w:r><w:fldChar w:fldCharType="{kind}">{inner}</w:fldChar></w:r>'


def _instr(text: str) -> str:
    return f'<w:r><w:instrText xml:space="preserve">{text}</w:instrText></w:r>'


def _field(instr: str, result: str) -> str:
    return _fld("begin") + _instr(instr) + _fld("separate") + _r(result) + _fld("end")


def test_nested_fields_show_only_the_outermost_result() -> None:
    if_field = (
        _fld("begin")
        + _instr(" IF ")
        + _field(" MERGEFIELD Gender ", "F")
        + _instr(' = "M" "Dear Sir," "Dear Madam," ')
        + _fld("separate")
        + _r("Dear Madam,")
        + _fld("end")
    )
    formula = _fld("begin") + _instr(" = ") + _field(" NUMPAGES ", "5") + _instr(" - 1 ") + _fld("separate")
    formula += _r("4") + _fld("end")

    # a TOC's result spans paragraphs and holds fields of its own (HYPERLINK, PAGEREF), whose results are shown
    def entry(bookmark: str, title: str, page: str) -> str:
        link = _fld("begin") + _instr(f" HYPERLINK \\l {bookmark} ") + _fld("separate") + _r(title) + _r("\t")
        return link + _field(f" PAGEREF {bookmark} \\h ", page) + _fld("end")

    toc_begin = _fld("begin") + _instr(" TOC \\o 1-3 ") + _fld("separate")
    toc = f"<w:p>{toc_begin}{entry('_Toc1', 'Scope', '2')}</w:p><w:p>{entry('_Toc2', 'Terms', '5')}</w:p>"
    toc += f"<w:p>{_fld('end')}</w:p>"
    body = f"<w:p>{if_field}{_r(' Welcome.')}</w:p>" + f"<w:p>{_r('Appendix pages: ')}{formula}</w:p>" + toc
    a = run(make_docx(body + p("After the TOC.")))
    assert _texts(a) == ["Dear Madam, Welcome.", "Appendix pages: 4", "Scope\t2", "Terms\t5", "After the TOC."]
    assert a["coverage"]["complete"] is True


def test_a_field_whose_instructions_span_paragraphs_shows_only_its_result() -> None:
    body = (
        f"<w:p>{_r('Before ')}{_fld('begin')}{_instr(' IF ')}{_field(' MERGEFIELD A ', 'x')}</w:p>"
        + "<w:p>"
        + _instr(' = "x" "Yes" "No" ')
        + f"{_fld('separate')}{_r('Yes')}{_fld('end')}{_r(' after')}</w:p>"
        + p("Next.")
    )
    assert _texts(run(make_docx(body))) == ["Before", "Yes after", "Next."]


def test_stray_field_characters_hide_nothing_past_their_story() -> None:
    """A begin never ended (a broken writer) hides the rest of its story only: a note or header reads as itself."""
    notes = f'<w:footnotes {NS}><w:footnote w:id="1">{p("The note.")}</w:footnote></w:footnotes>'
    body = f"<w:p>{_fld('end')}{_fld('separate')}{_r('Shown')}<w:r><w:footnoteReference w:id='1'/></w:r></w:p>"
    body += f"<w:p>{_fld('begin')}{_instr(' PAGE ')}</w:p>"
    a = run(make_docx(body, parts={"footnotes.xml": notes}))
    assert _texts(a) == ["Shown¹", "1 The note."]


HIDDEN_STYLES = (
    f'<w:styles {NS}><w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>'
    '<w:style w:type="character" w:styleId="Secret"><w:name w:val="Secret"/><w:rPr><w:vanish/></w:rPr></w:style>'
    '<w:style w:type="character" w:styleId="Secret2"><w:basedOn w:val="Secret"/></w:style>'
    '<w:style w:type="paragraph" w:styleId="HiddenPara"><w:name w:val="Hidden Para"/><w:rPr><w:vanish/></w:rPr>'
    "</w:style></w:styles>"
)


def test_hidden_text_is_not_read() -> None:
    secret, secret2 = '<w:rStyle w:val="Secret"/>', '<w:rStyle w:val="Secret2"/>'
    hidden_para = '<w:pPr><w:pStyle w:val="HiddenPara"/></w:pPr>'
    body = (
        f"<w:p>{_r('Visible start ')}{_r('SECRET ', '<w:vanish/>')}{_r('visible end.')}</w:p>"
        f"<w:p>{_r('Price ')}{_r('(margin 40%) ', secret2)}{_r('attached.')}</w:p>"
        + "<w:p>"
        + _r("Kept ", '<w:vanish w:val="0"/>')
        + _r("shown", secret + '<w:vanish w:val="0"/>')
        + "</w:p>"
        + f"<w:p>{hidden_para}{_r('all hidden')}</w:p>"
        # the paragraph style hides, the character style toggles it back (vanish is a toggle property)
        + f"<w:p>{hidden_para}{_r('hidden ')}{_r('toggled', secret)}"
        + _r(" direct", '<w:vanish w:val="false"/>')
        + "</w:p>"
        + f"<w:p>{_r('only hidden', '<w:vanish/>')}</w:p>"
        + f"<w:p>{_r('sep', '<w:specVanish/>')}{_r('Heading text')}</w:p>"
    )
    a = run(make_docx(body, parts={"styles.xml": HIDDEN_STYLES}))
    texts = _texts(a)
    assert texts == ["Visible start visible end.", "Price attached.", "Kept shown", "toggled direct", "Heading text"]
    assert not any("SECRET" in t or "margin" in t or "hidden" in t for t in texts)
    assert a["coverage"]["total"] == a["coverage"]["extracted"] == 7  # hidden paragraphs count as read, as empty ones
    assert a["coverage"]["complete"] is True


def test_hidden_field_result_runs_are_not_read_but_step_the_field() -> None:
    hidden_field = (
        f'<w:r><w:rPr><w:vanish/></w:rPr><w:fldChar w:fldCharType="begin"/></w:r>{_instr(" PAGE ")}'
        f'<w:r><w:rPr><w:vanish/></w:rPr><w:fldChar w:fldCharType="separate"/></w:r>{_r("3", "<w:vanish/>")}'
        f'<w:r><w:rPr><w:vanish/></w:rPr><w:fldChar w:fldCharType="end"/></w:r>'
    )
    assert _texts(run(make_docx(f"<w:p>{_r('Page ')}{hidden_field}{_r('end')}</w:p>"))) == ["Page end"]


def test_sym_characters_are_what_their_font_draws() -> None:
    def sym(font: str, char: str) -> str:
        return f'<w:r><w:sym w:font="{font}" w:char="{char}"/></w:r>'

    body = (
        f"<w:p>{_r('Angle ')}{sym('Symbol', 'F061')}{_r(' must be ')}{sym('Symbol', 'F0B3')}{_r(' 30 ')}"
        f"{sym('Wingdings', 'F0FC')}{sym('Symbol', '0057')}{sym('Arial', 'F041')}{sym('Symbol', '2211')}</w:p>"
    )
    assert _texts(run(make_docx(body))) == ["Angle α must be ≥ 30 ✓ΩA∑"]


def test_a_wordart_watermark_is_a_block_of_its_header() -> None:
    header = (
        f'<w:hdr {NS} xmlns:o="urn:schemas-microsoft-com:office:office"><w:p><w:r><w:pict>'
        '<v:shapetype id="_x0000_t136" o:spt="136"><v:textpath on="t" fitshape="t"/></v:shapetype>'
        '<v:shape id="PowerPlusWaterMarkObject1" type="#_x0000_t136" fillcolor="silver">'
        '<v:textpath style="font-family:&quot;Calibri&quot;" string="CONFIDENTIAL"/></v:shape>'
        "</w:pict></w:r></w:p></w:hdr>"
    )
    body = p("Board minutes.") + '<w:sectPr><w:headerReference w:type="default" r:id="rId10"/></w:sectPr>'
    a = run(make_docx(body, parts={"header1.xml": header}))
    blocks = [(b["text"], b.get("attrs")) for b in a["blocks"]]
    assert blocks == [
        ("Board minutes.", None),
        ("CONFIDENTIAL", {"part": "header", "kind": "default", "wordart": True}),
    ]


def test_legacy_form_fields_and_macrobutton_show_what_word_shows() -> None:
    def ff(inner: str) -> str:
        return f'<w:ffData><w:name w:val="F"/><w:enabled/>{inner}</w:ffData>'

    dropdown = ff(
        '<w:ddList><w:result w:val="1"/><w:listEntry w:val="Pending"/><w:listEntry w:val="Approved"/></w:ddList>'
    )
    default_dropdown = ff('<w:ddList><w:listEntry w:val="Low"/><w:listEntry w:val="High"/></w:ddList>')
    checked = ff('<w:checkBox><w:sizeAuto/><w:default w:val="1"/></w:checkBox>')
    unchecked = ff('<w:checkBox><w:sizeAuto/><w:default w:val="1"/><w:checked w:val="0"/></w:checkBox>')
    text_input = ff('<w:textInput><w:default w:val="Name"/></w:textInput>')
    body = (
        f"<w:p>{_r('Status: ')}{_fld('begin', dropdown)}{_instr(' FORMDROPDOWN ')}{_fld('end')}</w:p>"
        f"<w:p>{_r('Risk: ')}{_fld('begin', default_dropdown)}{_instr(' FORMDROPDOWN ')}{_fld('separate')}"
        f"{_fld('end')}</w:p>"
        f"<w:p>{_fld('begin', checked)}{_instr(' FORMCHECKBOX ')}{_fld('end')}{_r(' I agree')}</w:p>"
        f"<w:p>{_fld('begin', unchecked)}{_instr(' FORMCHECKBOX ')}{_fld('separate')}{_fld('end')}{_r(' Opt out')}"
        "</w:p>"
        f"<w:p>{_r('Name: ')}{_fld('begin', text_input)}{_instr(' FORMTEXT ')}{_fld('separate')}{_r('Ada')}"
        f"{_fld('end')}</w:p>"
        f"<w:p>{_r('To: ')}{_fld('begin')}{_instr(' MACROBUTTON  DoFieldClick [Click here and type name] ')}"
        f"{_fld('end')}</w:p>"
    )
    assert _texts(run(make_docx(body))) == [
        "Status: Approved",
        "Risk: Low",
        "☒ I agree",
        "☐ Opt out",
        "Name: Ada",
        "To: [Click here and type name]",
    ]


def _cite(text: str, nid: int, kind: str = "footnote") -> str:
    return f'<w:p>{_r(text)}<w:r><w:{kind}Reference w:id="{nid}"/></w:r></w:p>'


def _notes(kind: str, ids: range) -> str:
    inner = "".join(f'<w:{kind} w:id="{i}">{p(f"Note {i}.")}</w:{kind}>' for i in ids)
    return f"<w:{kind}s {NS}>{inner}</w:{kind}s>"


def test_note_numbers_follow_num_start_and_restart_each_section() -> None:
    restart = '<w:footnotePr><w:numRestart w:val="eachSect"/><w:numStart w:val="3"/></w:footnotePr>'
    body = (
        _cite("One", 1)
        + _cite("Two", 2)
        + f"<w:p><w:pPr><w:sectPr>{restart}</w:sectPr></w:pPr></w:p>"
        + _cite("Three", 3)
        + _cite("End", 1, "endnote")
        + f"<w:sectPr>{restart}</w:sectPr>"
    )
    a = run(
        make_docx(
            body,
            parts={"footnotes.xml": _notes("footnote", range(1, 4)), "endnotes.xml": _notes("endnote", range(1, 2))},
        )
    )
    assert _texts(a)[:4] == ["One³", "Two⁴", "Three³", "Endⁱ"]
    assert _texts(a)[4:] == ["3 Note 1.", "4 Note 2.", "3 Note 3.", "i Note 1."]


def test_note_numbering_from_settings_continues_across_sections() -> None:
    settings = (
        f'<w:settings {NS}><w:footnotePr><w:numStart w:val="5"/></w:footnotePr>'
        '<w:endnotePr><w:numFmt w:val="decimal"/><w:numStart w:val="10"/></w:endnotePr></w:settings>'
    )
    body = (
        _cite("One", 1)
        + "<w:p><w:pPr><w:sectPr/></w:pPr></w:p>"
        + _cite("Two", 2)
        + _cite("End", 1, "endnote")
        + '<w:sectPr><w:footnotePr><w:numStart w:val="1"/></w:footnotePr></w:sectPr>'  # continuous: not restarted
    )
    parts = {
        "footnotes.xml": _notes("footnote", range(1, 3)),
        "endnotes.xml": _notes("endnote", range(1, 2)),
        "settings.xml": settings,
    }
    assert _texts(run(make_docx(body, parts=parts)))[:3] == ["One⁵", "Two⁶", "End¹⁰"]


def test_list_instances_of_one_list_share_its_counters() -> None:
    lvl = '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl>'
    numbering = (
        f'<w:numbering {NS}><w:abstractNum w:abstractNumId="0">{lvl}</w:abstractNum>'
        '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>'
        '<w:num w:numId="2"><w:abstractNumId w:val="0"/></w:num>'
        '<w:num w:numId="3"><w:abstractNumId w:val="0"/>'
        '<w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num></w:numbering>'
    )

    def item(text: str, num: int) -> str:
        return p(text, f'<w:numPr><w:ilvl w:val="0"/><w:numId w:val="{num}"/></w:numPr>')

    body = item("a", 1) + item("b", 1) + p("interruption") + item("c", 2) + item("d", 3) + item("e", 3) + item("f", 1)
    texts = _texts(run(make_docx(body, parts={"numbering.xml": numbering})))
    assert texts == ["1. a", "2. b", "interruption", "3. c", "1. d", "2. e", "3. f"]
