"""The leaderboard's figures, as inline SVG (the page stays one self-contained file, readable offline and
without scripts): the trade-off front of a dataset × scenario and the rank plot of a metric.

Every figure carries its title (dataset, scenario, metric) as visible text and as the SVG ``<title>``, and
``data-*`` attributes naming what it shows, so a reader and a test see the same thing.
"""

from __future__ import annotations

import html
import math

__all__ = ["front_svg", "rank_svg"]

_W, _H = 460, 320
_L, _R, _T, _B = 58, 16, 36, 44  # margins: left, right, top, bottom


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _title_width(title: str) -> int:
    """The width a figure needs for its title (13 px bold) to fit, in a wide sans-serif such as DejaVu Sans
    Bold (up to ~8 px a character)."""
    return int(8.4 * len(title)) + 20


def _finite(*vals) -> list[float]:
    return [float(v) for v in vals if v is not None and isinstance(v, (int, float)) and math.isfinite(v)]


def front_svg(points: list[dict], *, x_metric: str, y_metric: str, x_dir: str, y_dir: str, title: str,
              dataset: str, scenario: str) -> str:
    """A scatter of the candidates of one dataset × scenario: ``x_metric`` (e.g. the fairness gap) against
    ``y_metric`` (e.g. accuracy), each point its mean over splits with its 95 % interval on both axes as error
    bars; the candidates on the front filled and joined, those off it hollow (grey when clearly dominated).
    ``points``: ``{candidate, x, x_low, x_high, y, y_low, y_high, on_front, clearly_dominated}``."""
    e = html.escape
    w = max(_W, _title_width(title))  # a long title widens the figure rather than being cut off at its edges
    xs = _finite(*[v for p in points for v in (p["x"], p["x_low"], p["x_high"])])
    ys = _finite(*[v for p in points for v in (p["y"], p["y_low"], p["y_high"])])
    if not xs or not ys:
        return ""
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    px, py = (x1 - x0) * 0.08 or 0.01, (y1 - y0) * 0.08 or 0.01
    x0, x1, y0, y1 = x0 - px, x1 + px, y0 - py, y1 + py

    def sx(v):
        return _L + (v - x0) / (x1 - x0) * (w - _L - _R)

    def sy(v):
        return _H - _B - (v - y0) / (y1 - y0) * (_H - _T - _B)

    out = [f"<svg class='front' width='{w}' height='{_H}' "
           f"viewBox='0 0 {w} {_H}' data-dataset='{e(dataset)}' data-scenario='{e(scenario)}' "
           f"data-x='{e(x_metric)}' data-y='{e(y_metric)}' role='img'><title>{e(title)}</title>",
           f"<text x='{w / 2}' y='16' text-anchor='middle' font-size='13' font-weight='bold'>{e(title)}</text>",
           f"<rect x='{_L}' y='{_T}' width='{w - _L - _R}' height='{_H - _T - _B}' fill='none' stroke='#999'/>"]
    for v in _ticks(x0, x1):
        out.append(f"<text x='{sx(v):.1f}' y='{_H - _B + 14}' text-anchor='middle' font-size='10'>{v:.3g}</text>")
    for v in _ticks(y0, y1):
        out.append(f"<text x='{_L - 4}' y='{sy(v) + 3:.1f}' text-anchor='end' font-size='10'>{v:.3g}</text>")
    better = {"max": "higher is better", "min": "lower is better"}
    out.append(f"<text x='{(_L + w - _R) / 2}' y='{_H - 8}' text-anchor='middle' font-size='11'>"
               f"{e(x_metric)} ({better[x_dir]})</text>")
    out.append(f"<text transform='translate(12 {(_T + _H - _B) / 2}) rotate(-90)' text-anchor='middle' "
               f"font-size='11'>{e(y_metric)} ({better[y_dir]})</text>")
    front = sorted((p for p in points if p["on_front"]), key=lambda p: p["x"])
    if len(front) > 1:
        path = " ".join(f"{sx(p['x']):.1f},{sy(p['y']):.1f}" for p in front)
        out.append(f"<polyline points='{path}' fill='none' stroke='#2a6ebb' stroke-width='1.5'/>")
    for p in points:
        cx, cy = sx(p["x"]), sy(p["y"])
        color = "#2a6ebb" if p["on_front"] else ("#aaaaaa" if p["clearly_dominated"] else "#555555")
        for lo, hi, horiz in ((p["x_low"], p["x_high"], True), (p["y_low"], p["y_high"], False)):
            if _finite(lo, hi) and len(_finite(lo, hi)) == 2:
                if horiz:
                    out.append(f"<line x1='{sx(lo):.1f}' x2='{sx(hi):.1f}' y1='{cy:.1f}' y2='{cy:.1f}' "
                               f"stroke='{color}' stroke-width='1'/>")
                else:
                    out.append(f"<line x1='{cx:.1f}' x2='{cx:.1f}' y1='{sy(lo):.1f}' y2='{sy(hi):.1f}' "
                               f"stroke='{color}' stroke-width='1'/>")
        fill = color if p["on_front"] else "white"
        state = "front" if p["on_front"] else ("clearly-dominated" if p["clearly_dominated"] else "dominated")
        out.append(f"<circle cx='{cx:.1f}' cy='{cy:.1f}' r='4' fill='{fill}' stroke='{color}' stroke-width='1.5' "
                   f"data-candidate='{e(p['candidate'])}' data-state='{state}'/>")
        right = cx > 0.7 * w  # a label near the right edge is drawn to the point's left
        anchor = " text-anchor='end'" if right else ""
        out.append(f"<text x='{cx - 6 if right else cx + 6:.1f}' y='{cy - 5:.1f}' font-size='10' fill='{color}'"
                   f"{anchor}>{e(p['candidate'])}</text>")
    out.append("</svg>")
    return "".join(out)


