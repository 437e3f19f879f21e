"""What a practitioner reads on the console: no "± 0.000" where no standard error exists, and an audited
(prefit) model that is a scikit-learn estimator, so MLflow logs it without a warning."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression

from fairmiss.learners.mlflow_model import PrefitModel
from fairmiss.pipeline.summary import format_table


def test_one_split_has_no_standard_error():
    one = {"n_splits": 1, "accuracy_mean": 0.672, "accuracy_se": None, "balanced_accuracy_mean": 0.55,
           "balanced_accuracy_se": None, "fnr_difference_mean": 0.0, "fnr_difference_se": None}
    two = {**one, "n_splits": 2, "accuracy_se": 0.0, "balanced_accuracy_se": 0.01, "fnr_difference_se": 0.0}
    text = format_table({"none": {"mean+logreg": one}, "mcar": {"mean+logreg": two}}, "fnr_difference")
    single, double = text.split("missingness: mcar")[0], text.split("missingness: mcar")[1]
    assert "±" not in single and single.count("(1 split)") == 3, single
    # two splits with identical values: a real standard error of zero is still shown as one
    assert "0.672 ± 0.000" in double and "(1 split)" not in double, double


def test_prefit_model_is_a_scikit_learn_estimator_without_warnings():
    from sklearn.base import clone
    from sklearn.utils import get_tags

    X = np.random.default_rng(0).normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    fitted = LogisticRegression().fit(X, y)
    pm = PrefitModel(fitted, ["a", "b", "c"], "models:/credit/1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tags = get_tags(pm)  # failed before: no __sklearn_tags__ (MLflow warned on every audited cell)
        twin = clone(pm)
        pm.fit(X, y)
    assert tags.estimator_type == "classifier"
    assert twin.get_params()["model_uri"] == "models:/credit/1" and twin.model is fitted
    assert np.array_equal(pm.predict(X), fitted.predict(X))
