"""BuDRO: individually fair gradient boosting with an optimal-transport adversary (paper 004).

:class:`BuDROClassifier` is Algorithm 3 of Vargo et al. (ICLR 2021) on XGBoost:

1. learn the fair metric (:class:`~fairmiss.learners.budro.fair_metric.FairMetric`), ``Z = XQ``,
   and the transport costs ``C = d_x^2`` on a candidate set (all pairs, or kNN at scale);
2. ``f0`` = one plain XGBoost round on the original ``(X, y)`` (spec §1.9 item 2, [code]);
3. each step ``t``: losses ``l(f_t(x_i), 0/1)``; the adversary solves the transport problem
   (:func:`~fairmiss.learners.budro.ot.solve_ot`) giving ``P*(x_i, k)``; one tree is added on the
   2n-row data ``D0 = [X; X]``, labels ``[0]*n + [1]*n``, weights ``concat(Pi y^0, Pi y^1)``
   (weights sum to 1), by ``Booster.update`` on the same cached ``QuantileDMatrix``
   (equivalent to ``xgb.train(..., xgb_model=booster)`` with one round, without re-binning
   ``D0`` and re-predicting the whole ensemble every step).

``xgb_mode="gradient"`` adds the same tree from the paper's functional gradient (2.6) on the
n-row data instead: ``g_i = P0_i s_i + spw P1_i (s_i - 1)``, ``h_i = (P0_i + spw P1_i) s_i (1 - s_i)``
(``s = sigmoid(f)``, ``spw = scale_pos_weight``) through ``Booster.boost``. Both rows of a point
fall in the same leaf, so every node's gradient/hessian sums, hence the trees, are the same
(up to the split-candidate sketch); it halves XGBoost's work.

Hyperparameters keep the paper's conventions (spec §1.8): weights sum to 1, so
``min_child_weight`` must be tiny (German 1/80, Adult 0.1/n; the XGBoost default 1 yields
empty trees and a :class:`BuDROWeightScaleWarning`); ``base_score=0.5`` (paper-era XGBoost);
small learning rates.

Also here: the paper's in-reach baselines :class:`ProjectClassifier` (XGBoost on ``XQ``) and
:class:`ReweighingClassifier` (Kamiran-Calders weights + XGBoost).
"""

from __future__ import annotations

import logging
import time
import warnings
from numbers import Integral, Real

import numpy as np
import pandas as pd
import xgboost as xgb
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from fairmiss.learners.budro.fair_metric import FairMetric
from fairmiss.learners.budro.ot import (
    METHODS,
    PointGroups,
    all_candidates,
    knn_candidates,
    solve_entropic_grouped,
    solve_ot,
)

logger = logging.getLogger(__name__)

__all__ = [
    "BuDROClassifier",
    "BuDROWeightScaleWarning",
    "ProjectClassifier",
    "ReweighingClassifier",
    "kamiran_calders_weights",
]


class BuDROWeightScaleWarning(UserWarning):
    """``min_child_weight`` is too large for BuDRO's sum-to-1 weights: trees will be empty."""


def _binary_labels(y) -> np.ndarray:
    y = np.asarray(y).ravel()
    ok = np.isin(y, (0, 1)) if y.dtype.kind in "biuf" else np.zeros(len(y), dtype=bool)
    if not ok.all():
        bad = np.unique(y[~ok])[:5]
        raise ValueError(f"labels must be in {{0, 1}}; found {bad.tolist()}")
    if np.unique(y).size < 2:
        raise ValueError("both classes 0 and 1 must be present in y")
    return y.astype(np.int64)


