"""FairMissBag (Feng, Calmon & Wang 2023, §5): a bagged ensemble of fair classifiers over imputed data.

For each of ``n_estimators`` resamples: a bootstrap stratified by (group, label) — exactly n_{s,y} rows drawn
with replacement from each (s, y) cell of the training data, so every resample keeps the cells' sizes —
then missingness indicators plus imputation fitted on the resample (scikit-learn's ``SimpleImputer`` with
``add_indicator``), then a clone of the fair ``estimator`` fitted on it with the resample's groups. Member k's
resample and seed derive from ``random_state`` and k only (``np.random.SeedSequence``), so a fit is
deterministic under the seed.

Prediction (``ensemble``):

* ``"random"`` (the default; the paper's rule, the one its Lemma 1 is about): for every row one member is drawn
  uniformly, and the row gets *that member's own prediction* — its ``predict``, so a randomized fair classifier
  (fairlearn's ExponentiatedGradient, ThresholdOptimizer) keeps its randomization, seeded. If every member
  satisfies equalized odds within ε, so does this ensemble (Lemma 1: its rates are the members' rates
  averaged). The draws come from a generator seeded with ``random_state`` at every call (or the
  ``random_state`` given to ``predict``): the same seed and the same rows give the same predictions. A row's
  prediction depends on its position in the batch, as fairlearn's randomized predictions do.
* ``"average"``: the members' P(y = 1) averaged, thresholded at 0.5 (a tie predicts the first class). The
  paper offers averaging the members' scores as an alternative for members that output scores ("an analogous
  argument justifies averaging the scores"); that argument is about the averaged score, not about thresholding
  it. The thresholded average is a deterministic classifier that Lemma 1 does not cover, and it need not keep
  the members' equalized odds (``tests/learners/test_feng2023_scoring.py`` builds a case where it does not).

``predict_proba`` is the members' averaged P(y = 1) under both rules (the score, e.g. for AUC). For members
whose P(y = 1) is the probability of their randomized prediction (fairlearn's reductions and post-processing)
it is exactly the probability that the ``"random"`` rule predicts 1.

The fair estimator takes ``sensitive_features`` in ``fit`` (``fit_groups=True``; the bootstrap is stratified by
the groups whenever they are given) (fairlearn reductions, the Fair MIP Forest,
Zafar…); ``predict_groups=True`` passes them at predict time too (post-processors such as fairlearn's
ThresholdOptimizer, fitted per member on ``carve_validation`` of the resample with the base model on the rest).
"""

from __future__ import annotations

import inspect

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.impute import SimpleImputer
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["FairMissBagClassifier", "stratified_bootstrap"]


def stratified_bootstrap(y, group, rng: np.random.Generator) -> np.ndarray:
    """Row indices of one bootstrap resample stratified by (group, label): for every (s, y) cell with
    n_c rows, n_c indices drawn uniformly with replacement from that cell (cells in sorted order)."""
    y, group = np.asarray(y), np.asarray(group)
    keys = np.unique(np.stack([group.astype(str), y.astype(str)], axis=1), axis=0)
    out = []
    for g, c in keys:
        rows = np.flatnonzero((group.astype(str) == g) & (y.astype(str) == c))
        out.append(rows[rng.integers(0, len(rows), size=len(rows))])
    return np.sort(np.concatenate(out)) if out else np.zeros(0, dtype=int)


def own_predict(est, X, kw, seed: int) -> np.ndarray:
    """``est``'s own prediction on ``X``: its ``predict`` with the keyword data ``kw``, and ``random_state=seed``
    when its ``predict`` takes one (a randomized classifier: fairlearn's ExponentiatedGradient and
    ThresholdOptimizer draw their labels)."""
    try:
        takes_seed = "random_state" in inspect.signature(est.predict).parameters
    except (TypeError, ValueError):
        takes_seed = False
    if takes_seed:
        return np.asarray(est.predict(X, random_state=int(seed), **kw))
    return np.asarray(est.predict(X, **kw))


def _proba1(est, X, kw) -> np.ndarray:
    if hasattr(est, "_pmf_predict"):  # fairlearn ExponentiatedGradient: P(y = 1) of the randomized classifier
        return np.asarray(est._pmf_predict(X, **kw))[:, 1]
    if hasattr(est, "predict_proba"):
        try:
            return np.asarray(est.predict_proba(X, **kw))[:, 1]
        except (AttributeError, NotImplementedError):
            pass
    return np.asarray(est.predict(X, **kw), dtype=float)


