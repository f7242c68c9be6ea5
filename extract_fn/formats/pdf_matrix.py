"""PDF transformation matrices as 6-tuples ``(a, b, c, d, e, f)``, in PDF's row-vector convention (ISO 32000-1 8.3.4):
a point ``(x, y)`` maps to ``(a x + c y + e, b x + d y + f)``."""

from __future__ import annotations


def mul(m1: tuple[float, ...], m2: tuple[float, ...]) -> tuple[float, ...]:
    """``m1`` then ``m2``: the matrix of a form's content (``m1``) drawn where ``m2`` maps."""
    a1, b1, c1, d1, e1, f1 = m1
    a2, b2, c2, d2, e2, f2 = m2
    return (
        a1 * a2 + b1 * c2,
        a1 * b2 + b1 * d2,
        c1 * a2 + d1 * c2,
        c1 * b2 + d1 * d2,
        e1 * a2 + f1 * c2 + e2,
        e1 * b2 + f1 * d2 + f2,
    )


def apply(m: tuple[float, ...], x: float, y: float) -> tuple[float, float]:
    return m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]