_XGB_CONSTRAINTS: dict = {
    "n_estimators": [Interval(Integral, 0, None, closed="left")],
    "learning_rate": [Interval(Real, 0, None, closed="neither")],
    "max_depth": [Interval(Integral, 0, None, closed="left")],
    "min_child_weight": [Interval(Real, 0, None, closed="left")],
    "reg_lambda": [Interval(Real, 0, None, closed="left")],
    "reg_alpha": [Interval(Real, 0, None, closed="left")],
    "scale_pos_weight": [Interval(Real, 0, None, closed="neither"), StrOptions({"balanced"})],
    "base_score": [Interval(Real, 0, 1, closed="neither")],
    "max_bin": [Interval(Integral, 2, None, closed="left")],
    "random_state": ["random_state"],
    "n_jobs": [Integral],
}


class _XGBMixin:
    """Shared XGBoost plumbing (parameters, prediction) of the estimators in this module."""

    def _spw(self, y) -> float:
        if self.scale_pos_weight == "balanced":
            return float(np.sum(y == 0) / np.sum(y == 1))
        return float(self.scale_pos_weight)

    def _xgb_params(self, y, seed: int) -> dict:
        return {
            "objective": "binary:logistic", "tree_method": "hist", "base_score": float(self.base_score),
            "eta": float(self.learning_rate), "max_depth": int(self.max_depth),
            "min_child_weight": float(self.min_child_weight), "lambda": float(self.reg_lambda),
            "alpha": float(self.reg_alpha), "scale_pos_weight": self._spw(y), "max_bin": int(self.max_bin),
            "nthread": int(self.n_jobs), "seed": int(seed), "verbosity": 0,
        }

    def _transform(self, X):
        return X

    def decision_function(self, X) -> np.ndarray:
        """Margins ``f(x)`` (log-odds of class 1)."""
        check_is_fitted(self, "booster_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.booster_.predict(xgb.DMatrix(self._transform(X)), output_margin=True)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, columns ``[P(y=0), P(y=1)]``."""
        p = expit(self.decision_function(X))
        return np.column_stack([1 - p, p])

    def predict(self, X) -> np.ndarray:
        """``1{p > 0.5}`` (spec §2.3)."""
        return self.classes_[(self.decision_function(X) > 0).astype(int)]


def _fit_metric(est, X, *, protected_columns, protected_target, fair_metric) -> FairMetric:
    if fair_metric is not None:
        # FairMetric is not a scikit-learn estimator: check_is_fitted would ask it for
        # __sklearn_tags__ (AttributeError with scikit-learn >= 1.6), so test the fitted attribute
        if not hasattr(fair_metric, "basis_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("fair_metric is not fitted: call FairMetric().fit(X, protected_columns=...) first")
        if fair_metric.n_features_in_ != X.shape[1]:
            raise ValueError(f"fair_metric was fitted on {fair_metric.n_features_in_} features, X has {X.shape[1]}")
        return fair_metric
    if protected_columns is None:
        raise ValueError("pass protected_columns=... (names or indices) or a fitted fair_metric=...")
    return FairMetric().fit(X, protected_columns=protected_columns, protected_target=protected_target,
                            kind=est.protected_kind)


def _logistic_losses(f):
    """``(np.logaddexp(0, f), np.logaddexp(0, -f))`` bit for bit, with one ``logaddexp``: both are
    ``u = log1p(exp(-|f|))`` on one side and ``|f| + u`` on the other (numpy's own branches)."""
    a = np.abs(f)
    u = np.logaddexp(0.0, -a)
    big = a + u
    pos = f > 0
    return np.where(pos, big, u), np.where(pos, u, big)


def _eta_window(eta_prev, eta_prev2):
    """Warm-start window for the exact transport step: ``eta`` extrapolated from the last two
    steps (it moves smoothly: +0.3% to +20% per step on Adult) and a relative half-width that
    grows with the last step's change. Only speed depends on it (a miss re-solves without it)."""
    if eta_prev is None or not eta_prev > 0:
        return None, None
    if eta_prev2 is None or not eta_prev2 > 0:
        return eta_prev, 1.5
    ratio = min(max(eta_prev / eta_prev2, 2.0 / 3.0), 1.5)
    return eta_prev * ratio, float(np.exp(0.02 + 0.5 * abs(np.log(ratio))))


class BuDROClassifier(_XGBMixin, ClassifierMixin, BaseEstimator):
    """Individually fair gradient-boosted trees (BuDRO, Algorithm 3 of paper 004).

    Parameters
    ----------
    eps : float, default=1.0
        Transport budget ``<C, Pi> <= eps`` (mean squared fair distance). German 1.0,
        Adult 0.4, COMPAS 0.12.
    n_estimators : int, default=90
        BuDRO steps after the plain first round ``f0`` (the booster holds ``n_estimators + 1`` trees).
    learning_rate, max_depth, min_child_weight, reg_lambda, reg_alpha, max_bin : XGBoost ``rho``
        Defaults are German's Table 4 (0.005, 4, 1/80, 1.0).
    scale_pos_weight : float or "balanced", default="balanced"
        Multiplies the label-1 rows' weights (paper: ``n0/n1``).
    base_score : float, default=0.5
        XGBoost's initial probability (the paper-era default; XGBoost >= 2 would estimate it).
    ot_method : {"dual", "greedy", "lp", "entropic", "dual_sgd"}, default="dual"
        Inner solver (:func:`fairmiss.learners.budro.ot.solve_ot`).
    ot_gamma : float, default=5e-5
        Entropic regularisation (``ot_method="entropic"``): the authors' COMPAS value, the only one
        the paper's experiments use (spec 004 §1.5). With all-pairs support and duplicated training
        rows the entropic plan is computed exactly on groups of interchangeable points
        (:func:`~fairmiss.learners.budro.ot.solve_entropic_grouped`, ``history_["ot_path"] == "grouped"``).
    ot_options : dict, optional
        Extra keywords for :func:`~fairmiss.learners.budro.ot.solve_ot` (``sgd_*``, ``time_limit``, ``lp_fallback``).
    candidates : {"auto", "all", "knn"}, default="auto"
        Transport support: all pairs (exact) or the ``n_neighbors`` fair-metric nearest
        neighbours (approximate, certified per step). ``auto``: all when ``n <= 6000``.
    n_neighbors : int, default=32
    xgb_mode : {"augmented", "gradient"}, default="augmented"
        2n-row weighted ``D0`` with ``binary:logistic`` or the equivalent custom gradient on n rows.
    protected_kind : {"auto", "logistic", "ridge", "none"}, default="auto"
        Attribute model of the fair metric (when it is learned in ``fit``).
    random_state : int, RandomState or None
    n_jobs : int, default=1
        XGBoost threads.

    Attributes
    ----------
    booster_ : xgboost.Booster
    fair_metric_ : FairMetric
    history_ : dict of lists
        Per step: ``robust_loss``, ``empirical_loss``, ``certificate_gap``, ``budget_used``,
        ``cost``, ``eta``, ``solver_seconds``, ``boost_seconds``, ``nnz``, ``uncertified_columns``,
        ``ot_path`` (``"uniform/window"``: the vectorised exact path warm-started in a narrow
        ``eta`` window extrapolated from the last two steps; ``"uniform/full"``: the same path
        without a window (first step, or the window missed ``eta*``); ``"general"``: the
        per-entry solvers).
    candidates_ : str
        ``"all"`` or ``"knn"``.
    classes_, n_features_in_, feature_names_in_, random_state_

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(60, 3)); X[:, 0] = X[:, 0] > 0
    >>> y = (X[:, 1] + X[:, 0] > 0.5).astype(int)
    >>> clf = BuDROClassifier(eps=0.1, n_estimators=3, learning_rate=0.1).fit(X, y, protected_columns=[0])
    >>> len(clf.history_["robust_loss"])
    3
    """

    _parameter_constraints: dict = {
        **_XGB_CONSTRAINTS,
        "eps": [Interval(Real, 0, None, closed="left")],
        "ot_method": [StrOptions(set(METHODS))],
        "ot_gamma": [Interval(Real, 0, None, closed="neither")],
        "ot_options": [dict, None],
        "candidates": [StrOptions({"auto", "all", "knn"})],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "xgb_mode": [StrOptions({"augmented", "gradient"})],
        "protected_kind": [StrOptions({"auto", "logistic", "ridge", "none"})],
    }

    def __init__(
        self, *, eps=1.0, n_estimators=90, learning_rate=0.005, max_depth=4, min_child_weight=1 / 80,
        reg_lambda=1.0, reg_alpha=0.0, scale_pos_weight="balanced", base_score=0.5, max_bin=256,
        ot_method="dual", ot_gamma=5e-5, ot_options=None, candidates="auto", n_neighbors=32,
        xgb_mode="augmented", protected_kind="auto", random_state=None, n_jobs=1,
    ):
        self.eps = eps
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.reg_lambda = reg_lambda
        self.reg_alpha = reg_alpha
        self.scale_pos_weight = scale_pos_weight
        self.base_score = base_score
        self.max_bin = max_bin
        self.ot_method = ot_method
        self.ot_gamma = ot_gamma
        self.ot_options = ot_options
        self.candidates = candidates
        self.n_neighbors = n_neighbors
        self.xgb_mode = xgb_mode
        self.protected_kind = protected_kind
        self.random_state = random_state
        self.n_jobs = n_jobs

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, protected_columns=None, protected_target=None, fair_metric=None):
        """Train BuDRO.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Features, protected attribute columns included (the paper keeps them).
        y : array-like of {0, 1}
        protected_columns : str, int or list, optional
            Protected attribute columns (names for a DataFrame, else indices); the fair
            metric is learned from them. Required unless ``fair_metric`` is given.
        protected_target : str, int or array-like, optional
            Attribute the metric's linear model predicts (default: first protected column).
        fair_metric : FairMetric, optional
            An already fitted metric (e.g. shared with the Project baseline).
        """
        Xdf = X
        y = _binary_labels(y)
        X = validate_data(self, X, reset=True, dtype=np.float64)
        if len(y) != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {len(y)}")
        n = X.shape[0]
        self.classes_ = np.array([0, 1])
        self.random_state_ = check_random_state(self.random_state)
        seed = int(self.random_state_.randint(np.iinfo(np.int32).max))
        if self.min_child_weight >= 1.0:
            warnings.warn(
                f"min_child_weight={self.min_child_weight} >= 1 while BuDRO's weights sum to 1: trees "
                "will be single zero leaves; use e.g. 1/80 (German) or 0.1/n (paper Tables 4, 6, 8)",
                BuDROWeightScaleWarning, stacklevel=2,
            )
        self.fair_metric_ = _fit_metric(self, Xdf if isinstance(Xdf, pd.DataFrame) else X,
                                        protected_columns=protected_columns,
                                        protected_target=protected_target, fair_metric=fair_metric)
        Z = self.fair_metric_.project(X)
        self.candidates_ = ("all" if n <= 6000 else "knn") if self.candidates == "auto" else self.candidates
        t0 = time.perf_counter()
        groups = None
        if self.ot_method == "entropic" and self.candidates_ == "all":
            # exact and much cheaper when training rows repeat (COMPAS: ~300 distinct of 4222)
            try:
                groups = PointGroups.from_points(Z, max_locations=n - 1)
            except MemoryError:  # no repeated locations: the plain all-pairs path
                groups = None
        if groups is not None:
            cand = None
            logger.info("BuDRO: n=%d, entropic transport on %d distinct locations", n, groups.n_locations)
        else:
            cand = all_candidates(Z) if self.candidates_ == "all" else knn_candidates(Z, k=self.n_neighbors)
            logger.info("BuDRO: n=%d, %s candidates (%d entries)", n, self.candidates_, cand.nnz)
        self.candidate_seconds_ = time.perf_counter() - t0

        params = self._xgb_params(y, seed)
        spw = params["scale_pos_weight"]
        dx = xgb.QuantileDMatrix(X, label=y, max_bin=self.max_bin)
        booster = xgb.train(params, dx, num_boost_round=1)  # f0: one plain round on (X, y)
        if self.xgb_mode == "augmented":
            d0 = xgb.QuantileDMatrix(np.vstack([X, X]), label=np.r_[np.zeros(n), np.ones(n)],
                                     weight=np.full(2 * n, 0.5 / n), max_bin=self.max_bin)
        hist = {k: [] for k in ("robust_loss", "empirical_loss", "certificate_gap", "budget_used", "cost", "eta",
                                "solver_seconds", "boost_seconds", "nnz", "uncertified_columns", "ot_path")}
        opts = dict(self.ot_options or {})
        eta_prev = eta_prev2 = None
        for t in range(self.n_estimators):
            f = booster.predict(d0 if self.xgb_mode == "augmented" else dx, output_margin=True)[:n]
            f = f.astype(np.float64)
            if self.ot_method in ("greedy", "dual"):  # warm start: never changes the exact solution
                opts["eta_hint"], opts["eta_hint_width"] = _eta_window(eta_prev, eta_prev2)
            loss0, loss1 = _logistic_losses(f)
            if groups is not None:
                res = solve_entropic_grouped(groups, self.eps, y=y, loss0=loss0, loss1=loss1, gamma=self.ot_gamma)
            else:
                res = solve_ot(cand, self.eps, y=y, loss0=loss0, loss1=loss1,
                               method=self.ot_method, gamma=self.ot_gamma, random_state=self.random_state_,
                               **opts)
            eta_prev, eta_prev2 = (res.eta if np.isfinite(res.eta) else None), eta_prev
            tb = time.perf_counter()
            if self.xgb_mode == "augmented":
                d0.set_weight(np.concatenate([res.p0, res.p1]))
                booster.update(d0, t + 1)
            else:
                s = expit(f)
                grad = res.p0 * s + spw * res.p1 * (s - 1.0)
                hess = (res.p0 + spw * res.p1) * s * (1.0 - s)
                booster.boost(dx, t + 1, grad=grad, hess=hess)
            for k, v in (("robust_loss", res.robust_loss), ("empirical_loss", res.empirical_loss),
                         ("certificate_gap", res.robust_loss - res.empirical_loss),
                         ("budget_used", res.budget_used), ("cost", res.cost), ("eta", res.eta),
                         ("solver_seconds", res.seconds), ("boost_seconds", time.perf_counter() - tb),
                         ("nnz", res.nnz), ("uncertified_columns", res.info.get("uncertified_columns", 0)),
                         ("ot_path", res.info.get("path", "general"))):
                hist[k].append(v)
            logger.debug("BuDRO step %d: robust=%.5f empirical=%.5f budget=%.3f eta=%.4g (%.3fs)", t,
                         res.robust_loss, res.empirical_loss, res.budget_used, res.eta, res.seconds)
        self.booster_ = booster
        self.history_ = hist
        if hist["uncertified_columns"] and max(hist["uncertified_columns"]) > 0:
            logger.warning("BuDRO kNN support: up to %d columns per step not certified optimal for the full "
                           "transport problem (raise n_neighbors)", max(hist["uncertified_columns"]))
        return self

    def _transform(self, X):
        return X


class ProjectClassifier(_XGBMixin, ClassifierMixin, BaseEstimator):
    """The paper's "Project" baseline: XGBoost on ``XQ`` (the sensitive subspace projected out).

    Parameters are XGBoost's (defaults: XGBoost's own, ``base_score=0.5``); the fair metric is
    learned in ``fit`` exactly as for :class:`BuDROClassifier` (or passed in).
    """

    _parameter_constraints: dict = {**_XGB_CONSTRAINTS,
                                    "protected_kind": [StrOptions({"auto", "logistic", "ridge", "none"})]}

    def __init__(self, *, n_estimators=100, learning_rate=0.3, max_depth=6, min_child_weight=1.0, reg_lambda=1.0,
                 reg_alpha=0.0, scale_pos_weight=1.0, base_score=0.5, max_bin=256, protected_kind="auto",
                 random_state=None, n_jobs=1):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.reg_lambda = reg_lambda
        self.reg_alpha = reg_alpha
        self.scale_pos_weight = scale_pos_weight
        self.base_score = base_score
        self.max_bin = max_bin
        self.protected_kind = protected_kind
        self.random_state = random_state
        self.n_jobs = n_jobs

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, protected_columns=None, protected_target=None, fair_metric=None):
        """Learn the metric, project, and train XGBoost (same keywords as :meth:`BuDROClassifier.fit`)."""
        Xdf = X
        y = _binary_labels(y)
        X = validate_data(self, X, reset=True, dtype=np.float64)
        self.classes_ = np.array([0, 1])
        self.random_state_ = check_random_state(self.random_state)
        self.fair_metric_ = _fit_metric(self, Xdf if isinstance(Xdf, pd.DataFrame) else X,
                                        protected_columns=protected_columns,
                                        protected_target=protected_target, fair_metric=fair_metric)
        params = self._xgb_params(y, int(self.random_state_.randint(np.iinfo(np.int32).max)))
        self.booster_ = xgb.train(params, xgb.DMatrix(self.fair_metric_.project(X), label=y), self.n_estimators)
        return self

    def _transform(self, X):
        return self.fair_metric_.project(X)


