"""The ``naive_bayes`` learner kind (added in one module): from a params entry to scikit-learn's
GaussianNB with the spec's smoothing, predictions identical to GaussianNB fitted directly."""
import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError
from sklearn.naive_bayes import GaussianNB

from fairmiss.learners.specs import LearnerSpec
from fairmiss.learners.build import make_learner


def test_naive_bayes_equals_gaussian_nb():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] - X[:, 2] + rng.normal(size=200) > 0).astype(int)
    s = rng.integers(0, 2, 200)
    spec = TypeAdapter(LearnerSpec).validate_python({"kind": "naive_bayes", "var_smoothing": 1e-6})
    learner = make_learner(spec, seed=0).fit(X, y, s)
    ref = GaussianNB(var_smoothing=1e-6).fit(X, y)
    np.testing.assert_array_equal(learner.predict(X, s), ref.predict(X))
    np.testing.assert_allclose(learner.score(X, s), ref.predict_proba(X)[:, 1])


def test_naive_bayes_rejects_negative_smoothing():
    with pytest.raises(ValidationError, match="var_smoothing"):
        TypeAdapter(LearnerSpec).validate_python({"kind": "naive_bayes", "var_smoothing": -1})
