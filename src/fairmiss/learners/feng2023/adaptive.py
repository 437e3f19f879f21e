"""Affinely adaptive features (Feng, Calmon & Wang 2023, §4.1) as a scikit-learn transformer.

A linear classifier whose coefficients are affine in the missingness pattern m, w(m) = w_0 + Σ_k m_k w_k,
is a linear classifier on the features

    x̃_j = (1 − m_j) x_j          (zero imputation),
    m_k                            (missingness indicators: the intercept moves with the pattern),
    m_k (1 − m_j) x_j  for j ≠ k   (the coefficient of x_j moves when x_k is missing),

for every column k that had missing values at fit (m_k(1 − m_k)x_k = 0 is left out). Any learner can follow
:class:`AdaptiveFeatures`; :class:`AdaptThen` chains it in front of a fitted-with-groups estimator so the
group keyword reaches the estimator (``sensitive_features`` in ``fit``/``predict``). Columns without a
missing value at fit keep no indicator; a NaN met only at transform time is zero-imputed.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["AdaptiveFeatures", "AdaptThen"]


class AdaptiveFeatures(TransformerMixin, BaseEstimator):
    """``indicators``: append m_k; ``interactions``: append m_k(1 − m_j)x_j (both for the columns k with a
    missing value at fit). Output columns: the d zero-imputed features first (same order, so column
    indices into X stay valid), then the K indicators, then the K·(d − 1) interactions (k-major)."""

    def __init__(self, indicators: bool = True, interactions: bool = True):
        self.indicators = indicators
        self.interactions = interactions

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def fit(self, X, y=None):
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan", reset=True)
        self.missing_columns_ = np.flatnonzero(np.isnan(X).any(axis=0))
        return self

    def transform(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan", reset=False)
        M = np.isnan(X)
        X0 = np.where(M, 0.0, X)
        parts = [X0]
        K = self.missing_columns_
        if self.indicators and K.size:
            parts.append(M[:, K].astype(float))
        if self.interactions and K.size:
            d = X.shape[1]
            for k in K:
                others = [j for j in range(d) if j != k]
                parts.append(M[:, [k]] * X0[:, others])
        return np.hstack(parts)

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self)
        names = (list(input_features) if input_features is not None
                 else [f"x{j}" for j in range(self.n_features_in_)])
        out = list(names)
        if self.indicators:
            out += [f"missing_{names[k]}" for k in self.missing_columns_]
        if self.interactions:
            out += [f"missing_{names[k]}*{names[j]}" for k in self.missing_columns_ for j in range(len(names))
                    if j != k]
        return np.asarray(out, dtype=object)


class AdaptThen(ClassifierMixin, BaseEstimator):
    """:class:`AdaptiveFeatures` then ``estimator``; keyword data (``sensitive_features``, ``random_state``)
    go to the estimator's ``fit`` / ``predict`` / ``predict_proba`` unchanged."""

    def __init__(self, estimator, indicators: bool = True, interactions: bool = True):
        self.estimator = estimator
        self.indicators = indicators
        self.interactions = interactions

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def fit(self, X, y, **kw):
        self.features_ = AdaptiveFeatures(self.indicators, self.interactions).fit(X)
        self.n_features_in_ = self.features_.n_features_in_
        self.estimator_ = clone(self.estimator).fit(self.features_.transform(X), y, **kw)
        self.classes_ = getattr(self.estimator_, "classes_", np.unique(np.asarray(y)))
        return self

    def predict(self, X, **kw):
        check_is_fitted(self)
        return self.estimator_.predict(self.features_.transform(X), **kw)

    def predict_proba(self, X, **kw):
        check_is_fitted(self)
        return self.estimator_.predict_proba(self.features_.transform(X), **kw)

    @property
    def _pmf_predict(self):
        """fairlearn ExponentiatedGradient's P(y = 1) through the features, only when the estimator has it
        (the learner adapter asks ``hasattr``)."""
        est = getattr(self, "estimator_", self.estimator)
        if not hasattr(est, "_pmf_predict"):
            raise AttributeError("_pmf_predict")
        return lambda X, **kw: est._pmf_predict(self.features_.transform(X), **kw)

    @property
    def fit_metrics_(self):
        return getattr(getattr(self, "estimator_", None), "fit_metrics_", None)