def kamiran_calders_weights(y, sensitive_features) -> np.ndarray:
    """Reweighing weights ``w(g, y) = n_g n_y / (n n_{g,y})`` (Kamiran & Calders 2011).

    ``sensitive_features`` of shape (n,) or (n, k); with several columns ``g`` is their
    intersection. Weighted, group and label are independent.
    """
    y = np.asarray(y).ravel()
    S = np.asarray(sensitive_features)
    S = S.reshape(len(y), -1)
    if S.shape[0] != len(y):
        raise ValueError("sensitive_features and y must have the same number of rows")
    _, g = np.unique(S, axis=0, return_inverse=True)
    g = g.ravel()
    _, yi = np.unique(y, return_inverse=True)
    n = len(y)
    ng, ny = np.bincount(g), np.bincount(yi)
    ngy = np.zeros((ng.size, ny.size))
    np.add.at(ngy, (g, yi), 1)
    return ng[g] * ny[yi] / (n * ngy[g, yi])


class ReweighingClassifier(_XGBMixin, ClassifierMixin, BaseEstimator):
    """The paper's "Reweigh" baseline: Kamiran-Calders instance weights, then XGBoost.

    ``fit(X, y, *, sensitive_features)``: one or several binary/categorical protected columns
    (array of shape (n,) or (n, k)); defaults are XGBoost's with ``base_score=0.5``.
    """

    _parameter_constraints: dict = dict(_XGB_CONSTRAINTS)

    def __init__(self, *, n_estimators=100, learning_rate=0.3, max_depth=6, min_child_weight=1.0, reg_lambda=1.0,
                 reg_alpha=0.0, scale_pos_weight=1.0, base_score=0.5, max_bin=256, random_state=None, n_jobs=1):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.reg_lambda = reg_lambda
        self.reg_alpha = reg_alpha
        self.scale_pos_weight = scale_pos_weight
        self.base_score = base_score
        self.max_bin = max_bin
        self.random_state = random_state
        self.n_jobs = n_jobs

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features):
        """Train XGBoost with reweighing weights computed from ``sensitive_features``."""
        y = _binary_labels(y)
        X = validate_data(self, X, reset=True, dtype=np.float64)
        self.classes_ = np.array([0, 1])
        self.random_state_ = check_random_state(self.random_state)
        self.sample_weight_ = kamiran_calders_weights(y, sensitive_features)
        params = self._xgb_params(y, int(self.random_state_.randint(np.iinfo(np.int32).max)))
        self.booster_ = xgb.train(params, xgb.DMatrix(X, label=y, weight=self.sample_weight_), self.n_estimators)
        return self
