"""Human-readable numbers and plain-text tables for the command line (no colour)."""

from __future__ import annotations

import math
from collections.abc import Sequence

_PREFIXES = ((1.0, ""), (1e-3, "m"), (1e-6, "u"), (1e-9, "n"), (1e-12, "p"))


def seconds(v: float | None) -> str:
    """``0.00123`` -> ``1.230 ms``."""
    if v is None or not math.isfinite(v):
        return "-" if v is None else str(v)
    if v == 0:
        return "0 s"
    a = abs(v)
    if a >= 1.0:
        return f"{v:.4g} s"
    for scale, prefix in _PREFIXES:
        if a >= scale:
            return f"{v / scale:.4g} {prefix}s"
    return f"{v / 1e-12:.4g} ps"


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
