"""Imputation estimators beyond :mod:`fairmiss.impute.build`'s plain scikit-learn factories.

* :class:`GroupImputer` -- one imputer per group (paper 000, Remark 1, remedy for factor 2 of
  Theorem 1). The group is data, passed as the keyword ``sensitive_features`` to ``fit`` and
  ``transform``, never a constructor parameter.
* :class:`MultipleImputationClassifier` / :class:`MultipleImputationRegressor` -- m stochastic
  imputations (``IterativeImputer(sample_posterior=True)``, one derived seed per draw), one model
  per completed training set, and test-time averaging of predictions over m test imputations
  (paper 001, Theorem 2 and eq. 5).
  Both are thin subclasses of one shared base (fit, draws, averaging); ``impute_draws`` exposes the
  m completed test matrices (the pipeline's diagnostics use them). Config: imputer ``kind: multiple``.
* :class:`MismatchImputer` -- the train/test mismatch mode of paper 000 §3.2: the imputer used at
  test time is estimated on the *test* data (or is a different imputer), while the training data
  are imputed with the train-fitted imputer.
* :class:`MaskAugmentedImputer` -- "+ mask" for any imputer that has no ``add_indicator``
  (paper 001 §2.3): the imputed matrix is followed by the missingness indicators of the columns
  that had missing values at fit time (as ``MissingIndicator(features="missing-only")``).

Constructors are keyword-only and store their parameters unchanged; all interpretation happens
in ``fit``. Randomness comes only from ``random_state``, resolved in ``fit``.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import threading
import weakref
from collections import OrderedDict

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin, clone
from sklearn.experimental import enable_iterative_imputer  # noqa: F401
from sklearn.impute import IterativeImputer, MissingIndicator, SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

logger = logging.getLogger(__name__)

__all__ = [
    "ImputerInputError",
    "GroupImputer",
    "MultipleImputationClassifier",
    "MultipleImputationRegressor",
    "MismatchImputer",
    "MaskAugmentedImputer",
    "requires_groups",
    "ALL_MISSING_IN_GROUP",
    "WRONG_LENGTH",
]

#: Error templates (tests import them).
ALL_MISSING_IN_GROUP = "column {column!r} is entirely missing in group {group!r}; cannot fit a per-group imputer"
WRONG_LENGTH = "sensitive_features has {n_s} entries but X has {n_x} rows"
UNSEEN_GROUP = "group value(s) {groups} were not seen in fit; fitted groups are {fitted}"


class ImputerInputError(ValueError):
    """Bad input to an imputer of this module (message names column and group)."""


def _default_imputer():
    return SimpleImputer(strategy="mean", keep_empty_features=True)


def _check_groups(sensitive_features, n_rows: int) -> np.ndarray:
    if sensitive_features is None:
        raise ImputerInputError("sensitive_features is required (pass it as a keyword argument)")
    s = np.asarray(sensitive_features)
    if s.ndim != 1:
        s = s.reshape(-1) if s.ndim == 2 and 1 in s.shape else s
    if s.ndim != 1 or len(s) != n_rows:
        raise ImputerInputError(WRONG_LENGTH.format(n_s=len(s) if s.ndim else 0, n_x=n_rows))
    if s.dtype.kind == "f" and np.isnan(s).any():
        raise ImputerInputError("sensitive_features contains missing values")
    return s


def _column_name(est, j: int):
    names = getattr(est, "feature_names_in_", None)
    return str(names[j]) if names is not None else j


def _group_key(g):
    return g.item() if hasattr(g, "item") else g


class _NaNTagsMixin:
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags


# --------------------------------------------------------------------------- GroupImputer
class GroupImputer(_NaNTagsMixin, TransformerMixin, BaseEstimator):
    """Impute each group with its own imputer (paper 000, Remark 1).

    Parameters
    ----------
    estimator : transformer, default=None
        Imputer cloned once per group; ``None`` means ``SimpleImputer(strategy="mean")``. It
        should not add indicator columns itself (use ``add_indicator`` here), so that every
        group yields the same output width.
    add_indicator : bool, default=False
        Append the missingness indicators of columns with missing values in the whole training
        set (one :class:`~sklearn.impute.MissingIndicator` shared by all groups).

    Attributes
    ----------
    groups_ : ndarray
        Group values seen in ``fit``.
    imputers_ : dict
        Fitted imputer per group value.
    indicator_ : MissingIndicator or None
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0], [np.nan], [10.0], [np.nan]])
    >>> GroupImputer().fit_transform(X, sensitive_features=[0, 0, 1, 1]).ravel().tolist()
    [1.0, 1.0, 10.0, 10.0]
    """

    def __init__(self, *, estimator=None, add_indicator=False):
        self.estimator = estimator
        self.add_indicator = add_indicator

    def fit(self, X, y=None, *, sensitive_features=None):
        """Fit one imputer per group.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data with NaN for missing entries.
        y : ignored
        sensitive_features : array-like of shape (n_samples,)
            Group of each row.

        Returns
        -------
        self : GroupImputer

        Raises
        ------
        ImputerInputError
            If ``sensitive_features`` has the wrong length, or a column is entirely missing
            within a group (the message names the column and the group).
        """
        X = validate_data(self, X, ensure_all_finite="allow-nan", dtype="numeric", reset=True)
        s = _check_groups(sensitive_features, X.shape[0])
        base = _default_imputer() if self.estimator is None else self.estimator
        self.groups_ = np.unique(s)
        self.imputers_ = {}
        for g in self.groups_:
            Xg = X[s == g]
            empty = np.flatnonzero(np.isnan(Xg).all(axis=0))
            if empty.size:
                raise ImputerInputError(ALL_MISSING_IN_GROUP.format(column=_column_name(self, empty[0]),
                                                                    group=_group_key(g)))
            self.imputers_[_group_key(g)] = clone(base).fit(Xg)
            logger.debug("GroupImputer: fitted group %r on %d rows", g, len(Xg))
        self.indicator_ = MissingIndicator(features="missing-only").fit(X) if self.add_indicator else None
        return self

    def transform(self, X, *, sensitive_features=None):
        """Impute each row with its group's imputer.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sensitive_features : array-like of shape (n_samples,)

        Returns
        -------
        X_out : ndarray of shape (n_samples, n_features [+ n_indicators])
        """
        check_is_fitted(self, "imputers_")
        X = validate_data(self, X, ensure_all_finite="allow-nan", dtype="numeric", reset=False)
        s = _check_groups(sensitive_features, X.shape[0])
        unseen = sorted(set(np.unique(s).tolist()) - set(self.imputers_))
        if unseen:
            raise ImputerInputError(UNSEEN_GROUP.format(groups=unseen, fitted=sorted(self.imputers_)))
        out = None
        for g, imp in self.imputers_.items():
            rows = np.flatnonzero(s == g)
            if rows.size == 0:
                continue
            Z = np.asarray(imp.transform(X[rows]), dtype=float)
            if out is None:
                out = np.empty((X.shape[0], Z.shape[1]))
            elif Z.shape[1] != out.shape[1]:
                raise ImputerInputError("per-group imputers return different widths; set add_indicator on "
                                        "GroupImputer rather than on the inner estimator")
            out[rows] = Z
        if out is None:
            out = np.empty((0, X.shape[1]))
        if self.indicator_ is not None:
            out = np.hstack([out, self.indicator_.transform(X).astype(float)])
        return out

    def fit_transform(self, X, y=None, *, sensitive_features=None):
        """Fit, then transform the same data (see :meth:`fit` and :meth:`transform`)."""
        return self.fit(X, y, sensitive_features=sensitive_features).transform(X, sensitive_features=sensitive_features)


# --------------------------------------------------------------------------- multiple imputation
#: recent test-time draws of multiple-imputation estimators (see ``impute_draws``)
_DRAW_CACHE: OrderedDict = OrderedDict()
_DRAW_CACHE_LOCK = threading.Lock()
_DRAW_CACHE_SIZE = 4


class _MultipleImputationBase(_NaNTagsMixin, BaseEstimator):
    """Shared machinery of the multiple-imputation twins (paper 001 §2.4, Theorem 2).

    For k = 1..m: draw a stochastic imputation of the training set (the imputer's ``random_state``
    set to the k-th seed derived from ``random_state``) and fit a clone of ``estimator`` on it. At
    prediction time the test set is imputed by the k-th imputer (a fresh posterior draw) and the m
    outputs are averaged (:meth:`_average`): probabilities for the classifier, predictions for the
    regressor. Subclasses set ``_y_numeric``, :meth:`_default_estimator`, :meth:`_check_targets`
    and their prediction methods.

    Parameters
    ----------
    estimator : estimator, default=None
        Model fitted on each completed training set; ``None`` means the subclass default.
    imputer : transformer, default=None
        Stochastic imputer; ``None`` means ``IterativeImputer(sample_posterior=True, max_iter=10)``.
        Its ``random_state`` (if any) is set to the derived seed of each draw.
    n_imputations : int, default=5
        Number of draws m.
    random_state : int, RandomState or None, default=None
        Resolved once in ``fit``; the m seeds are drawn from it.

    Attributes
    ----------
    seeds_ : ndarray of shape (m,)
    imputers_, estimators_ : list of fitted objects, one per draw
    """

    _y_numeric = False

    def __init__(self, *, estimator=None, imputer=None, n_imputations=5, random_state=None):
        self.estimator = estimator
        self.imputer = imputer
        self.n_imputations = n_imputations
        self.random_state = random_state

    def _default_estimator(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def _check_targets(self, y) -> None:
        """Validate targets and set fitted target attributes (``classes_``); default: nothing."""

    def fit(self, X, y):
        """Fit m (imputer, estimator) pairs, one per stochastic imputation of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), NaN for missing
        y : array-like of shape (n_samples,)

        Returns
        -------
        self

        Raises
        ------
        ValueError
            If ``n_imputations`` is not a positive integer.
        """
        X, y = validate_data(self, X, y, ensure_all_finite="allow-nan", dtype="numeric",
                             y_numeric=self._y_numeric, reset=True)
        self._check_targets(y)
        if not isinstance(self.n_imputations, int | np.integer) or self.n_imputations < 1:
            raise ValueError(f"n_imputations must be a positive integer, got {self.n_imputations!r}")
        rs = check_random_state(self.random_state)
        self.seeds_ = rs.randint(0, 2**31 - 1, size=self.n_imputations)
        base_imp = (IterativeImputer(sample_posterior=True, max_iter=10, keep_empty_features=True)
                    if self.imputer is None else self.imputer)
        base_est = self._default_estimator() if self.estimator is None else self.estimator
        self.imputers_, self.estimators_ = [], []
        for seed in self.seeds_:
            imp = clone(base_imp)
            if "random_state" in imp.get_params():
                imp.set_params(random_state=int(seed))
            Xk = imp.fit_transform(X)
            est = clone(base_est)
            if "random_state" in est.get_params():
                est.set_params(random_state=int(seed))
            est.fit(Xk, y)
            self.imputers_.append(imp)
            self.estimators_.append(est)
        logger.debug("%s: fitted %d imputation draws", type(self).__name__, self.n_imputations)
        return self

    def impute_draws(self, X) -> list[np.ndarray]:
        """The m completed versions of X used at prediction time (one per draw).

        Each fitted imputer is deep-copied before ``transform`` so that its internal random
        state is not advanced: repeated calls (and predictions) on the same X are identical.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        list of ndarray of shape (n_samples, n_features [+ indicators])
        """
        check_is_fitted(self, "estimators_")
        X = validate_data(self, X, ensure_all_finite="allow-nan", dtype="numeric", reset=False)
        # predict, predict_proba and the pipeline's diagnostics all ask for the draws of the same test
        # matrix; they are deterministic, so recent results are kept in a small module-level LRU keyed
        # by (estimator, fitted imputers, data hash) -- the estimator itself is never modified.
        digest = hashlib.sha1(np.ascontiguousarray(X, dtype=float).tobytes()).hexdigest()
        key = (id(self), X.shape, digest)
        with _DRAW_CACHE_LOCK:
            hit = _DRAW_CACHE.get(key)
            if hit is not None and hit[0]() is self and hit[1] is self.imputers_:
                _DRAW_CACHE.move_to_end(key)
                return [Z.copy() for Z in hit[2]]
        draws = [np.asarray(copy.deepcopy(imp).transform(X), dtype=float) for imp in self.imputers_]
        with _DRAW_CACHE_LOCK:
            _DRAW_CACHE[key] = (weakref.ref(self), self.imputers_, draws)
            _DRAW_CACHE.move_to_end(key)
            while len(_DRAW_CACHE) > _DRAW_CACHE_SIZE:
                _DRAW_CACHE.popitem(last=False)
        return [Z.copy() for Z in draws]

    def _average(self, X, output):
        """Mean over the m draws of ``output(estimator_k, k-th completed X)``."""
        total = None
        for est, Xk in zip(self.estimators_, self.impute_draws(X), strict=True):
            o = np.asarray(output(est, Xk), dtype=float)
            total = o if total is None else total + o
        return total / len(self.estimators_)


class MultipleImputationClassifier(ClassifierMixin, _MultipleImputationBase):
    """Multiple imputation with test-time averaging of predicted probabilities (paper 001, eq. 5).

    See :class:`_MultipleImputationBase` for the procedure and parameters; ``estimator=None``
    means ``LogisticRegression(max_iter=1000)``.

    Attributes
    ----------
    classes_ : ndarray
    seeds_ : ndarray of shape (m,)
    imputers_, estimators_ : list of fitted objects, one per draw

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); y = (X[:, 0] > 0).astype(int)
    >>> X[rng.random(X.shape) < 0.2] = np.nan
    >>> clf = MultipleImputationClassifier(n_imputations=3, random_state=0).fit(X, y)
    >>> clf.predict_proba(X).shape
    (200, 2)
    """

    def _default_estimator(self):
        return LogisticRegression(max_iter=1000)

    def _check_targets(self, y) -> None:
        check_classification_targets(y)
        self.classes_ = np.unique(y)

    def predict_proba(self, X):
        """Average of the m models' probabilities, each on its own test imputation.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        def proba(est, Xk):
            p = np.zeros((Xk.shape[0], len(self.classes_)))
            p[:, np.searchsorted(self.classes_, est.classes_)] = est.predict_proba(Xk)
            return p

        return self._average(X, proba)

    def predict(self, X):
        """Class with the largest averaged probability.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


class MultipleImputationRegressor(RegressorMixin, _MultipleImputationBase):
    """Regression counterpart of :class:`MultipleImputationClassifier` (averages predictions).

    See :class:`_MultipleImputationBase`; ``estimator=None`` means ``Ridge(alpha=1e-6)``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = X.sum(axis=1)
    >>> X[rng.random(X.shape) < 0.2] = np.nan
    >>> MultipleImputationRegressor(n_imputations=2, random_state=0).fit(X, y).predict(X).shape
    (200,)
    """

    _y_numeric = True

    def _default_estimator(self):
        return Ridge(alpha=1e-6)

    def predict(self, X):
        """Mean of the m models' predictions, each on its own test imputation.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._average(X, lambda est, Xk: est.predict(Xk))


