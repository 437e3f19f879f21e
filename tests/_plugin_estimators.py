"""Estimators a user would write in their own module and name by import path in a config
(``kind: estimator``); importable because ``tests/`` is on ``sys.path`` under pytest (the CLI tests put it on
``PYTHONPATH``)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin


class GroupMajority(ClassifierMixin, BaseEstimator):
    """Predicts each group's majority training label; takes the group as ``sensitive_features`` (fairlearn
    convention) at fit and predict and records the groups it received."""

    def __init__(self, tie: int = 1):
        self.tie = tie

    def fit(self, X, y, sensitive_features):
        s, y = np.asarray(sensitive_features), np.asarray(y)
        self.classes_ = np.unique(y)
        self.fit_groups_ = s.copy()
        self.rule_ = {g: int(y[s == g].mean() > 0.5) if y[s == g].mean() != 0.5 else self.tie for g in np.unique(s)}
        return self

    def predict(self, X, sensitive_features):
        s = np.asarray(sensitive_features)
        self.predict_groups_ = s.copy()
        return np.array([self.rule_.get(g, self.tie) for g in s])


class ColumnMeans(TransformerMixin, BaseEstimator):
    """A mean imputer without add_indicator (fills NaN with training column means)."""

    def __init__(self, offset: float = 0.0):
        self.offset = offset

    def fit(self, X, y=None):
        self.means_ = np.nan_to_num(np.nanmean(np.asarray(X, dtype=float), axis=0)) + self.offset
        return self

    def transform(self, X):
        X = np.array(X, dtype=float)
        r, c = np.where(np.isnan(X))
        X[r, c] = self.means_[c]
        return X
