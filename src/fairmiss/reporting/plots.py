"""Figures as PNG files, written atomically (temporary file in the target directory, then
:func:`os.replace`), so a reader never sees a half-written image.

Figures are built on :class:`matplotlib.figure.Figure` with the Agg canvas directly, never
through ``pyplot``: no global figure state, safe in worker threads, no display needed.

* :func:`plot_tradeoff`: fairness gap vs accuracy, mean ± SE per method with each method's
  Pareto front (spec 000 Figure 2); dropped points drawn faded.
* :func:`plot_ecdf_by_group`: ECDF of predictions per group, one panel per model (002 Figure 2).
* :func:`plot_prediction_distributions`: histogram of predictions per group with group means,
  one panel per model, e.g. before / after a fairness adjustment (003 Figure 3).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fairmiss.reporting.pareto import pareto_filter

logger = logging.getLogger(__name__)

__all__ = ["save_figure", "plot_tradeoff", "plot_ecdf_by_group", "plot_prediction_distributions"]


def save_figure(fig: Figure, path, *, dpi: int = 120) -> Path:
    """Write ``fig`` to ``path`` as PNG atomically and return the path.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        Figure to save.
    path : str or Path
        Target file; its directory is created if needed.
    dpi : int, default=120
        Resolution.

    Returns
    -------
    Path
        ``path``.
    """
    from fairmiss.io import atomic_path

    path = Path(path)
    FigureCanvasAgg(fig)
    with atomic_path(path, suffix=".tmp") as tmp:  # refuses a device, FIFO or directory at ``path``
        fig.savefig(tmp, format="png", dpi=dpi)
    logger.info("wrote figure %s", path)
    return path


def _panels(values) -> dict:
    if isinstance(values, Mapping):
        return {str(k): np.asarray(v, dtype=float).ravel() for k, v in values.items()}
    return {"": np.asarray(values, dtype=float).ravel()}


def _groups(sensitive_features, n: int) -> tuple[np.ndarray, list]:
    s = np.asarray(sensitive_features).ravel()
    if len(s) != n:
        raise ValueError(f"sensitive_features has {len(s)} entries but predictions have {n}.")
    return s, sorted(pd.unique(s), key=str)


def label_offsets(ax, points: list[tuple[float, float]], *, step: float = 7.0) -> list[float]:
    """Vertical offsets (points) for labels beside ``points`` so that no two overlap: in order, each label goes
    up one ``step`` at a time until no label placed before sits within ~12 % of the axes' width and one line of
    its position (two methods with the same accuracy and gap get two lines instead of one smudge)."""
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    height_pt = ax.get_window_extent().height * 72 / ax.figure.dpi or 300.0
    placed: list[tuple[float, float]] = []
    out = []
    for x, y in points:
        fx = (x - x0) / ((x1 - x0) or 1.0)
        fy = (y - y0) / ((y1 - y0) or 1.0) * height_pt  # in points
        dy = 3.0
        while any(abs(fx - px) < 0.12 and abs(fy + dy - py) < step for px, py in placed):
            dy += step
        placed.append((fx, fy + dy))
        out.append(dy)
    return out


def error_bars(df: pd.DataFrame, stem: str):
    """Error bars of ``<stem>_mean`` for :meth:`~matplotlib.axes.Axes.errorbar`: ± ``<stem>_se`` (the standard
    error over splits); where there is none (a method run on one split) and the frame carries the cell's
    bootstrap interval (``<stem>_ci_low`` / ``<stem>_ci_high``), that interval (asymmetric, shape ``(2, n)``);
    else no bar. Without interval columns: the SE column as it is (``None`` if absent)."""
    se = df.get(f"{stem}_se")
    if f"{stem}_ci_low" not in df or f"{stem}_ci_high" not in df:
        return se
    mean = df[f"{stem}_mean"].to_numpy(float)
    se = np.full(len(df), np.nan) if se is None else se.to_numpy(float)
    below = np.where(np.isfinite(se), se, mean - df[f"{stem}_ci_low"].to_numpy(float))
    above = np.where(np.isfinite(se), se, df[f"{stem}_ci_high"].to_numpy(float) - mean)
    # a percentile interval need not contain the point (e.g. a ratio on few rows): that side's bar is then 0
    return np.maximum(np.nan_to_num(np.vstack([below, above]), nan=0.0), 0.0)


def plot_tradeoff(agg: pd.DataFrame, path, *, gap: str = "gap", accuracy: str = "accuracy",
                  method: str = "method", mode: Literal["nondominated", "envelope"] = "nondominated",
                  gap_label: str = "fairness gap", title: str | None = None,
                  show_dropped: bool = True, point_label: str | None = None) -> Path:
    """Scatter of gap vs accuracy with SE error bars (a one-split method: its bootstrap interval, when ``agg``
    has ``<gap>_ci_low`` … columns; :func:`error_bars`) and the Pareto front of each method.

    Parameters
    ----------
    agg : DataFrame
        Output of :func:`fairmiss.reporting.pareto.aggregate_splits`: columns ``method``,
        ``<gap>_mean``, ``<gap>_se``, ``<accuracy>_mean``, ``<accuracy>_se`` (SE columns
        optional).
    path : str or Path
        PNG to write.
    gap, accuracy, method : str
        Column stems / names.
    mode : {"nondominated", "envelope"}
        Pareto filtering mode (:func:`fairmiss.reporting.pareto.pareto_filter`).
    gap_label : str
        x-axis label, e.g. ``"FNR difference"``.
    title : str or None
        Axes title.
    show_dropped : bool, default=True
        Draw the filtered-out points faded.
    point_label : str or None
        Column whose value is written beside every point (kept and dropped), e.g. the method label, so that
        points of one colour (one family) can be told apart.

    Returns
    -------
    Path
        ``path``.
    """
    gm, am = f"{gap}_mean", f"{accuracy}_mean"
    missing = [c for c in (method, gm, am) if c not in agg.columns]
    if missing:
        raise KeyError(f"columns {missing} not in the aggregated frame ({list(agg.columns)}).")
    res = pareto_filter(agg, gap=gm, accuracy=am, by=method, mode=mode)
    fig = Figure(figsize=(6.4, 4.8))
    ax = fig.add_subplot()
    colors = {m: f"C{i % 10}" for i, m in enumerate(pd.unique(agg[method]))}

    def draw(df, m, *, alpha, label):
        ax.errorbar(df[gm], df[am], xerr=error_bars(df, gap), yerr=error_bars(df, accuracy), fmt="o",
                    color=colors[m], alpha=alpha, capsize=2, ms=5, label=label)

    for m, df in res.kept.groupby(method, sort=False):
        draw(df, m, alpha=1.0, label=str(m))
        ax.plot(df[gm], df[am], "-", color=colors[m], lw=1.2)
    if show_dropped:
        for m, df in res.dropped.groupby(method, sort=False):
            draw(df, m, alpha=0.25, label=None)
    if point_label is not None:
        shown = pd.concat([res.kept, res.dropped]) if show_dropped else res.kept
        pts = [(float(r[gm]), float(r[am]), str(r[point_label]), colors[r[method]]) for _, r in shown.iterrows()
               if np.isfinite(r[gm]) and np.isfinite(r[am])]
        for (x, y, text, color), dy in zip(pts, label_offsets(ax, [(x, y) for x, y, _, _ in pts])):
            ax.annotate(text, (x, y), xytext=(3, dy), textcoords="offset points", fontsize=6, color=color)
    ax.set_xlabel(gap_label)
    ax.set_ylabel("accuracy")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    return save_figure(fig, path)


def plot_ecdf_by_group(predictions, path, *, sensitive_features, group_names: Mapping | None = None,
                       xlabel: str = "predicted probability", title: str | None = None) -> Path:
    """Empirical CDF of the predictions of each group, one panel per model (002 Figure 2).

    Parameters
    ----------
    predictions : array-like of shape (n,) or mapping of str to array-like
        Scores of one model, or ``{panel title: scores}`` for several models on the same rows.
    path : str or Path
        PNG to write.
    sensitive_features : array-like of shape (n,)
        Group of each row.
    group_names : mapping or None
        Display names of the groups.
    xlabel, title : str
        Labels.

    Returns
    -------
    Path
        ``path``.
    """
    panels = _panels(predictions)
    n = len(next(iter(panels.values())))
    s, levels = _groups(sensitive_features, n)
    fig = Figure(figsize=(4.0 * len(panels), 3.6))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (name, v) in zip(axes, panels.items()):
        if len(v) != n:
            raise ValueError(f"panel {name!r} has {len(v)} predictions, expected {n}.")
        for g in levels:
            x = np.sort(v[s == g])
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post",
                    label=str((group_names or {}).get(g, g)))
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("ECDF")
    axes[0].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_prediction_distributions(predictions, path, *, sensitive_features, bins: int = 20,
                                  group_names: Mapping | None = None, xlabel: str = "prediction",
                                  title: str | None = None) -> Path:
    """Per-group histograms (densities) of predictions with dashed group means (003 Figure 3).

    Parameters
    ----------
    predictions : array-like of shape (n,) or mapping of str to array-like
        Predictions of one model, or ``{panel title: predictions}`` (e.g. unconstrained /
        constrained) on the same rows.
    path : str or Path
        PNG to write.
    sensitive_features : array-like of shape (n,)
        Group of each row.
    bins : int, default=20
        Histogram bins, shared by the groups of a panel.
    group_names : mapping or None
        Display names of the groups.
    xlabel, title : str
        Labels.

    Returns
    -------
    Path
        ``path``.
    """
    panels = _panels(predictions)
    n = len(next(iter(panels.values())))
    s, levels = _groups(sensitive_features, n)
    fig = Figure(figsize=(4.0 * len(panels), 3.6))
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
    for ax, (name, v) in zip(axes, panels.items()):
        if len(v) != n:
            raise ValueError(f"panel {name!r} has {len(v)} predictions, expected {n}.")
        edges = np.histogram_bin_edges(v[np.isfinite(v)], bins=bins)
        for i, g in enumerate(levels):
            x = v[s == g]
            label = str((group_names or {}).get(g, g))
            ax.hist(x, bins=edges, density=True, alpha=0.45, color=f"C{i}", label=f"{label} (mean {np.mean(x):.3g})")
            ax.axvline(np.mean(x), color=f"C{i}", ls="--", lw=1.2)
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        ax.legend(fontsize="small")
    axes[0].set_ylabel("density")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)
