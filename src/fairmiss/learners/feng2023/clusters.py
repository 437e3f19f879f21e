"""Missing-pattern clustering with a fair classifier per cluster (Feng, Calmon & Wang 2023, intervention iii),
in a simple form: the data are split greedily, like a decision tree whose only questions are "is feature j
missing?", and a clone of the fair ``estimator`` is fitted on each leaf (cluster) on zero-imputed features.

Splitting rule (ours, not the paper's Algorithm 1, which splits a cluster on the feature whose two children's
linear classifiers have the smallest summed loss, only while that loss is below the unsplit cluster's, among
the splits whose children keep every group's share within [β, α] and at least k rows): a cluster is split on the
missingness indicator m_j that most reduces the label's entropy (the information the missingness pattern
carries about Y, the quantity Feng et al.'s bound is about), among the splits whose two children each keep
at least ``min_cell`` rows in every (group, label) cell present in the training data — so every cluster can
train a group-fair classifier ("fairness-aware splitting"). Splits with zero gain are not made; at most
``max_clusters`` leaves; ties between features are broken by the lowest column index.

Prediction routes a row by its own pattern to its cluster's fair model. ``prediction="model"`` (the default)
returns that model's own prediction — its ``predict``, seeded with ``random_state`` (and the cluster's index)
when it takes one: fairlearn's ExponentiatedGradient predicts by a randomized draw, and its fairness guarantee
is about that randomized classifier, so its labels are drawn as the fairlearn baselines' are.
``prediction="threshold"`` returns 1 where the model's P(y = 1) exceeds 0.5 instead: deterministic, but for a
randomized fair model a different classifier from the one the constraint was fitted for. ``predict_proba`` is
the cluster model's P(y = 1) under both. The paper applies an off-the-shelf fairness intervention to each
cluster and predicts with it, which is ``prediction="model"``.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from fairmiss.learners.feng2023.bag import _MissingAwareBinary, _proba1, own_predict

__all__ = ["PatternClusterClassifier"]


def _entropy(y) -> float:
    if len(y) == 0:
        return 0.0
    p = np.bincount(y, minlength=2) / len(y)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


class PatternClusterClassifier(_MissingAwareBinary, ClassifierMixin, BaseEstimator):
    """Missing-pattern clusters with a fair model each (module docstring). ``prediction="model"`` (default): the
    cluster model's own (seeded) prediction; ``"threshold"``: its P(y = 1) > 0.5."""

    def __init__(self, estimator=None, min_cell: int = 20, max_clusters: int = 4, fit_groups: bool = True,
                 predict_groups: bool = False, prediction: str = "model", random_state: int | None = 0):
        self.estimator = estimator
        self.min_cell = min_cell
        self.max_clusters = max_clusters
        self.fit_groups = fit_groups
        self.predict_groups = predict_groups
        self.prediction = prediction
        self.random_state = random_state

    def _ok(self, rows_y, rows_s, cells) -> bool:
        return all(((rows_s == g) & (rows_y == c)).sum() >= self.min_cell for g, c in cells)

    def fit(self, X, y, sensitive_features=None):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite="allow-nan", reset=True)
        check_classification_targets(y)
        if self.prediction not in ("model", "threshold"):
            raise ValueError(f"prediction must be 'model' or 'threshold', got {self.prediction!r}")
        self.classes_ = np.unique(y)
        if len(self.classes_) > 2:
            raise ValueError("Only binary classification is supported. The type of the target is multiclass.")
        if len(self.classes_) < 2:
            raise ValueError(f"PatternClusterClassifier needs 2 classes in y; got 1 class ({self.classes_[0]})")
        yi = (y == self.classes_[1]).astype(int)
        s = np.zeros(len(y), dtype=int) if sensitive_features is None else np.asarray(sensitive_features)
        M = np.isnan(X)
        cells = sorted({(g, c) for g, c in zip(s.tolist(), yi.tolist())})
        # leaves: list of (conditions, row mask); a condition is (column, missing?)
        leaves = [((), np.ones(len(y), dtype=bool))]
        while len(leaves) < int(self.max_clusters):
            best = None
            for i, (cond, rows) in enumerate(leaves):
                h = _entropy(yi[rows])
                for j in np.flatnonzero(M[rows].any(axis=0)):
                    a, b = rows & M[:, j], rows & ~M[:, j]
                    if not (self._ok(yi[a], s[a], cells) and self._ok(yi[b], s[b], cells)):
                        continue
                    gain = rows.sum() * h - a.sum() * _entropy(yi[a]) - b.sum() * _entropy(yi[b])
                    if gain > 1e-12 and (best is None or gain > best[0] + 1e-12):
                        best = (gain, i, int(j), a, b)
            if best is None:
                break
            _, i, j, a, b = best
            cond, _ = leaves.pop(i)
            leaves[i:i] = [(cond + ((j, True),), a), (cond + ((j, False),), b)]
        self.clusters_ = [cond for cond, _ in leaves]
        self.models_ = []
        for cond, rows in leaves:
            kw = {"sensitive_features": s[rows]} if self.fit_groups and sensitive_features is not None else {}
            self.models_.append(clone(self._base()).fit(np.nan_to_num(X[rows], nan=0.0), yi[rows], **kw))
        return self

    def assign(self, X) -> np.ndarray:
        """The cluster index of every row (by its missingness pattern)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan", reset=False)
        M = np.isnan(X)
        out = np.full(len(X), -1)
        for k, cond in enumerate(self.clusters_):
            sel = np.ones(len(X), dtype=bool)
            for j, missing in cond:
                sel &= M[:, j] == missing
            out[sel & (out < 0)] = k
        return out

    def predict_proba(self, X, sensitive_features=None):
        k = self.assign(X)
        X = np.nan_to_num(np.asarray(X, dtype=float), nan=0.0)
        s = np.zeros(len(X), dtype=int) if sensitive_features is None else np.asarray(sensitive_features)
        p1 = np.zeros(len(X))
        for c, est in enumerate(self.models_):
            sel = k == c
            if sel.any():
                kw = {"sensitive_features": s[sel]} if self.predict_groups else {}
                p1[sel] = _proba1(est, X[sel], kw)
        return np.stack([1 - p1, p1], axis=1)

    def predict(self, X, sensitive_features=None, random_state=None):
        """``prediction="model"``: the row's cluster model's own prediction (seeded with ``random_state``,
        default the estimator's, and the cluster's index, when the model draws its labels); ``"threshold"``:
        1 where that model's P(y = 1) exceeds 0.5."""
        check_is_fitted(self)
        if self.prediction == "threshold":
            return self.classes_[(self.predict_proba(X, sensitive_features)[:, 1] > 0.5).astype(int)]
        k = self.assign(X)
        X = np.nan_to_num(np.asarray(X, dtype=float), nan=0.0)
        s = np.zeros(len(X), dtype=int) if sensitive_features is None else np.asarray(sensitive_features)
        seed = self.random_state if random_state is None else random_state
        seeds = np.random.SeedSequence(0 if seed is None else int(seed)).generate_state(len(self.models_))
        out = np.zeros(len(X), dtype=int)
        for c, est in enumerate(self.models_):
            sel = k == c
            if sel.any():
                kw = {"sensitive_features": s[sel]} if self.predict_groups else {}
                out[sel] = own_predict(est, X[sel], kw, int(seeds[c] % (2**31 - 1))).astype(int)
        return self.classes_[out]
