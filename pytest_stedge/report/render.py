"""HTML rendering: the Jinja2 environment, its filters, and :func:`render`.

Pages are rendered on the server into self-contained files (CSS inlined, charts as
inline SVG, no network, no external fonts); a Content-Security-Policy in each page
forbids any fetch and allows only the one small table-sorting script, by its hash.
Every name that comes from models and case files is untrusted: autoescape is on, every
printed string shows its bidi controls and invisible characters as escapes
(:func:`pytest_stedge.report.visible.visible`), and StrictUndefined turns a template typo into an
error instead of an empty cell.

The pages themselves are written by :mod:`pytest_stedge.report` (its entry points).
"""

from __future__ import annotations

import base64
import hashlib
import math
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

if TYPE_CHECKING:
    from jinja2 import Environment



@lru_cache(maxsize=1)
def environment() -> Environment:
    """The one Jinja2 environment of pytest-stedge (filters registered here)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    from pytest_stedge.report.visible import finalize

    env = Environment(
        loader=PackageLoader("pytest_stedge.report"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # templates ship with the package: no stat() per page rendered
        finalize=finalize,  # every printed string shows its bidi and invisible characters
    )
    env.filters.update(
        num=fmt_num,
        metric=fmt_metric,
        bytes_h=fmt_bytes,
        delta=fmt_delta,
        pct=fmt_pct,
        kcls=kind_class,
        krank=kind_rank,
        secs=fmt_seconds,
    )
    from .charts import PALETTE

    script = env.get_template("_sort.js.j2").render()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    from pytest_stedge.parsers.epoch_kinds import HYBRID_TEXT

    from .charts import HYBRID_NOTE

    env.globals.update(palette=PALETTE, sort_script=Markup(script), script_hash=f"sha256-{digest}",
                       hybrid_note=HYBRID_NOTE, hybrid_text=HYBRID_TEXT)
    # The stylesheet is the same on every page: render it once.
    env.globals["stylesheet"] = Markup(env.get_template("_style.html.j2").render())
    return env


def render(template: str, path: Path, **context: Any) -> Path:
    """Render ``template`` with ``context`` into ``path`` (UTF-8), creating folders."""
    env = environment()
    html = env.get_template(template).render(
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), **context
    )
    path = Path(path)
    if not path.parent.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path


# -- filters ---------------------------------------------------------------------------


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_num(value: float | None) -> str:
    """``1,234`` for whole numbers, 6 significant digits otherwise, ``—`` when unknown."""
    if value is None:
        return "—"
    number = float(value)  # ints and numpy numbers too
    if math.isnan(number):
        return "—"
    if number.is_integer() and abs(number) < 1e15:
        return f"{int(number):,}"
    return f"{number:.6g}"  # inf too: "inf", "-inf"


def fmt_metric(value: float | None, unit: str = "") -> str:
    """A value with its unit (``245,760 B``, ``12.5 dB``); ``—`` when unknown."""
    text = fmt_num(value)
    return f"{text} {unit}" if unit and not _missing(value) else text


def fmt_bytes(value: float | None) -> str:
    """Bytes for people: ``240 KiB``, ``1.25 MiB``."""
    if _missing(value):
        return "—"
    assert value is not None
    for factor, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {unit}"
    return f"{value:g} B"


def fmt_delta(value: float | None, unit: str = "") -> str:
    """A signed change with its unit: ``+8,192 B``, ``-2 epochs``."""
    if _missing(value):
        return "—"
    assert value is not None
    sign = "+" if value >= 0 else "-"
    return sign + fmt_metric(abs(value), unit)


def fmt_pct(value: float | None) -> str:
    """A signed percentage, ``+3.1%``."""
    if _missing(value):
        return "—"
    return f"{value:+.1f}%"


def fmt_seconds(value: float | None) -> str:
    """Seconds with 2 decimals, ``—`` when unknown."""
    return "—" if _missing(value) else f"{value:.2f} s"


def kind_class(kind: str) -> str:
    """CSS class of a change kind or status: ``k-newly-failing``."""
    return "k-" + "-".join(str(kind).split())


def kind_rank(kind: str) -> int:
    """Severity of a change kind (0 = regressed), so kind columns sort by severity."""
    return _kind_ranks().get(kind, len(_kind_ranks()))


@lru_cache(maxsize=1)
def _kind_ranks() -> dict[str, int]:
    """The kinds' ranks, built once (kind_rank runs on every row of a diff page)."""
    from ..verdict.compare import KIND_ORDER

    return {k.value: i for i, k in enumerate(KIND_ORDER)}
