"""The shared chart reader on small chart parts: date categories in both date systems, and what is not a chart."""

from __future__ import annotations

import pytest
from lxml import etree

from extract_fn.formats.ooxml_chart import ChartUnreadable, read_chart

C = 'xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart"'


def _part(date1904: bool) -> bytes:
    first = 0 if date1904 else 61  # 1900 system: serial 60 is Excel's fictitious 1900-02-29, 61 is 1900-03-01
    cats = f"<c:pt idx='0'><c:v>{first}</c:v></c:pt><c:pt idx='1'><c:v>366</c:v></c:pt>"
    vals = "<c:pt idx='0'><c:v>5</c:v></c:pt><c:pt idx='1'><c:v>7</c:v></c:pt>"
    return (
        f"<c:chartSpace {C}><c:date1904 val='{int(date1904)}'/><c:chart><c:plotArea><c:lineChart><c:ser>"
        f"<c:cat><c:numRef><c:numCache><c:formatCode>yyyy-mm-dd</c:formatCode>{cats}</c:numCache></c:numRef></c:cat>"
        f"<c:val><c:numRef><c:numCache><c:formatCode>General</c:formatCode>{vals}</c:numCache></c:numRef></c:val>"
        "</c:ser></c:lineChart><c:dateAx><c:delete val='0'/></c:dateAx></c:plotArea></c:chart></c:chartSpace>"
    ).encode()


@pytest.mark.parametrize(("date1904", "first", "second"), [(False, "1900-03-01", "1900-12-31"),
                                                            (True, "1904-01-01", "1905-01-01")])  # fmt: skip
def test_date_categories_in_both_date_systems(date1904: bool, first: str, second: str) -> None:
    chart = read_chart(etree.fromstring(_part(date1904)))
    assert chart.table()["rows"] == [[first, "5"], [second, "7"]]  # values stay as cached ("General": untouched)
    assert chart.text() == f"{first} | {second}"
    assert chart.attrs()["chart"] == "line"


def test_not_a_chart_part() -> None:
    with pytest.raises(ChartUnreadable, match="not a DrawingML chart"):
        read_chart(etree.fromstring(b"<root/>"))
    with pytest.raises(ChartUnreadable, match="no plot area"):
        read_chart(etree.fromstring(f"<c:chartSpace {C}><c:chart/></c:chartSpace>".encode()))
