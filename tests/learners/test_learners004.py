"""Paper 004's baselines as configurable learners (budro_project, reweigh) and BuDRO's metric knobs."""

import numpy as np
import pandas as pd
import pytest
from pydantic import TypeAdapter, ValidationError

from fairmiss.config import load_study_config
from fairmiss.learners.specs import LearnerSpec
from fairmiss.learners.build import make_learner
from fairmiss.learners.budro.boosting import ProjectClassifier, ReweighingClassifier

SPEC = TypeAdapter(LearnerSpec)


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "sex": rng.integers(0, 2, n).astype(float),
                      "race": rng.integers(0, 2, n).astype(float)})
    y = (X["a"] + 0.5 * X["sex"] + 0.3 * rng.normal(size=n) > 0.2).astype(int).to_numpy()
    return X, y


def test_project_learner_equals_the_estimator_called_directly():
    X, y = _data()
    spec = SPEC.validate_python({"kind": "budro_project", "name": "Project", "protected": ["race", "sex"],
                                 "n_estimators": 20, "learning_rate": 0.3, "max_depth": 3})
    ln = make_learner(spec, seed=3, feature_names=list(X.columns))
    ln.fit(X.to_numpy(), y, None)
    direct = ProjectClassifier(n_estimators=20, learning_rate=0.3, max_depth=3, min_child_weight=1 / 80,
                               reg_lambda=1.0, random_state=3).fit(X.to_numpy(), y, protected_columns=[3, 2])
    np.testing.assert_array_equal(ln.estimator.predict_proba(X.to_numpy()), direct.predict_proba(X.to_numpy()))


def test_reweigh_learner_weights_come_from_the_protected_columns():
    X, y = _data()
    spec = SPEC.validate_python({"kind": "reweigh", "name": "Reweigh", "protected": ["sex"], "n_estimators": 10})
    ln = make_learner(spec, seed=1, feature_names=list(X.columns))
    ln.fit(X.to_numpy(), y, None)
    direct = ReweighingClassifier(n_estimators=10, learning_rate=0.005, max_depth=4, min_child_weight=1 / 80,
                                  reg_lambda=1.0, random_state=1).fit(X.to_numpy(), y,
                                                                      sensitive_features=X[["sex"]].to_numpy())
    np.testing.assert_array_equal(ln.estimator.est_.sample_weight_, direct.sample_weight_)
    np.testing.assert_array_equal(ln.estimator.predict(X.to_numpy()), direct.predict(X.to_numpy()))


@pytest.mark.parametrize("knob,expected", [({"metric_C": 0.25}, 0.25), ({"metric_l2": 0.2}, 1 / (0.2 * 300)),
                                           ({}, 10.0)])
def test_budro_fair_metric_regularisation_from_config(knob, expected):
    X, y = _data()
    spec = SPEC.validate_python({"kind": "budro", "name": "BuDRO", "protected": ["sex"], "n_estimators": 3,
                                 "ot_method": "dual", **knob})
    ln = make_learner(spec, seed=0, feature_names=list(X.columns))
    ln.fit(X.to_numpy(), y, None)
    assert ln.estimator.est_.fair_metric_.logistic_C == pytest.approx(expected)


def test_bad_specs_are_clear_errors():
    with pytest.raises(ValidationError, match="at most one of metric_C and metric_l2"):
        SPEC.validate_python({"kind": "budro", "protected": ["sex"], "metric_C": 1.0, "metric_l2": 0.2})
    spec = SPEC.validate_python({"kind": "reweigh", "protected": ["gender"]})
    with pytest.raises(ValueError, match=r"protected column\(s\) \['gender'\] are not features"):
        make_learner(spec, seed=0, feature_names=["a", "sex"])


def test_study_configs_carry_project_and_reweigh_with_references():
    compas = load_study_config("params/studies/004_table9_compas.yaml")
    names = [ln.name for ln in compas.learners]
    assert names == ["BuDRO", "Baseline", "Project", "Reweigh"]
    assert set(compas.references.values) == set(names)
    german = load_study_config("params/studies/004_table5_german.yaml")
    assert "Project" in [ln.name for ln in german.learners] and "Reweigh" not in [ln.name for ln in german.learners]
