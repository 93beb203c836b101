"""Human-readable numbers and plain-text tables for the command line (no colour)."""

from __future__ import annotations

import math
from collections.abc import Sequence

_SECOND_PREFIXES = ((1.0, ""), (1e-3, "m"), (1e-6, "u"), (1e-9, "n"), (1e-12, "p"))
_JOULE_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), *_SECOND_PREFIXES)


def unit_scale(v: float, unit: str) -> tuple[float, str]:
    """The scale and prefixed unit :func:`seconds` (``unit`` "s") or :func:`joules` ("J")
    print ``v`` in: ``(1e-3, "ms")`` for 0.002634 s. Figures scale their axes by the largest
    value with it, so they read as the command line does."""
    prefixes = _SECOND_PREFIXES if unit == "s" else _JOULE_PREFIXES
    a = abs(v)
    for scale, prefix in prefixes:
        if a >= scale:
            return scale, prefix + unit
    scale, prefix = prefixes[-1]
    return scale, prefix + unit


def _scaled(v: float | None, unit: str) -> str:
    """``v`` with four significant digits under the largest prefix it reaches."""
    if v is None or not math.isfinite(v):
        return "-" if v is None else str(v)
    if v == 0:
        return f"0 {unit}"
    scale, prefixed = unit_scale(v, unit)
    return f"{v / scale:.4g} {prefixed}"


def seconds(v: float | None) -> str:
    """``0.00123`` -> ``1.23 ms``; ``90.5`` -> ``90.5 s`` (never ks)."""
    return _scaled(v, "s")


def joules(v: float | None) -> str:
    """``151900.0`` -> ``151.9 kJ``; ``21.09`` -> ``21.09 J``."""
    return _scaled(v, "J")


def count(v: int | float | None) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.2f}"
    return f"{int(v):,}"


def nbytes(v: int | float | None) -> str:
    """``1536`` -> ``1.5 KiB``."""
    if v is None:
        return "-"
    x = float(v)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(x) < 1024.0 or unit == "TiB":
            return f"{int(x)} B" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024.0
    return f"{x:.1f} TiB"  # pragma: no cover


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    """A plain aligned table; ``right[i]`` right-aligns column ``i``."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            out.append(cell.rjust(widths[i]) if right[i] else cell.ljust(widths[i]))
        return "  ".join(out).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), sep, *(line(r) for r in rows)]) + "\n"
