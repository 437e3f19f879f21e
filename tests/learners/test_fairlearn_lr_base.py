"""fairlearn's ExponentiatedGradient with the scaled logistic-regression base (``base: logistic_regression``):
the reduction passes ``sample_weight`` to its base, which a plain scikit-learn Pipeline refused."""

from __future__ import annotations

import numpy as np
from pydantic import TypeAdapter
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from fairmiss.learners.specs import LearnerSpec
from fairmiss.learners.build import make_learner
from fairmiss.learners.fairlearn_baselines import WeightedPipeline


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + s[:, None] * 0.5
    y = (X[:, 0] + 0.7 * s + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
    return X, y, s


def test_weighted_pipeline_equals_weighted_fit_on_scaled_data():
    X, y, _ = _data()
    w = np.random.default_rng(1).uniform(0.1, 3.0, len(y))
    p = WeightedPipeline([("standardscaler", StandardScaler()), ("logisticregression", LogisticRegression(max_iter=1000))])
    p.fit(X, y, sample_weight=w)
    direct = LogisticRegression(max_iter=1000).fit(StandardScaler().fit_transform(X), y, sample_weight=w)
    np.testing.assert_allclose(p[-1].coef_, direct.coef_, rtol=1e-10)
    unweighted = WeightedPipeline(p.steps).fit(X, y)
    assert not np.allclose(unweighted[-1].coef_, direct.coef_)  # the weights did reach the model


def test_exponentiated_gradient_with_logistic_base_fits_and_predicts():
    X, y, s = _data()
    spec = TypeAdapter(LearnerSpec).validate_python({"kind": "exponentiated_gradient", "base": "logistic_regression",
                                                     "constraint": "equalized_odds", "max_iter": 10})
    learner = make_learner(spec, seed=0)
    learner.fit(X, y, s)
    pred = learner.predict(X, s)
    assert pred.shape == y.shape and set(np.unique(pred)) <= {0, 1}
    assert (pred == y).mean() > 0.6
