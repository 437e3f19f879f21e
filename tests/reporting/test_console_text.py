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


def test_one_split_shows_the_cells_bootstrap_interval():
    """With one split the accuracy and the fairness metric show the cell's 95 % bootstrap interval (the numbers
    of its ``<metric>_ci_low/high``), balanced accuracy (no interval recorded) says "(1 split)"."""
    from types import SimpleNamespace

    from fairmiss.pipeline.summary import INTERVAL_NOTE, one_split_intervals

    cell = SimpleNamespace(status="ok", missingness="none", method="mean+logreg",
                           metrics={"accuracy": 0.672, "accuracy_ci_low": 0.6312, "accuracy_ci_high": 0.7049,
                                    "fnr_difference": 0.05, "fnr_difference_ci_low": -0.0101,
                                    "fnr_difference_ci_high": 0.1236})
    two = [SimpleNamespace(**{**vars(cell), "missingness": "mcar"}) for _ in range(2)]
    intervals = one_split_intervals([cell, *two])
    assert intervals == {("none", "mean+logreg"): {"accuracy": (0.6312, 0.7049), "fnr_difference": (-0.0101, 0.1236)}}
    one = {"n_splits": 1, "accuracy_mean": 0.672, "accuracy_se": None, "balanced_accuracy_mean": 0.55,
           "balanced_accuracy_se": None, "fnr_difference_mean": 0.05, "fnr_difference_se": None}
    text = format_table({"none": {"mean+logreg": one}}, "fnr_difference", intervals)
    assert "0.672 [0.631, 0.705]" in text and "0.050 [-0.010, 0.124]" in text and "0.550 (1 split)" in text, text
    assert text.endswith(INTERVAL_NOTE) and "±" not in text
    # several splits: the table is the one without intervals, byte for byte (committed summary.txt files keep)
    many = {"mcar": {"mean+logreg": {**one, "n_splits": 2, "accuracy_se": 0.01, "balanced_accuracy_se": 0.01,
                                     "fnr_difference_se": 0.02}}}
    assert format_table(many, "fnr_difference", one_split_intervals(two)) == format_table(many, "fnr_difference")


def test_the_table_names_the_groups_between_which_the_gap_lies():
    """Per missingness and method: the rate behind the fairness metric, its worst and best group by name, in the
    most common pair over splits; groups left out by min_group_size are not candidates; printed under each
    missingness's rows in the table's order."""
    from types import SimpleNamespace

    from fairmiss.pipeline.summary import gap_groups

    def cell(method, fnr, fpr=None, tpr=None, left=()):
        m = {f"fnr_group_{g}": v for g, v in enumerate(fnr)}
        m.update({f"fpr_group_{g}": v for g, v in enumerate(fpr or [])})
        m.update({f"tpr_group_{g}": v for g, v in enumerate(tpr or [])})
        m.update({f"left_out_group_{g}": 1.0 for g in left})
        return SimpleNamespace(status="ok", missingness="mcar", method=method, metrics=m)

    names = {"0": "Black · Female", "1": "Black · Male", "2": "White · Female"}
    res = [cell("a", [0.2, 0.5, 0.1]), cell("a", [0.2, 0.5, 0.1]), cell("a", [0.6, 0.5, 0.1]),
           cell("b", [0.2, 0.5, 0.9], left=[2])]
    between = gap_groups(res, "fnr_difference", names)
    assert between == {
        ("mcar", "a"): "fnr worst (highest) for 'Black · Male', lowest for 'White · Female' (2 of 3 splits)",
        ("mcar", "b"): "fnr worst (highest) for 'Black · Male', lowest for 'Black · Female' (1 of 1 split)"}
    row = {"n_splits": 3, "accuracy_mean": 0.7, "accuracy_se": 0.01, "balanced_accuracy_mean": 0.6,
           "balanced_accuracy_se": 0.01, "fnr_difference_se": 0.01}
    text = format_table({"mcar": {"a": {**row, "fnr_difference_mean": 0.3}, "b": {**row, "fnr_difference_mean": 0.1}}},
                        "fnr_difference", between=between)
    assert text.splitlines()[-3:] == ["  fnr_difference between:",
                                      f"    b: {between[('mcar', 'b')]}", f"    a: {between[('mcar', 'a')]}"], text
    # equalized odds: the rate whose difference is larger in the cell (here TPR: 0.7 against FPR's 0.1)
    eo = gap_groups([cell("a", [0.3, 0.3, 0.3], fpr=[0.1, 0.2, 0.15], tpr=[0.9, 0.2, 0.5])],
                    "equalized_odds_difference", names)
    assert eo[("mcar", "a")] == "tpr worst (lowest) for 'Black · Male', highest for 'Black · Female' (1 of 1 split)"
    # undefined rates (a NaN group) name nobody; the table then has no such lines
    assert gap_groups([cell("a", [0.2, float("nan"), 0.1])], "fnr_difference", names) == {}
