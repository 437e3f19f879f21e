"""Missing-pattern clustering with a fair classifier per cluster (Feng, Calmon & Wang 2023, intervention iii),
in a simple form: the data are split greedily, like a decision tree whose only questions are "is feature j
missing?", and a clone of the fair ``estimator`` is fitted on each leaf (cluster) on zero-imputed features.

Two splitting rules, each at most ``max_clusters`` leaves, ties between features broken by the lowest column index:

- ``split="loss"``, the paper's (§4.3, Algorithm 1): every cluster, in turn (breadth first), is split on the
  feature j whose two children (m_j = 1 / m_j = 0) have the smallest summed loss L(M_q, j) of a logistic
  regression fitted on each child's zero-imputed features — fitted on the cluster's training part and its log
  loss summed on a validation part held out of the training data (``validation``, stratified by group × label
  and seeded: "we reserve part of the training set as validation to calculate the clustering objective
  function", §6.2) — and only when L is below the unsplit cluster's own loss, so the total loss never increases.
  A feature is a candidate only when both children keep at least ``min_size`` rows (the paper's k) and every
  group's share within [``beta``, ``alpha``] (bounded representation). A child whose training part has one class
  only has no logistic fit and is not a candidate. The logistic regression is scikit-learn's with its default
  L2 penalty (C = 1), for a finite fit on separable children; the paper's ``min_w`` is unpenalised. The
  defaults ``alpha`` = 1, ``beta`` = 0, ``min_size`` = 50 are ours (the paper names the parameters, not its
  values in the main text).
- ``split="entropy"`` (the default, fairmiss's simple form): a cluster is split on the missingness indicator m_j
  that most reduces the label's entropy (the information the missingness pattern carries about Y, the quantity
  Feng et al.'s bound is about), among the splits whose two children each keep at least ``min_cell`` rows in
  every (group, label) cell present in the training data — so every cluster can train a group-fair classifier
  ("fairness-aware splitting"). Splits with zero gain are not made.

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
                 predict_groups: bool = False, prediction: str = "model", random_state: int | None = 0,
                 split: str = "entropy", alpha: float = 1.0, beta: float = 0.0, min_size: int = 50,
                 validation: float = 0.3):
        self.estimator = estimator
        self.min_cell = min_cell
        self.max_clusters = max_clusters
        self.split = split
        self.alpha = alpha
        self.beta = beta
        self.min_size = min_size
        self.validation = validation
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
        if self.split not in ("entropy", "loss"):
            raise ValueError(f"split must be 'entropy' or 'loss', got {self.split!r}")
        M = np.isnan(X)
        leaves = (self._entropy_leaves(M, yi, s) if self.split == "entropy"
                  else self._loss_leaves(np.nan_to_num(X, nan=0.0), M, yi, s))
        self.clusters_ = [cond for cond, _ in leaves]
        self.models_ = []
        for cond, rows in leaves:
            kw = {"sensitive_features": s[rows]} if self.fit_groups and sensitive_features is not None else {}
            self.models_.append(clone(self._base()).fit(np.nan_to_num(X[rows], nan=0.0), yi[rows], **kw))
        return self

    def _loss_leaves(self, X0, M, yi, s) -> list:
        """The paper's recursive partitioning (module docstring, ``split="loss"``)."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import log_loss

        rng = np.random.default_rng(np.random.SeedSequence([0 if self.random_state is None else
                                                            int(self.random_state), 1]))
        val = np.zeros(len(yi), dtype=bool)
        for g, c in sorted({(g, c) for g, c in zip(s.tolist(), yi.tolist())}):
            idx = np.flatnonzero((s == g) & (yi == c))
            val[rng.permutation(idx)[:int(round(self.validation * len(idx)))]] = True
        groups = np.unique(s)

        def loss(rows) -> float | None:
            fit, ev = rows & ~val, rows & val
            if len(np.unique(yi[fit])) < 2:
                return None
            if not ev.any():
                return 0.0
            lr = LogisticRegression(max_iter=1000).fit(X0[fit], yi[fit])
            return float(log_loss(yi[ev], lr.predict_proba(X0[ev])[:, 1], labels=[0, 1], normalize=False))

        def admissible(rows) -> bool:
            n = rows.sum()
            shares = [((s == g) & rows).sum() / n for g in groups] if n else [0.0]
            return n >= self.min_size and all(self.beta <= q <= self.alpha for q in shares)

        done, queue = [], [((), np.ones(len(yi), dtype=bool))]
        while queue and len(done) + len(queue) < int(self.max_clusters):
            cond, rows = queue.pop(0)
            whole, best = loss(rows), None
            for j in np.flatnonzero(M[rows].any(axis=0) & (~M[rows]).any(axis=0)):
                a, b = rows & M[:, j], rows & ~M[:, j]
                if not (admissible(a) and admissible(b)):
                    continue
                la, lb = loss(a), loss(b)
                if la is not None and lb is not None and (best is None or la + lb < best[0] - 1e-12):
                    best = (la + lb, int(j), a, b)
            if best is None or whole is None or not best[0] < whole - 1e-12:
                done.append((cond, rows))
                continue
            _, j, a, b = best
            queue += [(cond + ((j, True),), a), (cond + ((j, False),), b)]
        return done + queue  # clusters are disjoint: their order only numbers them (and their models' seeds)

    def _entropy_leaves(self, M, yi, s) -> list:
        """fairmiss's simple form (module docstring, ``split="entropy"``)."""
        cells = sorted({(g, c) for g, c in zip(s.tolist(), yi.tolist())})
        # leaves: list of (conditions, row mask); a condition is (column, missing?)
        leaves = [((), np.ones(len(yi), dtype=bool))]
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
        return leaves

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
