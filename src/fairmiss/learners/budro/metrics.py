"""Evaluation metrics of paper 004 (spec 004 §2.3), as pure functions.

* :func:`group_gaps`, :func:`gap_max`, :func:`gap_rms`: re-exported from :mod:`fairmiss.metrics.gaps`
  (one implementation, on the group confusion counts): ``Gap_y`` = between-group difference of
  ``P(Yhat=y | Y=y, g)`` (absolute, max − min over groups), ``GAPMax = max_y |Gap_y|`` and
  ``GAPRMS = sqrt(mean_y Gap_y^2)`` (De-Arteaga et al. 2019).
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

from fairmiss.metrics.gaps import gap_max, gap_rms, group_gaps  # noqa: F401  (re-exported, one implementation)

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
        Solver of :func:`fairmiss.learners.budro.ot.solve_ot`.
    k : int, optional
        Use the ``k`` nearest neighbours as support (large ``n``) instead of all pairs.
    """
    from fairmiss.learners.budro.ot import all_candidates, knn_candidates, solve_ot

    f = np.asarray(margins, dtype=np.float64).ravel()
    cand = all_candidates(Z) if k is None else knn_candidates(Z, k=k)
    res = solve_ot(cand, eps, y=np.asarray(y).ravel(), loss0=np.logaddexp(0, f), loss1=np.logaddexp(0, -f),
                   method=method)
    return {"robust_loss": res.robust_loss, "empirical_loss": res.empirical_loss,
            "gap": res.robust_loss - res.empirical_loss, "eta": res.eta, "budget_used": res.budget_used}