class _MissingAwareBinary:
    """What the Feng et al. meta-estimators share: they take NaN (scikit-learn tag), are binary only, and wrap
    ``estimator`` (default: a logistic regression)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.classifier_tags.multi_class = False
        return tags

    def _base(self):
        if self.estimator is not None:
            return self.estimator
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=1000)


class FairMissBagClassifier(_MissingAwareBinary, ClassifierMixin, BaseEstimator):
    """FairMissBag (module docstring). ``ensemble="random"`` (default): each row gets the prediction of one
    member drawn uniformly (the paper's rule, seeded by ``random_state``); ``ensemble="average"``: the members'
    averaged P(y = 1) > 0.5, deterministic, outside Lemma 1 and need not keep equalized odds.

    Under either rule the predictions are deterministic given ``random_state`` and the batch, so scikit-learn's
    ``non_deterministic`` tag is not set; the random rule's labels depend on the batch (a row's draw depends on
    its position), which scikit-learn's sample-order and subset invariance checks reject."""

    def __init__(self, estimator=None, n_estimators: int = 10, strategy: str = "mean", add_indicator: bool = True,
                 ensemble: str = "random", fit_groups: bool = True, predict_groups: bool = False,
                 carve_validation: float | None = None, random_state: int | None = 0):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.strategy = strategy
        self.add_indicator = add_indicator
        self.ensemble = ensemble
        self.fit_groups = fit_groups
        self.predict_groups = predict_groups
        self.carve_validation = carve_validation
        self.random_state = random_state

    def fit(self, X, y, sensitive_features=None):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite="allow-nan", reset=True)
        check_classification_targets(y)
        if len(np.unique(y)) > 2:
            raise ValueError("Only binary classification is supported. The type of the target is "
                             f"{type_of_target(y)}.")
        if self.ensemble not in ("average", "random"):
            raise ValueError(f"ensemble must be 'average' or 'random', got {self.ensemble!r}")
        if int(self.n_estimators) < 1:
            raise ValueError(f"n_estimators must be >= 1, got {self.n_estimators}")
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(f"FairMissBag needs 2 classes in y; got 1 class ({self.classes_[0]})")
        yi = (y == self.classes_[1]).astype(int)
        s = np.zeros(len(y), dtype=int) if sensitive_features is None else np.asarray(sensitive_features)
        if len(s) != len(y):
            raise ValueError(f"sensitive_features has {len(s)} entries, X has {len(y)} rows")
        seeds = np.random.SeedSequence(0 if self.random_state is None else int(self.random_state)).spawn(
            int(self.n_estimators))
        self.members_, self.resamples_ = [], []
        for ss in seeds:
            rng = np.random.default_rng(ss)
            idx = stratified_bootstrap(yi, s, rng)
            imp = SimpleImputer(strategy=self.strategy, add_indicator=self.add_indicator,
                                keep_empty_features=True).fit(X[idx])
            Z, yb, sb = imp.transform(X[idx]), yi[idx], s[idx]
            est = clone(self._base())
            seed = int(rng.integers(0, 2**31 - 1))
            if "random_state" in est.get_params():
                est.set_params(random_state=seed)
            kw = {"sensitive_features": sb} if self.fit_groups and sensitive_features is not None else {}
            if self.carve_validation:
                cut = rng.random(len(yb)) < float(self.carve_validation)
                base = clone(est.estimator).fit(Z[~cut], yb[~cut])
                est.set_params(estimator=base, prefit=True)
                est.fit(Z[cut], yb[cut], **{k: v[cut] for k, v in kw.items()})
            else:
                est.fit(Z, yb, **kw)
            self.members_.append((imp, est))
            self.resamples_.append(idx)
        return self

    def _inputs(self, X, sensitive_features):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan", reset=False)
        s = None
        if self.predict_groups:
            s = np.zeros(len(X), dtype=int) if sensitive_features is None else np.asarray(sensitive_features)
            if len(s) != len(X):
                raise ValueError(f"sensitive_features has {len(s)} entries, X has {len(X)} rows")
        return X, s

    def predict_proba(self, X, sensitive_features=None):
        """The members' averaged P(y = 1) (under both rules; see the module docstring)."""
        X, s = self._inputs(X, sensitive_features)
        kw = {} if s is None else {"sensitive_features": s}
        p1 = np.mean([_proba1(est, imp.transform(X), kw) for imp, est in self.members_], axis=0)
        return np.stack([1 - p1, p1], axis=1)

    def predict(self, X, sensitive_features=None, random_state=None):
        """``ensemble="random"``: every row gets the own (possibly randomized) prediction of one member drawn
        uniformly, from a generator seeded with ``random_state`` (default: the estimator's). ``"average"``: 1
        where the members' averaged P(y = 1) exceeds 0.5 (a tie predicts the first class)."""
        if self.ensemble == "average":
            p1 = self.predict_proba(X, sensitive_features)[:, 1]
            return self.classes_[(p1 > 0.5).astype(int)]
        X, s = self._inputs(X, sensitive_features)
        seed = self.random_state if random_state is None else random_state
        rng = np.random.default_rng(0 if seed is None else int(seed))
        member_seeds = rng.integers(0, 2**31 - 1, size=len(self.members_))
        pick = rng.integers(0, len(self.members_), size=len(X))
        out = np.zeros(len(X), dtype=int)
        for k, (imp, est) in enumerate(self.members_):
            rows = np.flatnonzero(pick == k)
            if rows.size:
                kw = {} if s is None else {"sensitive_features": s[rows]}
                out[rows] = own_predict(est, imp.transform(X[rows]), kw, member_seeds[k]).astype(int)
        return self.classes_[out]
