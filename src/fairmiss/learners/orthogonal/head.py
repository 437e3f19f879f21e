"""Project-then-head: a group-orthogonal projector (OG / SOG, fitted on the training rows) followed by a
head model — the one implementation, used by the ``orthogonal`` learner kind and by paper 002's HCP study
(:mod:`fairmiss.studies.p002_hcp`).

Test rows are mapped inductively (spec 002 §1.10 b): their group is used to remove its component, so
``sensitive_features`` is needed at fit and at predict time. The templates ``projector`` and ``head`` stay
unfitted (scikit-learn style): fitted clones are ``projector_`` and ``head_``.
"""

from __future__ import annotations

from sklearn.base import BaseEstimator, ClassifierMixin, clone

__all__ = ["ProjectedHead"]


class ProjectedHead(ClassifierMixin, BaseEstimator):
    def __init__(self, projector=None, head=None):
        self.projector = projector
        self.head = head

    def fit(self, X, y, sensitive_features=None):
        self.projector_ = clone(self.projector)
        S = self.projector_.fit_transform(X, sensitive_features=sensitive_features)
        self.head_ = clone(self.head).fit(S, y)
        self.classes_ = self.head_.classes_
        return self

    def _z(self, X, sensitive_features):
        return self.projector_.transform(X, sensitive_features=sensitive_features)

    def predict(self, X, sensitive_features=None):
        return self.head_.predict(self._z(X, sensitive_features))

    def predict_proba(self, X, sensitive_features=None):
        return self.head_.predict_proba(self._z(X, sensitive_features))
