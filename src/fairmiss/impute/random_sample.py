"""Random-sample (hot-deck) imputation (``kind: random_sample``): each missing entry gets a value drawn
uniformly from the observed training values of its column.

Unlike the mean it keeps each column's marginal distribution (its spread and its ties), which matters for
group-conditional error rates when a group's values are missing more often. Added as the demonstration that
an imputer kind is one module (+ its test): spec, factory and registration live here.

Reproducibility: draws come from ``numpy.random.default_rng(random_state)``, restarted at every
``transform`` call and taken column by column, row order as given; the same input gives the same output.
A column with no observed training value is filled with 0.0 (as scikit-learn's imputers do with
``keep_empty_features=True``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.impute import MissingIndicator
from sklearn.utils.validation import check_is_fitted, validate_data

from fairmiss.impute.build import IMPUTER_KINDS, _FittedImputerBase

__all__ = ["RandomSampleImputer", "RandomSampleImputerSpec"]


class RandomSampleImputer(TransformerMixin, BaseEstimator):
    """Fill NaN with draws from the column's observed values seen at ``fit``."""

    def __init__(self, random_state: int = 0, add_indicator: bool = False):
        self.random_state = random_state
        self.add_indicator = add_indicator

    def fit(self, X, y=None):
        X = validate_data(self, X, dtype=float, ensure_all_finite="allow-nan")
        self.observed_ = [np.sort(X[~np.isnan(X[:, j]), j]) for j in range(X.shape[1])]
        self.indicator_ = MissingIndicator(features="all").fit(X) if self.add_indicator else None
        return self

    def transform(self, X):
        check_is_fitted(self, "observed_")
        X = validate_data(self, X, dtype=float, ensure_all_finite="allow-nan", reset=False)
        out = X.copy()
        rng = np.random.default_rng(self.random_state)
        for j, pool in enumerate(self.observed_):
            miss = np.isnan(out[:, j])
            k = int(miss.sum())
            if k == 0:
                continue
            out[miss, j] = pool[rng.integers(0, len(pool), size=k)] if len(pool) else 0.0
        if self.indicator_ is not None:
            out = np.hstack([out, self.indicator_.transform(X).astype(float)])
        return out


class RandomSampleImputerSpec(_FittedImputerBase):
    kind: Literal["random_sample"] = "random_sample"


def _random_sample(spec, seed):
    return RandomSampleImputer(random_state=seed, add_indicator=spec.add_indicator)


IMPUTER_KINDS.register("random_sample", RandomSampleImputerSpec, _random_sample)
