"""Non-projection comparators of spec 002 §4: group ignored, group as covariate, Pope & Sydnor.

:class:`GroupCovariateModel` wraps any scikit-learn estimator (by default a
``LogisticRegression``) and appends one-hot group dummies (first level dropped) to ``X``:

* ``strategy="unaware"``: the group is not used at all ("fairness through unawareness";
  the paper's SVD / OR columns).
* ``strategy="covariate"``: fit and predict with the group dummies (SVD,Z / OR Z).
* ``strategy="zero"``: fit with the dummies, predict with them set to zero, i.e. the group
  coefficients zeroed (Pope & Sydnor 2011; the paper's OR Z0). Every row is scored as the
  reference (first) level.
* ``strategy="mean"``: fit with the dummies, predict with their training means (Pope & Sydnor's
  z-bar variant; for a linear predictor this shifts every score by the same constant).

For a linear model, feeding zeros (or means) is exactly zeroing (or averaging) the group
coefficients; for a non-linear estimator it is the analogous substitution.
"""

from __future__ import annotations

import logging
from typing import Literal

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils.validation import check_is_fitted
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

logger = logging.getLogger(__name__)

__all__ = ["GroupCovariateModel"]


def _estimator_has(attr: str):
    def check(self):
        return hasattr(self.estimator_ if hasattr(self, "estimator_") else self._resolved(), attr)

    return check


def _as_2d(sensitive_features) -> np.ndarray:
    G = sensitive_features
    if isinstance(G, pd.Series):
        G = G.to_frame()
    G = G.to_numpy() if isinstance(G, pd.DataFrame) else np.asarray(G)
    return G.reshape(-1, 1) if G.ndim == 1 else G


class GroupCovariateModel(MetaEstimatorMixin, BaseEstimator):
    """Wrap an estimator with the group unused, as a covariate, or Pope & Sydnor-neutralised.

    Parameters
    ----------
    estimator : estimator or None, default=None
        Any scikit-learn estimator; ``None`` means ``LogisticRegression(max_iter=1000)``.
        It is cloned into ``estimator_`` and never mutated.
    strategy : {"zero", "mean", "covariate", "unaware"}, default="zero"
        How the group enters (see the module docstring).

    Attributes
    ----------
    estimator_ : estimator
        Fitted clone of ``estimator``.
    group_encoder_ : OneHotEncoder or None
        Encoder of the sensitive features (None for ``"unaware"``).
    group_means_ : ndarray of shape (n_dummies,) or None
        Training means of the dummies (used by ``"mean"``).
    classes_ : ndarray
        Class labels (classifiers only).
    n_features_in_ : int
        Number of columns of ``X`` (without the dummies).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X, z = rng.normal(size=(50, 2)), rng.integers(0, 2, 50)
    >>> y = X[:, 0] + 2 * z
    >>> m = GroupCovariateModel(estimator=LinearRegression(), strategy="zero")
    >>> m = m.fit(X, y, sensitive_features=z)
    >>> bool(np.allclose(m.predict(X, sensitive_features=z), X[:, 0], atol=1e-8))
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "strategy": [StrOptions({"zero", "mean", "covariate", "unaware"})],
    }

    def __init__(self, *, estimator=None, strategy: Literal["zero", "mean", "covariate", "unaware"] = "zero"):
        self.estimator = estimator
        self.strategy = strategy

    def _resolved(self):
        return LogisticRegression(max_iter=1000) if self.estimator is None else self.estimator

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self._resolved().__sklearn_tags__()
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        return tags

    def _augment(self, X, sensitive_features, *, fit: bool) -> np.ndarray:
        if self.strategy == "unaware":
            return X
        if fit:
            if sensitive_features is None:
                raise ValueError(f"strategy={self.strategy!r} needs sensitive_features in fit.")
            G = _as_2d(sensitive_features)
            if np.any(pd.isna(G)):
                raise ValueError("sensitive_features contains missing values.")
            self.group_encoder_ = OneHotEncoder(drop="first", sparse_output=False, dtype=float)
            D = self.group_encoder_.fit_transform(G)
            self.group_means_ = D.mean(axis=0)
        elif self.strategy == "covariate":
            if sensitive_features is None:
                raise ValueError("strategy='covariate' needs sensitive_features at prediction time.")
            D = self.group_encoder_.transform(_as_2d(sensitive_features))
        elif self.strategy == "zero":
            D = np.zeros((len(X), self.group_means_.size))
        else:  # mean
            D = np.tile(self.group_means_, (len(X), 1))
        if len(D) != len(X):
            raise ValueError(f"sensitive_features has {len(D)} rows but X has {len(X)}.")
        return np.column_stack([X, D])

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the wrapped estimator on ``[X, dummies(sensitive_features)]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.
        y : array-like of shape (n_samples,)
            Target.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_groups)
            Group; required unless ``strategy="unaware"``.
        sample_weight : array-like of shape (n_samples,) or None
            Passed to the estimator's ``fit`` when given.

        Returns
        -------
        self : object
            Fitted model.
        """
        X = validate_data(self, X, dtype=np.float64)
        if self.strategy == "unaware":
            self.group_encoder_, self.group_means_ = None, None
        Xa = self._augment(X, sensitive_features, fit=True)
        self.estimator_ = clone(self._resolved())
        kw = {} if sample_weight is None else {"sample_weight": sample_weight}
        self.estimator_.fit(Xa, y, **kw)
        if hasattr(self.estimator_, "classes_"):
            self.classes_ = self.estimator_.classes_
        logger.debug("GroupCovariateModel fit: strategy=%s, %d columns", self.strategy, Xa.shape[1])
        return self

    def _prepare(self, X, sensitive_features):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self._augment(X, sensitive_features, fit=False)

    def predict(self, X, *, sensitive_features=None):
        """Predict with the group handled by ``strategy``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.
        sensitive_features : array-like or None
            Needed only for ``strategy="covariate"``.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predictions.
        """
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict(self._prepare(X, sensitive_features))

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X, *, sensitive_features=None):
        """Class probabilities (classifiers).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.
        sensitive_features : array-like or None
            Needed only for ``strategy="covariate"``.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities.
        """
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict_proba(self._prepare(X, sensitive_features))

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X, *, sensitive_features=None):
        """Linear predictor / decision score.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.
        sensitive_features : array-like or None
            Needed only for ``strategy="covariate"``.

        Returns
        -------
        ndarray
            Decision scores.
        """
        check_is_fitted(self, "estimator_")
        return self.estimator_.decision_function(self._prepare(X, sensitive_features))
