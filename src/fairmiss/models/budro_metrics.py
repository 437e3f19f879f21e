"""Evaluation metrics of paper 004 (spec 004 §2.3), as pure functions.

* :func:`group_gaps`: ``Gap_y = P(Yhat=y | Y=y, g=0) - P(Yhat=y | Y=y, g=1)`` (g = 0 the
  protected group), ``GAPMax = max_y |Gap_y|`` and ``GAPRMS = sqrt(mean_y Gap_y^2)``
  (De-Arteaga et al. 2019); :func:`gap_max` and :func:`gap_rms` return one number each.
* :func:`counterfactual_consistency`: the fraction of test rows whose prediction is the same
  on every counterfactual copy (paper C.2: *unchanged*, spec §1.9 item 3);
  :func:`counterfactual_copies` builds the copies (one-hot aware: set a block of columns).
* :func:`fairness_certificate`: the Theorem-3.4 a-posteriori certificate
  ``L(f) - empirical loss`` for any model's margins (spec §1.6).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from sklearn.metrics import balanced_accuracy_score

__all__ = [
    "balanced_accuracy",
    "counterfactual_consistency",
    "counterfactual_copies",
    "fairness_certificate",
    "gap_max",
    "gap_rms",
    "group_gaps",
]


def balanced_accuracy(y_true, y_pred) -> float:
    """``(TPR + TNR) / 2``."""
    return float(balanced_accuracy_score(y_true, y_pred))


def group_gaps(y_true, y_pred, *, sensitive_features) -> dict:
    """Per-label gaps between the protected group (0) and the privileged group (1).

    Returns ``{"gap_0", "gap_1", "gap_max", "gap_rms"}``; ``gap_1`` is the TPR difference and
    ``gap_0`` the TNR difference.
    """
    y_true, y_pred = np.asarray(y_true).ravel(), np.asarray(y_pred).ravel()
    g = np.asarray(sensitive_features).ravel()
    if not (len(y_true) == len(y_pred) == len(g)):
        raise ValueError("y_true, y_pred and sensitive_features must have the same length")
    if set(np.unique(g)) - {0, 1}:
        raise ValueError("sensitive_features must be binary 0/1 (0 = protected group); binarise first (e.g. age < 25)")
    out = {}
    for lab in (0, 1):
        rates = []
        for grp in (0, 1):
            m = (y_true == lab) & (g == grp)
            if not m.any():
                raise ValueError(f"no test rows with y={lab} in group {grp}: the gap is undefined")
            rates.append(np.mean(y_pred[m] == lab))
        out[f"gap_{lab}"] = float(rates[0] - rates[1])
    gaps = np.array([out["gap_0"], out["gap_1"]])
    out["gap_max"] = float(np.max(np.abs(gaps)))
    out["gap_rms"] = float(np.sqrt(np.mean(gaps**2)))
    return out


def gap_max(y_true, y_pred, *, sensitive_features) -> float:
    """``max_y |Gap_y|``."""
    return group_gaps(y_true, y_pred, sensitive_features=sensitive_features)["gap_max"]


def gap_rms(y_true, y_pred, *, sensitive_features) -> float:
    """``sqrt(mean_y Gap_y^2)``."""
    return group_gaps(y_true, y_pred, sensitive_features=sensitive_features)["gap_rms"]


def counterfactual_copies(X, blocks) -> list:
    """Copies of ``X`` with attribute values set, one per combination.

    Parameters
    ----------
    X : DataFrame or ndarray
    blocks : list of lists of dict
        One list per attribute; each dict maps columns (names or indices) to values and is one
        value of the attribute (one-hot aware: ``{"rel_husband": 1, "rel_wife": 0}``). The
        copies are the cartesian product over attributes (e.g. 2 genders x 2 races = 4).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.zeros((2, 3))
    >>> len(counterfactual_copies(X, [[{0: 0}, {0: 1}], [{1: 0}, {1: 1}]]))
    4
    """
    out = []
    for combo in itertools.product(*blocks):
        Xc = X.copy()
        for setting in combo:
            for col, val in setting.items():
                if isinstance(Xc, pd.DataFrame):
                    Xc[col] = val
                else:
                    Xc[:, col] = val
        out.append(Xc)
    return out


def counterfactual_consistency(predict, copies) -> float:
    """Fraction of rows predicted identically on every counterfactual copy.

    Parameters
    ----------
    predict : callable
        ``predict(X) -> labels`` (e.g. a fitted estimator's ``predict``).
    copies : list of array-like
        Counterfactual versions of the same test rows (:func:`counterfactual_copies`).
    """
    if len(copies) < 2:
        raise ValueError("need at least two counterfactual copies")
    P = np.column_stack([np.asarray(predict(c)).ravel() for c in copies])
    return float(np.mean(np.all(P == P[:, :1], axis=1)))


def fairness_certificate(margins, y, Z, eps, *, method="dual", k=None) -> dict:
    """Theorem-3.4 certificate of any binary model: robust minus empirical logistic loss.

    Parameters
    ----------
    margins : array-like of shape (n,)
        The model's log-odds ``f(x_i)`` (for probabilities pass ``logit(p)``).
    y : array-like of {0, 1}
    Z : ndarray of shape (n, d)
        Points in fair-metric coordinates (``FairMetric.project(X)``).
    eps : float
        Transport budget.
    method : str
        Solver of :func:`fairmiss.models.ot.solve_ot`.
    k : int, optional
        Use the ``k`` nearest neighbours as support (large ``n``) instead of all pairs.
    """
    from fairmiss.models.ot import all_candidates, knn_candidates, solve_ot

    f = np.asarray(margins, dtype=np.float64).ravel()
    cand = all_candidates(Z) if k is None else knn_candidates(Z, k=k)
    res = solve_ot(cand, eps, y=np.asarray(y).ravel(), loss0=np.logaddexp(0, f), loss1=np.logaddexp(0, -f),
                   method=method)
    return {"robust_loss": res.robust_loss, "empirical_loss": res.empirical_loss,
            "gap": res.robust_loss - res.empirical_loss, "eta": res.eta, "budget_used": res.budget_used}
