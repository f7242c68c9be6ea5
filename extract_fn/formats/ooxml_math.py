"""OMML (Office Math) as linear text, close to Word's "linear format" (UnicodeMath).

``x^2``, ``x_i``, ``(a)/(b)`` for a fraction, ``√(x)`` (``∛``/``∜`` or ``√(n&x)`` with a degree), ``∑_(k=1)^n a``
for an n-ary operator (the default operator is ``∫``), a delimiter with its characters (``(``/``)`` and ``|`` between
items by default), a function name and its argument with a space between, an equation array's rows on lines of
their own and a matrix's rows joined by ``@`` with cells joined by ``&``. A group of more than one character is
bracketed, so ``e^(-x^2)`` reads as it renders, and a script is ended by a space. Recursive, to ``MAX_DEPTH``
levels of nesting.
"""

from __future__ import annotations

from typing import Any

from extract_fn.formats.ooxml_text import local

MAX_DEPTH = 100  # nesting levels read (three Python frames each); deeper math is cut


def _prop(el: Any, prop: str, name: str) -> str | None:
    """``m:<prop>/m:<name>/@m:val`` of a math element (e.g. ``dPr``/``begChr``)."""
    pr = next((c for c in el if local(c.tag) == prop), None)
    if pr is None:
        return None
    item = next((c for c in pr if local(c.tag) == name), None)
    if item is None:
        return None
    for k, v in item.attrib.items():
        if local(k) == "val":
            return str(v)
    return ""


def _parts(el: Any) -> dict[str, Any]:
    return {local(c.tag): c for c in el}


def _group(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 1 else f"({text})"


def linear_text(el: Any) -> str:
    """The linear text of an ``m:oMath``/``m:oMathPara``: a script ends at a space (``a_n cos x``), and runs of
    spaces are one."""
    return "\n".join(" ".join(line.split()) for line in linear(el).split("\n"))


def linear(el: Any, depth: int = 0) -> str:
    """The linear text of any math element, spaces as they come."""
    if depth > MAX_DEPTH:
        return ""
    name = local(el.tag)
    handler = _HANDLERS.get(name)
    if handler is not None:
        return handler(el, depth + 1)
    if name == "t":
        return el.text or ""
    if name.endswith("Pr") or name in ("ctrlPr", "del"):
        return ""
    return "".join(linear(c, depth + 1) for c in el)


def _arg(parts: dict[str, Any], key: str, depth: int) -> str:
    el = parts.get(key)
    return linear(el, depth) if el is not None else ""


def _frac(el: Any, depth: int) -> str:
    p = _parts(el)
    num, den = _arg(p, "num", depth), _arg(p, "den", depth)
    return f"{_group(num)}/{_group(den)}"


def _ssup(el: Any, depth: int) -> str:
    p = _parts(el)
    return f"{_arg(p, 'e', depth)}^{_group(_arg(p, 'sup', depth))} "


def _ssub(el: Any, depth: int) -> str:
    p = _parts(el)
    return f"{_arg(p, 'e', depth)}_{_group(_arg(p, 'sub', depth))} "


def _ssubsup(el: Any, depth: int) -> str:
    p = _parts(el)
    return f"{_arg(p, 'e', depth)}_{_group(_arg(p, 'sub', depth))}^{_group(_arg(p, 'sup', depth))} "


def _spre(el: Any, depth: int) -> str:
    p = _parts(el)
    return f"_{_group(_arg(p, 'sub', depth))}^{_group(_arg(p, 'sup', depth))}{_arg(p, 'e', depth)}"


def _rad(el: Any, depth: int) -> str:
    p = _parts(el)
    deg = _arg(p, "deg", depth)
    body = _arg(p, "e", depth)
    if not deg:
        return f"√{_group(body)}"
    return {"3": f"∛{_group(body)}", "4": f"∜{_group(body)}"}.get(deg, f"√({deg}&{body})")


def _nary(el: Any, depth: int) -> str:
    p = _parts(el)
    op = _prop(el, "naryPr", "chr") or "∫"
    out = op
    sub, sup = _arg(p, "sub", depth), _arg(p, "sup", depth)
    if sub:
        out += f"_{_group(sub)}"
    if sup:
        out += f"^{_group(sup)}"
    return f"{out} {_arg(p, 'e', depth)}"


def _delim(el: Any, depth: int) -> str:
    beg = _prop(el, "dPr", "begChr")
    end = _prop(el, "dPr", "endChr")
    sep = _prop(el, "dPr", "sepChr")
    items = [linear(c, depth) for c in el if local(c.tag) == "e"]
    return f"{'(' if beg is None else beg}{('|' if sep is None else sep).join(items)}{')' if end is None else end}"


def _func(el: Any, depth: int) -> str:
    p = _parts(el)
    return f"{_arg(p, 'fName', depth)} {_arg(p, 'e', depth)}"


def _acc(el: Any, depth: int) -> str:
    p = _parts(el)
    return _arg(p, "e", depth) + (_prop(el, "accPr", "chr") or "\u0302")


def _lim(el: Any, depth: int) -> str:
    p = _parts(el)
    mark = "_" if local(el.tag) == "limLow" else "^"
    return f"{_arg(p, 'e', depth)}{mark}{_group(_arg(p, 'lim', depth))}"


def _eqarr(el: Any, depth: int) -> str:
    return "\n".join(linear(c, depth) for c in el if local(c.tag) == "e")


def _matrix(el: Any, depth: int) -> str:
    rows = ["&".join(linear(c, depth) for c in mr if local(c.tag) == "e") for mr in el if local(mr.tag) == "mr"]
    return f"■({'@'.join(rows)})"


def _para(el: Any, depth: int) -> str:
    return "\n".join(linear(c, depth) for c in el if local(c.tag) == "oMath")


_HANDLERS = {
    "f": _frac,
    "sSup": _ssup,
    "sSub": _ssub,
    "sSubSup": _ssubsup,
    "sPre": _spre,
    "rad": _rad,
    "nary": _nary,
    "d": _delim,
    "func": _func,
    "acc": _acc,
    "limLow": _lim,
    "limUpp": _lim,
    "eqArr": _eqarr,
    "m": _matrix,
    "oMathPara": _para,
}