# --------------------------------------------------------------------------- mismatch
class MismatchImputer(_NaNTagsMixin, TransformerMixin, BaseEstimator):
    """Train/test imputation mismatch (paper 000 §3.2, Theorem 2).

    ``fit(X_train)`` fits the *training* imputer; ``fit_transform`` imputes the training data
    with it. ``transform(X)`` imputes with the *test-time* imputer:

    * ``test_fit_on="test"`` (default): a fresh clone of ``test_estimator`` is fitted on the data
      being transformed -- the privacy scenario where the test-time imputer is estimated from
      test data. Nothing is stored by ``transform``.
    * ``test_fit_on="train"``: ``test_estimator`` is fitted on the training data in ``fit`` (e.g.
      a k-NN imputer at train time and a mean imputer at test time).

    Parameters
    ----------
    estimator : transformer, default=None
        Training-time imputer; ``None`` means mean imputation.
    test_estimator : transformer, default=None
        Test-time imputer; ``None`` means a clone of ``estimator``.
    test_fit_on : {"test", "train"}, default="test"

    Attributes
    ----------
    train_imputer_ : fitted transformer
    test_imputer_ : fitted transformer or None
        Set only when ``test_fit_on="train"``.

    Examples
    --------
    >>> import numpy as np
    >>> imp = MismatchImputer().fit(np.array([[0.0], [2.0], [np.nan]]))
    >>> imp.transform(np.array([[10.0], [np.nan]])).ravel().tolist()
    [10.0, 10.0]
    """

    def __init__(self, *, estimator=None, test_estimator=None, test_fit_on="test"):
        self.estimator = estimator
        self.test_estimator = test_estimator
        self.test_fit_on = test_fit_on

    def _test_base(self):
        if self.test_estimator is not None:
            return self.test_estimator
        return _default_imputer() if self.estimator is None else self.estimator

    def fit(self, X, y=None, *, sensitive_features=None):
        """Fit the training-time imputer (and the test-time one if ``test_fit_on="train"``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        sensitive_features : array-like of shape (n_samples,), optional
            Forwarded to the inner imputers (needed when they are :class:`GroupImputer`).

        Returns
        -------
        self
        """
        if self.test_fit_on not in ("test", "train"):
            raise ValueError(f"test_fit_on must be 'test' or 'train', got {self.test_fit_on!r}")
        X = validate_data(self, X, ensure_all_finite="allow-nan", dtype="numeric", reset=True)
        kw = _group_kw(sensitive_features)
        base = _default_imputer() if self.estimator is None else self.estimator
        self.train_imputer_ = clone(base).fit(X, **kw)
        self.test_imputer_ = clone(self._test_base()).fit(X, **kw) if self.test_fit_on == "train" else None
        return self

    def fit_transform(self, X, y=None, *, sensitive_features=None):
        """Fit on X and impute X with the *training-time* imputer.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        sensitive_features : array-like of shape (n_samples,), optional

        Returns
        -------
        X_out : ndarray
        """
        self.fit(X, y, sensitive_features=sensitive_features)
        return self.transform_train(X, sensitive_features=sensitive_features)

    def transform_train(self, X, *, sensitive_features=None):
        """Impute with the training-time imputer (no mismatch).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sensitive_features : array-like of shape (n_samples,), optional

        Returns
        -------
        X_out : ndarray
        """
        check_is_fitted(self, "train_imputer_")
        X = validate_data(self, X, ensure_all_finite="allow-nan", dtype="numeric", reset=False)
        return self.train_imputer_.transform(X, **_group_kw(sensitive_features))

    def transform(self, X, *, sensitive_features=None):
        """Impute with the test-time imputer (fitted on X itself when ``test_fit_on="test"``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sensitive_features : array-like of shape (n_samples,), optional

        Returns
        -------
        X_out : ndarray
        """
        check_is_fitted(self, "train_imputer_")
        X = validate_data(self, X, ensure_all_finite="allow-nan", dtype="numeric", reset=False)
        kw = _group_kw(sensitive_features)
        if self.test_fit_on == "train":
            return self.test_imputer_.transform(X, **kw)
        logger.debug("MismatchImputer: refitting the test-time imputer on %d rows", X.shape[0])
        return clone(self._test_base()).fit(X, **kw).transform(X, **kw)


