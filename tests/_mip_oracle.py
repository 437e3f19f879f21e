"""Exhaustive-enumeration oracle for Program 1 on tiny instances (spec 000 §5 T2).

Independent of the MIP code: plain numpy, trees enumerated node by node over
feature x threshold in {observed values} U {-eps} x c in {0, 1}; leaves by majority (ties -> 1).
"""

from __future__ import annotations

import itertools

import numpy as np


def _split_masks(X, eps):
    """All distinct 'goes left' masks of one MIA split, with a representative (j, q, c)."""
    out = {}
    for j in range(X.shape[1]):
        col = X[:, j]
        miss = np.isnan(col)
        cands = sorted(set(col[~miss].tolist())) + [-eps]
        for q in cands:
            for c in (0, 1):
                with np.errstate(invalid="ignore"):
                    left = np.where(miss, bool(c), col <= q)
                out.setdefault(left.tobytes(), (left, (j, q, c)))
    return [v for v in out.values()]


def _metric(pred, y, s, lam, fairness, eo_weight=1.0):
    err = pred != y
    obj = err.mean()
    if lam == 0 or fairness == "none":
        return obj
    terms = {"accuracy": ["accuracy"], "fpr": ["fpr"], "fnr": ["fnr"],
             "equalized_odds": ["fpr", "fnr"]}[fairness]
    pen = 0.0
    for t in terms:
        sel = {"accuracy": np.ones_like(y, bool), "fpr": y == 0, "fnr": y == 1}[t]
        r = [err[sel & (s == g)].sum() / (sel & (s == g)).sum() for g in (0, 1)]
        pen += abs(r[0] - r[1])
    return obj + lam * (eo_weight if len(terms) == 2 else 1.0) * pen


def _labels(leaf, y, n_leaves):
    n1 = np.bincount(leaf, weights=(y == 1), minlength=n_leaves)
    n0 = np.bincount(leaf, weights=(y == 0), minlength=n_leaves)
    return (n1 >= n0).astype(int)


def enumerate_optimum(X, y, s, *, depth, lam, fairness, eps, eo_weight=1.0):
    """Minimum of 0-1 loss + lam * fairness over all depth-1/2 MIA trees with majority leaves."""
    masks = [m for m, _ in _split_masks(X, eps)]
    best = np.inf
    if depth == 1:
        for left in masks:
            leaf = (~left).astype(int)
            pred = _labels(leaf, y, 2)[leaf]
            best = min(best, _metric(pred, y, s, lam, fairness, eo_weight))
        return best
    assert depth == 2
    for root, a, b in itertools.product(masks, masks, masks):
        leaf = np.where(root, np.where(a, 0, 1), np.where(b, 2, 3))
        pred = _labels(leaf, y, 4)[leaf]
        best = min(best, _metric(pred, y, s, lam, fairness, eo_weight))
    return best


def tiny_instance(seed, n=12, d=3, levels=5, miss=0.25):
    """Grid values k/10 (gaps 0.1 = 10 eps, T2's precondition), ~25% missing, both labels present in
    both groups."""
    rng = np.random.default_rng(seed)
    while True:
        X = rng.integers(0, levels, size=(n, d)) / 10.0
        X[rng.random((n, d)) < miss] = np.nan
        y = rng.integers(0, 2, n)
        s = rng.integers(0, 2, n)
        if all(((s == g) & (y == c)).sum() >= 1 for g in (0, 1) for c in (0, 1)):
            return X, y, s
