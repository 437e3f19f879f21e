"""Which imputers one split's learners share is declared by each imputer kind (``shareable=True`` when it
registers), not listed by the cache: a kind that does not declare it is fitted once per cell."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairmiss.impute.build import IMPUTER_KINDS
from fairmiss.pipeline.impute_cache import ImputationCache, shareable


@pytest.fixture
def restore_imputer_kinds():
    before = dict(IMPUTER_KINDS._entries)
    yield
    IMPUTER_KINDS._entries.clear()
    IMPUTER_KINDS._entries.update(before)


def test_built_in_kinds_declare_what_they_share():
    assert {k for k in IMPUTER_KINDS if shareable(k)} == {"mean", "median", "most_frequent", "constant", "knn",
                                                          "iterative"}
    # random draws at transform time, a user's estimator, NaN passed on: fitted per cell
    assert not shareable("random_sample") and not shareable("estimator") and not shareable("none")
    assert not shareable("no-such-kind")


class _Spec:
    def __init__(self, kind):
        self.kind = kind

    def model_dump_json(self):
        return f'{{"kind": "{self.kind}"}}'


class _Cell:
    def __init__(self, kind):
        self.imputer = _Spec(kind)


class _Data:
    data_hash = "h"


class _Split:
    split_index, missingness = 0, "m"
    train_idx, test_idx = np.arange(20), np.arange(20, 30)
    X = pd.DataFrame({"a": np.r_[np.nan, np.arange(29.0)]})


@pytest.mark.parametrize("declared", [True, False])
def test_an_added_kind_is_shared_exactly_when_it_declares_it(restore_imputer_kinds, declared):
    IMPUTER_KINDS.register("halfway", object, lambda spec, seed: None, shareable=declared)
    cache, calls = ImputationCache(size=4), []

    def compute():
        calls.append(1)
        return object(), np.zeros((3, 2)), np.zeros((2, 2))  # the fitted imputer, imputed train and test

    for _ in range(3):  # three learners of one split
        cache.get_or_compute(_Cell("halfway"), _Data(), _Split(), 7, compute)
    assert len(calls) == (1 if declared else 3)