def _group_kw(sensitive_features) -> dict:
    return {} if sensitive_features is None else {"sensitive_features": sensitive_features}


def requires_groups(imputer) -> bool:
    """Whether ``imputer.fit``/``transform`` need ``sensitive_features`` (a per-group imputer, possibly
    inside a :class:`MismatchImputer`)."""
    if isinstance(imputer, GroupImputer):
        return True
    if isinstance(imputer, MismatchImputer):
        return any(isinstance(e, GroupImputer) for e in (imputer.estimator, imputer.test_estimator))
    return False


# --------------------------------------------------------------------------- + mask
class MaskAugmentedImputer(_NaNTagsMixin, TransformerMixin, BaseEstimator):
    """Any imputer followed by missingness indicators ("+ mask", paper 001 §2.3).

    Indicator columns are those with at least one missing value at fit time (columns that never
    miss are dropped, as in the authors' code). For scikit-learn imputers prefer their own
    ``add_indicator=True``; this wrapper is for imputers without it.

    Parameters
    ----------
    estimator : transformer, default=None
        ``None`` means mean imputation.

    Attributes
    ----------
    imputer_ : fitted transformer
    indicator_ : MissingIndicator

    Examples
    --------
    >>> import numpy as np
    >>> MaskAugmentedImputer().fit_transform(np.array([[1.0, 0.0], [np.nan, 1.0]])).tolist()
    [[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    """

    def __init__(self, *, estimator=None):
        self.estimator = estimator

    def fit(self, X, y=None):
        """Fit the imputer and the indicator on X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        X = validate_data(self, X, ensure_all_finite="allow-nan", dtype="numeric", reset=True)
        base = _default_imputer() if self.estimator is None else self.estimator
        self.imputer_ = clone(base).fit(X)
        self.indicator_ = MissingIndicator(features="missing-only").fit(X)
        return self

    def transform(self, X):
        """Impute X and append the indicators.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_out : ndarray of shape (n_samples, n_features + n_indicators)
        """
        check_is_fitted(self, "imputer_")
        X = validate_data(self, X, ensure_all_finite="allow-nan", dtype="numeric", reset=False)
        return np.hstack([np.asarray(self.imputer_.transform(X), dtype=float),
                          self.indicator_.transform(X).astype(float)])
