"""Group-conditional rates: the one implementation of confusion counts and the rates derived from them.

Every group rate in the library (selection rate, TPR / FPR / FNR / TNR, accuracy, the paper-002 shares
FN/n and FP/n) is computed here, from 2×2 confusion counts ``(tn, fp, fn, tp)``:

* :func:`confusion_counts` — one ``(tn, fp, fn, tp)`` of Python ints for a 0/1 label/prediction pair;
* :func:`group_counts` — the same per group in one :func:`numpy.bincount` pass (``groups, counts``);
* :func:`from_counts` — one named metric from a count (a rate with an empty denominator is NaN);
* the per-array functions (:func:`fpr`, :func:`fnr`, ...) that fairlearn's ``MetricFrame`` is given in
  :func:`fairmiss.metrics.evaluate_reference`, the test oracle of the fast path.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import accuracy_score, balanced_accuracy_score, confusion_matrix, roc_auc_score

__all__ = ["confusion_counts", "group_counts", "from_counts", "rate", "binary", "PRED_METRICS",
           "fpr", "fnr", "tpr", "tnr", "fn_share", "fp_share", "selection_rate", "error", "balanced_accuracy", "auc"]


def rate(num, den):
    """``num / den``, NaN when the denominator is 0 (an undefined rate, never a crash or a 0)."""
    return num / den if den else float("nan")


def binary(a, what: str) -> np.ndarray:
    a = np.asarray(a).astype(int)
    if a.size and (a.min() < 0 or a.max() > 1):
        raise ValueError(f"{what} must be 0/1, got values {sorted(set(np.unique(a).tolist()) - {0, 1})[:5]}")
    return a


def confusion_counts(y_true, y_pred) -> tuple[int, int, int, int]:
    """``(tn, fp, fn, tp)`` as Python ints, for 0/1 arrays."""
    tn, fp, fn, tp = (int(c) for c in np.bincount(2 * binary(y_true, "y_true") + binary(y_pred, "y_pred"),
                                                  minlength=4))
    return tn, fp, fn, tp


def group_counts(y_true, y_pred, group) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(groups, gidx, counts)``: sorted group values, each row's group index and the per-group
    ``(tn, fp, fn, tp)`` counts as an int array of shape ``(n_groups, 4)``; ``y_true``/``y_pred`` 0/1."""
    y_true = binary(y_true, "y_true")
    y_pred = binary(y_pred, "y_pred")
    groups, gidx = np.unique(np.asarray(group), return_inverse=True)
    gidx = gidx.ravel()
    counts = np.bincount(4 * gidx + 2 * y_true + y_pred, minlength=4 * len(groups)).reshape(len(groups), 4)
    return groups, gidx, counts


_BUILTIN_COUNT_RATES = frozenset({"fpr", "fnr", "tpr", "tnr", "selection_rate", "fn_share", "fp_share"})


def from_counts(tn, fp, fn, tp, name: str) -> float:
    """One prediction metric from a 2×2 confusion count, with the same floating-point operations as
    the per-array functions below (the tests hold them equal)."""
    n = tn + fp + fn + tp
    if name == "accuracy":
        return rate(tp + tn, n)
    if name == "error":
        return 1.0 - (tp + tn) / n if n else float("nan")
    if name == "balanced_accuracy":  # scikit-learn: mean recall of the two classes present
        if not (tn + fp) or not (fn + tp):
            return float("nan")
        return float(np.mean([tn / (tn + fp), tp / (fn + tp)]))
    if name not in _BUILTIN_COUNT_RATES:
        from fairmiss.metrics.kinds import COUNT_METRICS

        if name in COUNT_METRICS:  # an added metric (fairmiss.metrics.kinds)
            return float(COUNT_METRICS[name](tn, fp, fn, tp))
    num, den = {"fpr": (fp, fp + tn), "fnr": (fn, fn + tp), "tpr": (tp, fn + tp), "tnr": (tn, fp + tn),
                "selection_rate": (tp + fp, n), "fn_share": (fn, n), "fp_share": (fp, n)}[name]
    return rate(num, den)


# --- per-array functions (scikit-learn based): what fairlearn's MetricFrame is given in the oracle -----------
def _cm(y, p):
    return confusion_matrix(y, p, labels=[0, 1]).ravel()  # tn, fp, fn, tp


def fpr(y, p):
    tn, fp, fn, tp = _cm(y, p)
    return rate(fp, fp + tn)


def fnr(y, p):
    tn, fp, fn, tp = _cm(y, p)
    return rate(fn, fn + tp)


def tpr(y, p):
    tn, fp, fn, tp = _cm(y, p)
    return rate(tp, fn + tp)


def tnr(y, p):
    tn, fp, fn, tp = _cm(y, p)
    return rate(tn, fp + tn)


def fn_share(y, p):
    tn, fp, fn, tp = _cm(y, p)
    return rate(fn, len(y))


def fp_share(y, p):
    tn, fp, fn, tp = _cm(y, p)
    return rate(fp, len(y))


def selection_rate(y, p):
    return float(np.mean(p)) if len(p) else float("nan")


def error(y, p):
    return 1.0 - accuracy_score(y, p) if len(y) else float("nan")


def balanced_accuracy(y, p):
    if len(np.unique(y)) < 2:
        return float("nan")
    return balanced_accuracy_score(y, p)


def auc(y, s):
    if len(np.unique(y)) < 2:
        return float("nan")
    return roc_auc_score(y, s)


PRED_METRICS = {
    "accuracy": accuracy_score, "balanced_accuracy": balanced_accuracy, "error": error,
    "fpr": fpr, "fnr": fnr, "tpr": tpr, "tnr": tnr, "selection_rate": selection_rate,
    "fn_share": fn_share, "fp_share": fp_share,
}


def groups_1d(values, sensitive_features):
    """``(values as float, groups as 1-d array, sorted distinct groups)``; at least two groups required."""
    import pandas as pd

    v = np.asarray(values, dtype=float).ravel()
    s = np.asarray(sensitive_features)
    if s.ndim != 1:
        s = s.ravel()
    if len(s) != len(v):
        raise ValueError(f"sensitive_features has {len(s)} entries but predictions have {len(v)}.")
    levels = pd.unique(s)
    if len(levels) < 2:
        raise ValueError(f"need at least two groups in sensitive_features; got {list(levels)}.")
    return v, s, sorted(levels, key=str)
