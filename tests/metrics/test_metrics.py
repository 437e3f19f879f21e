import numpy as np
import pytest

from fairmiss.metrics import evaluate, group_confusion_matrices


def test_metrics_by_hand():
    y = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    p = np.array([1, 0, 0, 1, 1, 1, 0, 0])
    g = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    m = evaluate(y, p, g, y_score=p.astype(float))
    assert m["fnr_group_0"] == 0.5 and m["fnr_group_1"] == 0.0 and m["fnr_difference"] == 0.5
    assert m["fpr_group_0"] == 0.5 and m["fpr_group_1"] == 0.0
    assert m["equalized_odds_difference"] == 0.5 and m["equalized_odds_sum"] == 1.0
    assert m["accuracy"] == 0.75 and m["accuracy_group_1"] == 1.0
    assert m["selection_rate_group_0"] == 0.5 and m["demographic_parity_difference"] == 0.0
    # 002's convention: shares of all group members
    assert m["fn_share_group_0"] == 0.25 and m["fp_share_group_0"] == 0.25
    assert group_confusion_matrices(y, p, g)["0"] == [[1, 1], [1, 1]]


def test_three_groups_max_gap():
    y = np.array([1, 1, 1, 1, 1, 1])
    p = np.array([1, 1, 1, 0, 0, 0])
    g = np.array([0, 0, 1, 1, 2, 2])
    m = evaluate(y, p, g)
    assert m["tpr_difference"] == 1.0 and m["tpr_group_1"] == 0.5


def test_single_class_group_gives_nan_not_crash():
    y = np.array([1, 1, 0, 1])
    p = np.array([1, 0, 0, 1])
    g = np.array([0, 0, 1, 1])
    m = evaluate(y, p, g, y_score=p.astype(float))
    assert np.isnan(m["auc_group_0"])
    assert m["fnr_group_0"] == pytest.approx(0.5)
