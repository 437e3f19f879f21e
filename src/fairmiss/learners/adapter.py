"""The adapter every learner is called through (:class:`Learner`), the base of every learner spec
(:class:`_LearnerBase`) and the registry of learner kinds (:data:`LEARNER_KINDS`): each kind's spec
and factory live beside its estimator and register there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
from pydantic import Field
from sklearn.base import clone
from sklearn.model_selection import train_test_split

from fairmiss._registry import Registry
from fairmiss._spec import SafeLabel, _Strict

__all__ = ['Learner', 'LEARNER_KINDS']


@dataclass
class Learner:
    """An unfitted estimator plus how to call it."""

    estimator: object
    needs_sensitive_fit: bool = False
    needs_sensitive_predict: bool = False
    carve_validation: float | None = None  # fit the post-processor on a split carved from train
    randomized_predict: bool = False  # predict samples (fairlearn EG): pass the cell's seed
    seed: int = 0
    info: dict = field(default_factory=dict)

    def fit(self, X, y, sensitive_features):
        est = self.estimator
        if self.carve_validation:
            # Hardt et al.: base model on train-minus-validation, thresholds on validation.
            tr, va = train_test_split(
                np.arange(len(y)), test_size=self.carve_validation, random_state=self.seed,
                stratify=np.asarray(sensitive_features).astype(str) + "|" + np.asarray(y).astype(str),
            )
            base = clone(est.estimator).fit(X[tr], y[tr])
            est.set_params(estimator=base, prefit=True)
            est.fit(X[va], y[va], sensitive_features=np.asarray(sensitive_features)[va])
        elif self.needs_sensitive_fit:
            est.fit(X, y, sensitive_features=sensitive_features)
        else:
            est.fit(X, y)
        return self

    def predict(self, X, sensitive_features):
        if self.needs_sensitive_predict:
            kw = {"random_state": self.seed} if self.carve_validation else {}  # randomized post-processor
            return np.asarray(self.estimator.predict(X, sensitive_features=sensitive_features, **kw))
        if self.randomized_predict:
            return np.asarray(self.estimator.predict(X, random_state=self.seed))
        return np.asarray(self.estimator.predict(X))

    def score(self, X, sensitive_features):
        """Scores for AUC: P(y = 1) where the estimator offers it, else the hard prediction."""
        est = self.estimator
        if not self.needs_sensitive_predict and hasattr(est, "_pmf_predict"):  # fairlearn EG: P(y=1), not a draw
            return np.asarray(est._pmf_predict(X))[:, 1]
        if not self.needs_sensitive_predict and hasattr(est, "predict_proba"):
            try:
                return np.asarray(est.predict_proba(X))[:, 1]
            except (AttributeError, NotImplementedError):
                pass
        if self.needs_sensitive_predict and hasattr(est, "_pmf_predict"):
            return np.asarray(est._pmf_predict(X, sensitive_features=sensitive_features))[:, 1]
        if self.needs_sensitive_predict and hasattr(est, "predict_proba"):
            return np.asarray(est.predict_proba(X, sensitive_features=sensitive_features))[:, 1]
        return self.predict(X, sensitive_features).astype(float)

    @property
    def plain_forest(self) -> bool:
        """A scikit-learn forest called plainly (no groups, no seed, no carved validation): its labels are the
        argmax of its probabilities, and predicting changes nothing in it (so a fit group's later cells may use the
        fitted forest itself instead of a deep copy: ~0.06 s for 300 trees)."""
        from sklearn.ensemble import RandomForestClassifier  # its predict is every scikit-learn forest's

        return not (self.needs_sensitive_predict or self.randomized_predict or self.carve_validation) \
            and type(self.estimator).predict is RandomForestClassifier.predict \
            and getattr(self.estimator, "n_outputs_", 1) == 1

    def predict_and_score(self, X, sensitive_features):
        """``(predict(X), score(X))`` in one pass where the estimator's labels are the argmax of the same
        probabilities: a scikit-learn forest's ``predict`` is ``classes_.take(argmax(predict_proba(X)))``, so its
        trees are walked once instead of twice (a 300-tree forest's evaluation of the test rows was two forest
        passes; bench/results/shift_tests.md). The arrays are the ones the two calls give. Other estimators: the
        two calls."""
        est = self.estimator
        if self.plain_forest:
            proba = np.asarray(est.predict_proba(X))
            return np.asarray(est.classes_.take(np.argmax(proba, axis=1), axis=0)), proba[:, 1]
        return self.predict(X, sensitive_features), self.score(X, sensitive_features)

    def fit_metrics(self) -> dict:
        """Numbers the fitted estimator reports about its own fit (e.g. the Fair MIP Forest's solver
        certificates), logged as cell metrics: the estimator's ``fit_metrics_`` dict of floats, if any."""
        got = getattr(self.estimator, "fit_metrics_", None)
        return {str(k): float(v) for k, v in got.items()} if isinstance(got, dict) else {}


class _LearnerBase(_Strict):
    name: SafeLabel | None = None
    #: restrict this learner to the named imputers (labels); None pairs it with every imputer (an empty list
    #: is refused: it would pair the learner with none, and the learner would silently have no cells)
    imputers: Annotated[list[str], Field(min_length=1)] | None = None

    @property
    def label(self) -> str:
        return self.name or self.kind


#: ``kind`` -> spec, factory ``(spec, seed, threads[, feature_names]) -> Learner`` and flags:
#: ``accepts_nan`` (NaN in X: the "none" imputer path), ``mi`` (wrappable by the multiple imputer),
#: ``needs_groups`` (``sensitive_features`` at fit), ``needs_feature_names`` (protected columns by name),
#: ``family`` (``baseline``, ``fairlearn`` or the paper method).
LEARNER_KINDS = Registry("learner")
