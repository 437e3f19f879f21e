"""Paper 003's learner kind ``equality_constrained``: its spec, the fit-then-equalise wrapper and the factory.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase

__all__ = ['EqualityConstrainedSpec']


class EqualityConstrainedSpec(_LearnerBase):
    """Paper 003's post-hoc leaf adjustment on a tree ensemble, reference set = training split."""

    kind: Literal["equality_constrained"] = "equality_constrained"
    base: Literal["random_forest", "decision_tree", "xgboost"] = "random_forest"
    n_estimators: Annotated[int, Field(ge=1)] = 100
    max_depth: Annotated[int, Field(ge=1)] | None = None
    mode: Literal["compressed", "explicit"] = "explicit"
    bounds: tuple[float, float] | None = None


def _eqtree(spec, seed, threads):
    from fairmiss.learners.equality_trees.eqtree import EqualityConstrainedTrees

    if spec.base == "random_forest":
        base = RandomForestClassifier(n_estimators=spec.n_estimators, max_depth=spec.max_depth, n_jobs=threads,
                                      random_state=seed)
    elif spec.base == "decision_tree":
        base = DecisionTreeClassifier(max_depth=spec.max_depth, random_state=seed)
    else:
        from xgboost import XGBClassifier

        base = XGBClassifier(n_estimators=spec.n_estimators, max_depth=spec.max_depth or 3, n_jobs=threads,
                             random_state=seed)
    return Learner(_FitThenEqualise(base, EqualityConstrainedTrees(mode=spec.mode, bounds=spec.bounds)),
                   needs_sensitive_fit=True)


class _FitThenEqualise(ClassifierMixin, BaseEstimator):
    """Fit a tree model, then equalise group means of its scores on the training split (003). The constructor's
    estimators stay unfitted (scikit-learn's convention): ``fit`` fits clones, ``base_`` and ``post_``."""

    def __init__(self, base, post):
        self.base = base
        self.post = post

    def fit(self, X, y, sensitive_features):
        self.base_ = clone(self.base).fit(X, y)
        self.post_ = clone(self.post).set_params(estimator=self.base_)
        self.post_.fit(X, sensitive_features=sensitive_features)
        self.classes_ = self.base_.classes_
        return self

    def predict_proba(self, X):
        return self.post_.predict_proba(X)

    def predict(self, X):
        return (np.asarray(self.predict_proba(X))[:, 1] >= 0.5).astype(int)


LEARNER_KINDS.register("equality_constrained", EqualityConstrainedSpec, _eqtree, needs_groups=True,
                       family="equality_trees")
