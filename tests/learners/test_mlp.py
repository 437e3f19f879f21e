"""The ``mlp`` learner kind: a params entry gives scikit-learn's MLPClassifier on standardised inputs, with the
spec's settings and the cell's seed; predictions identical to that pipeline fitted directly."""
import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from fairmiss.learners.build import make_learner
from fairmiss.learners.specs import LearnerSpec


def _data():
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.normal(size=300) * 1000, rng.integers(0, 2, 300), rng.normal(size=300)])
    y = (X[:, 0] / 1000 + X[:, 1] - X[:, 2] + rng.normal(size=300) > 0.5).astype(int)
    return X, y, rng.integers(0, 2, 300)


def test_mlp_equals_scaled_mlpclassifier():
    X, y, s = _data()
    spec = TypeAdapter(LearnerSpec).validate_python(
        {"kind": "mlp", "hidden_layer_sizes": [8, 4], "activation": "tanh", "max_iter": 300})
    learner = make_learner(spec, seed=11).fit(X, y, s)
    sc = StandardScaler().fit(X)
    ref = MLPClassifier(hidden_layer_sizes=(8, 4), activation="tanh", max_iter=300, random_state=11)
    ref.fit(sc.transform(X), y)
    np.testing.assert_array_equal(learner.predict(X, s), ref.predict(sc.transform(X)))
    np.testing.assert_allclose(learner.score(X, s), ref.predict_proba(sc.transform(X))[:, 1])
    # the scaler matters: the raw column in the thousands would dominate an unscaled network
    raw = MLPClassifier(hidden_layer_sizes=(8, 4), activation="tanh", max_iter=300, random_state=11).fit(X, y)
    assert not np.allclose(raw.predict_proba(X)[:, 1], learner.score(X, s))


def test_mlp_default_is_the_suites_two_layers():
    spec = TypeAdapter(LearnerSpec).validate_python({"kind": "mlp"})
    est = make_learner(spec, seed=0).estimator
    mlp = est.steps[-1][1]
    assert mlp.hidden_layer_sizes == (100, 100) and mlp.max_iter == 1000


@pytest.mark.parametrize("bad, key", [({"hidden_layer_sizes": []}, "hidden_layer_sizes"),
                                      ({"hidden_layer_sizes": [0]}, "hidden_layer_sizes"),
                                      ({"solver": "newton"}, "solver"), ({"alpha": -1}, "alpha")])
def test_mlp_rejects_bad_settings(bad, key):
    with pytest.raises(ValidationError, match=key):
        TypeAdapter(LearnerSpec).validate_python({"kind": "mlp", **bad})
