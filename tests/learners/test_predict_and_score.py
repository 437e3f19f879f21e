"""Learner.predict_and_score: the labels and scores of predict() and score(), with a forest's trees walked once."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from fairmiss.learners.adapter import Learner


class CountingForest(RandomForestClassifier):
    """A forest that counts its probability passes (its predict is the forests' own)."""

    passes = 0

    def predict_proba(self, X):
        type(self).passes += 1
        return super().predict_proba(X)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    return X, (X[:, 0] + rng.normal(size=600) > 0).astype(int)


@pytest.mark.parametrize("est", [RandomForestClassifier(40, random_state=0), ExtraTreesClassifier(25, random_state=1),
                                 LogisticRegression(), DecisionTreeClassifier(max_depth=3)],
                         ids=["forest", "extra_trees", "logreg", "tree"])
def test_same_arrays_as_predict_and_score(est):
    X, y = _data()
    ln = Learner(est).fit(X, y, None)
    pred, score = ln.predict_and_score(X, None)
    np.testing.assert_array_equal(pred, ln.predict(X, None))
    np.testing.assert_array_equal(score, ln.score(X, None))


def test_a_forest_is_walked_once():
    X, y = _data()
    ln = Learner(CountingForest(30, random_state=0)).fit(X, y, None)
    CountingForest.passes = 0
    ln.predict_and_score(X, None)
    assert CountingForest.passes == 1
    CountingForest.passes = 0
    ln.predict(X, None), ln.score(X, None)
    assert CountingForest.passes == 2  # what the cell paid before


def test_plain_forest_only_for_a_forest_called_plainly():
    assert Learner(RandomForestClassifier()).plain_forest and Learner(ExtraTreesClassifier()).plain_forest
    assert not Learner(LogisticRegression()).plain_forest
    assert not Learner(RandomForestClassifier(), randomized_predict=True).plain_forest
    assert not Learner(RandomForestClassifier(), needs_sensitive_predict=True).plain_forest