def rank_svg(ranks: list[dict], *, metric: str, title: str) -> str:
    """Each candidate's mean rank over every dataset × scenario (a dot, best at the top) with its 95 % bootstrap
    interval (a bar). ``ranks``: ``{candidate, rank, rank_low, rank_high}``, drawn in the order given."""
    e = html.escape
    if not ranks:
        return ""
    k = max(max(_finite(r["rank_high"], r["rank"]) or [1.0]) for r in ranks)
    k = max(k, 2.0)
    row_h = 22
    left = 20 + 7 * max(len(r["candidate"]) for r in ranks)
    h = _T + row_h * len(ranks) + 34
    w = max(_W, left + 240, _title_width(title))

    def sx(v):
        return left + (v - 1) / (k - 1) * (w - left - _R)

    out = [f"<svg class='ranks' width='{w}' height='{h}' viewBox='0 0 {w} {h}' "
           f"data-metric='{e(metric)}' role='img'><title>{e(title)}</title>",
           f"<text x='{w / 2}' y='16' text-anchor='middle' font-size='13' font-weight='bold'>{e(title)}</text>"]
    for v in range(1, int(math.floor(k)) + 1):
        out.append(f"<line x1='{sx(v):.1f}' x2='{sx(v):.1f}' y1='{_T - 4}' y2='{h - 30}' stroke='#ddd'/>"
                   f"<text x='{sx(v):.1f}' y='{h - 18}' text-anchor='middle' font-size='10'>{v}</text>")
    out.append(f"<text x='{(left + w) / 2}' y='{h - 4}' text-anchor='middle' font-size='11'>mean rank (1 = best)"
               "</text>")
    for i, r in enumerate(ranks):
        y = _T + row_h * i + row_h / 2
        out.append(f"<text x='{left - 8}' y='{y + 4:.1f}' text-anchor='end' font-size='11'>{e(r['candidate'])}</text>")
        if len(_finite(r["rank_low"], r["rank_high"])) == 2:
            out.append(f"<line x1='{sx(r['rank_low']):.1f}' x2='{sx(r['rank_high']):.1f}' y1='{y:.1f}' y2='{y:.1f}' "
                       "stroke='#2a6ebb' stroke-width='3'/>")
        if _finite(r["rank"]):
            out.append(f"<circle cx='{sx(r['rank']):.1f}' cy='{y:.1f}' r='4' fill='#1b3f6b' "
                       f"data-candidate='{e(r['candidate'])}' data-rank='{r['rank']:.4g}'/>")
    out.append("</svg>")
    return "".join(out)
