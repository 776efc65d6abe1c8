"""The activation chart as inline SVG, rendered on the server: no script, no network, no plotting
library in the base install. The legend sits below the plot so it never covers the curve."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from html import escape

from hindsight_core.ui.curve import ActivationCurve

WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 14, 78  # margins; the legend lives in the bottom one


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).date().isoformat()


def _ticks(lo: float, hi: float, count: int) -> list[float]:
    if hi <= lo:
        return [lo]
    step = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(step))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= step)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def activation_svg(curve: ActivationCurve) -> str:
    """The memory's strength ``ln A(t)`` (log activation) with past recalls marked, the cold threshold,
    now, and the projected cold and archive dates."""
    x0 = curve.start
    x1 = curve.future[2] if curve.future else curve.now
    if x1 <= x0:
        x1 = x0 + 86_400.0
    values = [v for seg in curve.past for v in (seg[1], seg[3])]
    if curve.future:
        values += [curve.future[1], curve.future[3]]
    values += [r.before for r in curve.reinforcements] + [curve.cold_log]
    y_lo, y_hi = min(values) - 0.5, max(values) + 0.5
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + (t - x0) / (x1 - x0) * plot_w

    def y(v: float) -> float:
        return TOP + (y_hi - v) / (y_hi - y_lo) * plot_h

    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        'role="img" aria-label="memory strength over time" class="chart" font-family="sans-serif" font-size="11">',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fbfbfd" stroke="#ccc"/>',
    ]
    for v in _ticks(y_lo, y_hi, 5):
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#555">{v:g}</text>')
    for i in range(6):
        t = x0 + (x1 - x0) * i / 5
        anchor = "start" if i == 0 else "end" if i == 5 else "middle"
        out.append(f'<text x="{x(t):.1f}" y="{TOP + plot_h + 15}" text-anchor="{anchor}" fill="#555">{_day(t)}</text>')
    out.append(f'<text x="14" y="{TOP + plot_h / 2:.0f}" transform="rotate(-90 14 {TOP + plot_h / 2:.0f})" '
               'text-anchor="middle" fill="#333">strength (log activation)</text>')
    # the cold threshold
    yc = y(curve.cold_log)
    out.append(f'<line class="cold-threshold" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{yc:.1f}" y2="{yc:.1f}" '
               'stroke="#1f6fd1" stroke-dasharray="6 4"/>')
    # vertical markers: now, projected cold, projected archive
    marks = [(curve.now, "#333", "now")]
    if curve.cold_at is not None:
        marks.append((curve.cold_at, "#1f6fd1", "goes cold"))
    if curve.archive_at is not None:
        marks.append((curve.archive_at, "#b02a2a", "archived"))
    for t, colour, label in marks:
        xv = x(t)
        out.append(f'<line x1="{xv:.1f}" x2="{xv:.1f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="{colour}" '
                   f'stroke-dasharray="2 3"><title>{label} {_day(t)}</title></line>')
    # the curve: past solid (jumps at reinforcements), projection dashed
    path = []
    for t0, v0, t1, v1 in curve.past:
        path.append(f"M{x(t0):.1f},{y(v0):.1f} L{x(t1):.1f},{y(v1):.1f}")
    for r in curve.reinforcements:
        path.append(f"M{x(r.at):.1f},{y(r.before):.1f} L{x(r.at):.1f},{y(r.after):.1f}")
    out.append(f'<path class="past" d="{" ".join(path)}" fill="none" stroke="#2b8a3e" stroke-width="2"/>')
    if curve.future:
        t0, v0, t1, v1 = curve.future
        out.append(f'<path class="projection" d="M{x(t0):.1f},{y(v0):.1f} L{x(t1):.1f},{y(v1):.1f}" fill="none" '
                   'stroke="#2b8a3e" stroke-width="2" stroke-dasharray="5 4"/>')
    for r in curve.reinforcements:
        out.append(f'<circle class="recall" cx="{x(r.at):.1f}" cy="{y(r.after):.1f}" r="4" fill="#e8590c">'
                   f'<title>recalled {escape(_day(r.at))} (relevance {r.relevance:.2f})</title></circle>')
    # legend, below the axis labels
    ly = TOP + plot_h + 34
    items = [
        ('<line x1="0" x2="22" y1="0" y2="0" stroke="#2b8a3e" stroke-width="2"/>', "strength (past)"),
        ('<line x1="0" x2="22" y1="0" y2="0" stroke="#2b8a3e" stroke-width="2" stroke-dasharray="5 4"/>',
         "projection"),
        ('<circle cx="11" cy="0" r="4" fill="#e8590c"/>', "recall (reinforcement)"),
        ('<line x1="0" x2="22" y1="0" y2="0" stroke="#1f6fd1" stroke-dasharray="6 4"/>',
         f"cold threshold (strength {curve.cold_log:g})"),
    ]
    dates = [("now", curve.now, "#333")]
    if curve.cold_at is not None:
        dates.append(("goes cold", curve.cold_at, "#1f6fd1"))
    if curve.archive_at is not None:
        dates.append(("archived", curve.archive_at, "#b02a2a"))
    lx: float = LEFT
    for glyph, label in items:
        out.append(f'<g transform="translate({lx},{ly})">{glyph}<text x="28" y="4" fill="#333">{label}</text></g>')
        lx += 40 + 6.2 * len(label)
    lx = LEFT
    for label, t, colour in dates:
        text = f"{label} {_day(t)}"
        out.append(f'<g transform="translate({lx},{ly + 20})"><line x1="0" x2="22" y1="0" y2="0" stroke="{colour}" '
                   f'stroke-dasharray="2 3"/><text x="28" y="4" fill="#333">{escape(text)}</text></g>')
        lx += 40 + 6.2 * len(text)
    out.append("</svg>")
    return "\n".join(out)
